//! db_bench's per-thread `Stats`: operation counts, bytes, latency histograms, the progress
//! report and the one-line result (`Stats::Report`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::OnceLock;
use std::time::Instant;

use crate::histogram::Histogram;

/// Microseconds since an arbitrary process-wide origin (db_bench's `NowMicros`).
pub fn now_micros() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_micros() as u64
}

/// db_bench's `OperationType` (only the kinds `shale bench` produces), in its enum order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpType {
    Read,
    Write,
    Delete,
    Seek,
    Merge,
    Crc,
    Hash,
}

impl OpType {
    pub fn name(self) -> &'static str {
        match self {
            OpType::Read => "read",
            OpType::Write => "write",
            OpType::Delete => "delete",
            OpType::Seek => "seek",
            OpType::Merge => "merge",
            OpType::Crc => "crc",
            OpType::Hash => "hash",
        }
    }
}

/// What a `Stats` reports on (set once per run from the flags).
#[derive(Debug, Clone, Copy, Default)]
pub struct StatsConfig {
    pub histogram: bool,
    pub progress: bool,
}

#[derive(Debug, Clone)]
pub struct Stats {
    cfg: StatsConfig,
    id: i32,
    start: u64,
    finish: u64,
    seconds: f64,
    done: u64,
    next_report: u64,
    bytes: u64,
    last_op_finish: u64,
    last_progress_print: u64,
    hist: BTreeMap<OpType, Histogram>,
    message: String,
    exclude_from_merge: bool,
}

fn append_with_space(s: &mut String, msg: &str) {
    if msg.is_empty() {
        return;
    }
    if !s.is_empty() {
        s.push(' ');
    }
    s.push_str(msg);
}

impl Stats {
    pub fn new(cfg: StatsConfig) -> Stats {
        let mut s = Stats {
            cfg,
            id: -1,
            start: 0,
            finish: 0,
            seconds: 0.0,
            done: 0,
            next_report: 100,
            bytes: 0,
            last_op_finish: 0,
            last_progress_print: 0,
            hist: BTreeMap::new(),
            message: String::new(),
            exclude_from_merge: false,
        };
        s.start(-1);
        s
    }

    pub fn start(&mut self, id: i32) {
        self.id = id;
        self.next_report = 100;
        self.hist.clear();
        self.done = 0;
        self.bytes = 0;
        self.seconds = 0.0;
        self.start = now_micros();
        self.last_op_finish = self.start;
        self.finish = self.start;
        self.message.clear();
        self.exclude_from_merge = false;
    }

    pub fn merge(&mut self, other: &Stats) {
        if other.exclude_from_merge {
            return;
        }
        for (t, h) in &other.hist {
            self.hist.entry(*t).or_default().merge(h);
        }
        self.done += other.done;
        self.bytes += other.bytes;
        self.seconds += other.seconds;
        self.start = self.start.min(other.start);
        self.finish = self.finish.max(other.finish);
        if self.message.is_empty() {
            self.message = other.message.clone();
        }
    }

    pub fn stop(&mut self) {
        self.finish = now_micros();
        self.seconds = (self.finish - self.start) as f64 * 1e-6;
    }

    pub fn add_message(&mut self, msg: &str) {
        append_with_space(&mut self.message, msg);
    }

    pub fn set_exclude_from_merge(&mut self) {
        self.exclude_from_merge = true;
    }

    pub fn add_bytes(&mut self, n: u64) {
        self.bytes += n;
    }

    #[cfg(test)]
    pub fn done(&self) -> u64 {
        self.done
    }

    pub fn finished_ops(&mut self, num_ops: u64, op: OpType) {
        if self.cfg.histogram {
            let now = now_micros();
            let micros = now.saturating_sub(self.last_op_finish);
            self.hist.entry(op).or_default().add(micros);
            self.last_op_finish = now;
        }
        self.done += num_ops;
        if self.done >= self.next_report && self.cfg.progress {
            self.next_report += match self.next_report {
                0..=999 => 100,
                1000..=4999 => 500,
                5000..=9999 => 1000,
                10000..=49999 => 5000,
                50000..=99999 => 10000,
                100000..=499999 => 50000,
                _ => 100000,
            };
            // db_bench's report, throttled to one line per 100 ms.
            let now = now_micros();
            if now.saturating_sub(self.last_progress_print) >= 100_000 {
                self.last_progress_print = now;
                let mut e = std::io::stderr().lock();
                let _ = write!(e, "... finished {} ops{:30}\r", self.done, "");
                let _ = e.flush();
            }
        }
    }

    /// db_bench's `Stats::Report` text: the result line, then histograms with `--histogram`.
    pub fn report(&mut self, name: &str) -> String {
        if self.done < 1 {
            self.done = 1;
        }
        let mut extra = String::new();
        let elapsed = (self.finish - self.start) as f64 * 1e-6;
        if self.bytes > 0 {
            extra = format!("{:6.1} MB/s", (self.bytes as f64 / 1_048_576.0) / elapsed);
        }
        append_with_space(&mut extra, &self.message);
        let throughput = self.done as f64 / elapsed;
        let mut out = format!(
            "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}\n",
            name,
            self.seconds * 1e6 / self.done as f64,
            throughput as i64,
            elapsed,
            self.done,
            if extra.is_empty() { "" } else { " " },
            extra
        );
        if self.cfg.histogram {
            for (t, h) in &self.hist {
                out.push_str(&format!("Microseconds per {}:\n{}\n", t.name(), h.to_rocksdb_string()));
            }
        }
        out
    }

    #[cfg(test)]
    pub fn set_for_test(&mut self, start: u64, finish: u64, done: u64, bytes: u64) {
        self.start = start;
        self.finish = finish;
        self.seconds = (finish - start) as f64 * 1e-6;
        self.done = done;
        self.bytes = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_format_matches_db_bench() {
        let mut s = Stats::new(StatsConfig::default());
        s.set_for_test(0, 8_262_000, 1_000_000, 116_000_000);
        assert_eq!(
            s.report("fillrandom"),
            "fillrandom   :       8.262 micros/op 121036 ops/sec 8.262 seconds 1000000 operations;   13.4 MB/s\n"
        );
        let mut s = Stats::new(StatsConfig::default());
        s.set_for_test(0, 2_000_000, 1000, 0);
        s.add_message("(10 of 1000 found)\n");
        assert_eq!(
            s.report("readrandom"),
            "readrandom   :    2000.000 micros/op 500 ops/sec 2.000 seconds 1000 operations; (10 of 1000 found)\n\n"
        );
    }

    #[test]
    fn merge_sums_and_spans() {
        let mut a = Stats::new(StatsConfig::default());
        a.set_for_test(10, 1_000_010, 100, 1000);
        let mut b = Stats::new(StatsConfig::default());
        b.set_for_test(5, 2_000_005, 300, 3000);
        let mut w = Stats::new(StatsConfig::default());
        w.set_for_test(0, 9_000_000, 7, 7);
        w.set_exclude_from_merge();
        let mut m = Stats::new(StatsConfig::default());
        m.set_for_test(3_000_000, 3_000_000, 0, 0);
        m.merge(&a);
        m.merge(&b);
        m.merge(&w);
        assert_eq!(m.done(), 400);
        let r = m.report("x");
        // elapsed = 3.0 - 0.000005 s, summed thread seconds = 3.0 s
        assert!(
            r.starts_with("x            :    7500.000 micros/op 133 ops/sec 3.000 seconds 400 operations;"),
            "{r}"
        );
    }
}
