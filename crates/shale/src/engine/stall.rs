//! Write stalls as RocksDB defines them (`ColumnFamilyData::RecalculateWriteStallConditions`,
//! `WriteController`): writes are *delayed* to `delayed_write_rate` (a token bucket, refilled
//! every millisecond) when L0 reaches `level0_slowdown_writes_trigger` or the estimated pending
//! compaction bytes reach `soft_pending_compaction_bytes_limit`, and *stopped* at
//! `level0_stop_writes_trigger`, `hard_pending_compaction_bytes_limit` or when
//! `max_write_buffer_number` memtables are waiting for flush. The condition is recomputed
//! whenever a new version or memtable list is installed; the rate adapts as RocksDB's does
//! (slower while compaction debt grows or a stop is near, faster while it shrinks).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::info_log::InfoLog;

use crate::compaction::level_targets::{compute_targets, estimate_pending_compaction_bytes, PickerConfig};
use crate::lsm::version::Version;
use crate::options::compaction::DBCompactionStyle;
use crate::options::Options;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Condition {
    Normal,
    Delayed,
    Stopped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    None,
    MemtableLimit,
    L0FileCount,
    PendingCompactionBytes,
}

/// RocksDB's constants (`column_family.cc`, `write_controller.cc`).
const MIN_WRITE_RATE: u64 = 16 * 1024;
const INC_SLOWDOWN_RATIO: f64 = 0.8;
const DEC_SLOWDOWN_RATIO: f64 = 1.0 / INC_SLOWDOWN_RATIO;
const NEAR_STOP_SLOWDOWN_RATIO: f64 = 0.6;
const DELAY_RECOVER_SLOWDOWN_RATIO: f64 = 1.4;
const MICROS_PER_REFILL: u64 = 1000;

struct Ctl {
    condition: Condition,
    cause: Cause,
    /// Current delayed write rate (bytes/s).
    rate: u64,
    credit: u64,
    next_refill: u64,
    pending_bytes: u64,
    prev_pending_bytes: u64,
}

/// Counts and times per cause (micros), for `rocksdb.stats`.
#[derive(Default)]
pub(crate) struct StallCounters {
    pub l0_slowdowns: AtomicU64,
    pub l0_stops: AtomicU64,
    pub pending_slowdowns: AtomicU64,
    pub pending_stops: AtomicU64,
    pub memtable_stops: AtomicU64,
    pub memtable_slowdowns: AtomicU64,
    pub l0_delay_micros: AtomicU64,
    pub l0_stop_micros: AtomicU64,
    pub pending_delay_micros: AtomicU64,
    pub pending_stop_micros: AtomicU64,
    pub memtable_delay_micros: AtomicU64,
    pub memtable_stop_micros: AtomicU64,
}

impl StallCounters {
    pub(crate) fn record(&self, c: Condition, cause: Cause, micros: u64) {
        let (count, time) = match (c, cause) {
            (Condition::Delayed, Cause::L0FileCount) => (&self.l0_slowdowns, &self.l0_delay_micros),
            (Condition::Stopped, Cause::L0FileCount) => (&self.l0_stops, &self.l0_stop_micros),
            (Condition::Delayed, Cause::PendingCompactionBytes) => {
                (&self.pending_slowdowns, &self.pending_delay_micros)
            }
            (Condition::Stopped, Cause::PendingCompactionBytes) => (&self.pending_stops, &self.pending_stop_micros),
            (Condition::Delayed, Cause::MemtableLimit) => (&self.memtable_slowdowns, &self.memtable_delay_micros),
            (Condition::Stopped, Cause::MemtableLimit) => (&self.memtable_stops, &self.memtable_stop_micros),
            _ => return,
        };
        count.fetch_add(1, Ordering::Relaxed);
        time.fetch_add(micros, Ordering::Relaxed);
    }
    pub(crate) fn total_micros(&self) -> u64 {
        [
            &self.l0_delay_micros,
            &self.l0_stop_micros,
            &self.pending_delay_micros,
            &self.pending_stop_micros,
            &self.memtable_delay_micros,
            &self.memtable_stop_micros,
        ]
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .sum()
    }
}

pub(crate) struct StallController {
    ctl: Mutex<Ctl>,
    epoch: Instant,
    max_rate: u64,
    pub counters: StallCounters,
    /// Where condition changes are logged (set once the DB's LOG exists).
    pub info_log: std::sync::OnceLock<std::sync::Arc<crate::info_log::InfoLog>>,
}

/// RocksDB's `GetWriteStallConditionAndCause`, plus whether the condition is near a stop.
/// A family's L0 count (sorted runs for universal) and pending compaction bytes, as RocksDB
/// weighs them: universal counts sorted runs against the L0 triggers, FIFO never stalls on them
/// (its triggers are sanitized away), and pending bytes are estimated for leveled compaction only.
fn stall_inputs(opts: &Options, v: &Version) -> (usize, u64) {
    let cfg = PickerConfig::from_options(opts);
    match opts.compaction_style {
        DBCompactionStyle::Level => (
            v.num_files(0),
            estimate_pending_compaction_bytes(v, &cfg, &compute_targets(v, &cfg)),
        ),
        DBCompactionStyle::Universal => (
            v.num_files(0) + (1..v.num_levels()).filter(|&l| v.num_files(l) > 0).count(),
            0,
        ),
        DBCompactionStyle::Fifo => (0, 0),
    }
}

pub(crate) fn stall_condition(opts: &Options, l0_files: usize, imm: usize, pending: u64) -> (Condition, Cause, bool) {
    let auto = !opts.disable_auto_compactions;
    let (soft, hard) = (
        opts.soft_pending_compaction_bytes_limit,
        opts.hard_pending_compaction_bytes_limit,
    );
    if imm >= opts.max_write_buffer_number {
        (Condition::Stopped, Cause::MemtableLimit, true)
    } else if auto && l0_files >= opts.level0_stop_writes_trigger {
        (Condition::Stopped, Cause::L0FileCount, true)
    } else if auto && hard > 0 && pending >= hard {
        (Condition::Stopped, Cause::PendingCompactionBytes, true)
    } else if opts.max_write_buffer_number > 3 && imm + 1 >= opts.max_write_buffer_number {
        (Condition::Delayed, Cause::MemtableLimit, false)
    } else if auto && l0_files >= opts.level0_slowdown_writes_trigger {
        let near = l0_files + 2 >= opts.level0_stop_writes_trigger;
        (Condition::Delayed, Cause::L0FileCount, near)
    } else if auto && soft > 0 && pending >= soft {
        let near = hard > 0 && pending - soft > 3 * (hard - soft) / 4;
        (Condition::Delayed, Cause::PendingCompactionBytes, near)
    } else {
        (Condition::Normal, Cause::None, false)
    }
}

impl StallController {
    pub(crate) fn new(opts: &Options) -> StallController {
        let max_rate = opts.effective_delayed_write_rate();
        StallController {
            ctl: Mutex::new(Ctl {
                condition: Condition::Normal,
                cause: Cause::None,
                rate: max_rate,
                credit: 0,
                next_refill: 0,
                pending_bytes: 0,
                prev_pending_bytes: 0,
            }),
            epoch: Instant::now(),
            max_rate,
            counters: StallCounters::default(),
            info_log: std::sync::OnceLock::new(),
        }
    }

    /// Recompute the condition for a newly installed version and memtable list.
    /// Recompute the condition over every column family (options, version, immutable
    /// memtables): the worst family's condition applies to all writes, as RocksDB's shared
    /// write controller does.
    pub(crate) fn recalc_all(&self, cfs: &[(&Options, &std::sync::Arc<Version>, usize)]) {
        let rank = |c: Condition| match c {
            Condition::Normal => 0,
            Condition::Delayed => 1,
            Condition::Stopped => 2,
        };
        type Worst<'a> = (&'a Options, &'a Version, usize, u64, (Condition, Cause, bool));
        let mut worst: Option<Worst<'_>> = None;
        for &(opts, v, imm) in cfs {
            let (l0, pending) = stall_inputs(opts, v);
            let c = stall_condition(opts, l0, imm, pending);
            if worst.as_ref().is_none_or(|w| rank(c.0) > rank(w.4 .0)) {
                worst = Some((opts, &**v, imm, pending, c));
            }
        }
        if let Some((opts, v, imm, pending, c)) = worst {
            self.apply(opts, v, imm, pending, c);
        }
    }

    fn apply(&self, opts: &Options, v: &Version, imm: usize, pending: u64, c: (Condition, Cause, bool)) {
        let (cond, cause, near_stop) = c;
        // As RocksDB: universal counts sorted runs against the L0 triggers, FIFO never stalls on
        // them (its triggers are sanitized away), and pending bytes are estimated for leveled
        // compaction only.
        let mut c = self.ctl.lock();
        let was_delayed = c.condition == Condition::Delayed;
        let was_stopped = c.condition == Condition::Stopped;
        match cond {
            Condition::Delayed => {
                // RocksDB's SetupDelay: adjust the rate only while already delaying.
                if opts.disable_auto_compactions || self.max_rate <= MIN_WRITE_RATE {
                } else if was_delayed || was_stopped {
                    if was_stopped || near_stop {
                        c.rate = ((c.rate as f64 * NEAR_STOP_SLOWDOWN_RATIO) as u64).max(MIN_WRITE_RATE);
                    } else if c.pending_bytes > 0 && c.pending_bytes <= pending {
                        c.rate = ((c.rate as f64 * INC_SLOWDOWN_RATIO) as u64).max(MIN_WRITE_RATE);
                    } else if c.pending_bytes > pending {
                        c.rate = ((c.rate as f64 * DEC_SLOWDOWN_RATIO) as u64).min(self.max_rate);
                    }
                } else if near_stop {
                    c.rate = ((c.rate as f64 * NEAR_STOP_SLOWDOWN_RATIO) as u64).max(MIN_WRITE_RATE);
                }
            }
            Condition::Normal if was_delayed || was_stopped => {
                c.rate = ((c.rate as f64 * DELAY_RECOVER_SLOWDOWN_RATIO) as u64).min(self.max_rate);
            }
            _ => {}
        }
        c.prev_pending_bytes = c.pending_bytes;
        c.pending_bytes = pending;
        let changed = (c.condition, c.cause) != (cond, cause);
        c.condition = cond;
        c.cause = cause;
        let rate = c.rate;
        drop(c);
        if let Some(log) = self.info_log.get().filter(|_| changed) {
            stall_changed(log, opts, (cond, cause, rate), v.num_files(0), imm, pending);
        }
    }

    pub(crate) fn state(&self) -> (Condition, Cause) {
        let c = self.ctl.lock();
        (c.condition, c.cause)
    }

    pub(crate) fn pending_compaction_bytes(&self) -> u64 {
        self.ctl.lock().pending_bytes
    }

    /// The delayed write rate in effect (0 when writes are not delayed), as RocksDB's
    /// `rocksdb.actual-delayed-write-rate`.
    pub(crate) fn actual_delayed_write_rate(&self) -> u64 {
        let c = self.ctl.lock();
        if c.condition == Condition::Delayed {
            c.rate
        } else {
            0
        }
    }

    fn now_micros(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// RocksDB's `WriteController::GetDelay`: how long a write of `bytes` must wait so that
    /// writes do not exceed the delayed write rate. Zero when not delayed.
    pub(crate) fn get_delay(&self, bytes: u64) -> Duration {
        let now = self.now_micros();
        let mut c = self.ctl.lock();
        if c.condition != Condition::Delayed {
            return Duration::ZERO;
        }
        if c.credit >= bytes {
            c.credit -= bytes;
            return Duration::ZERO;
        }
        if c.next_refill == 0 {
            c.next_refill = now;
        }
        if c.next_refill <= now {
            let elapsed = now - c.next_refill + MICROS_PER_REFILL;
            c.credit += (elapsed as f64 / 1e6 * c.rate as f64 + 0.999999) as u64;
            c.next_refill = now + MICROS_PER_REFILL;
            if c.credit >= bytes {
                c.credit -= bytes;
                return Duration::ZERO;
            }
        }
        let over = bytes - c.credit;
        let needed = (over as f64 / c.rate.max(1) as f64 * 1e6) as u64;
        c.credit = 0;
        c.next_refill += needed;
        Duration::from_micros(c.next_refill.saturating_sub(now).max(MICROS_PER_REFILL))
    }
}

/// The write controller's condition changed (RocksDB's "Stalling writes because ..." lines).
pub(crate) fn stall_changed(
    log: &InfoLog,
    opts: &Options,
    (cond, cause, rate): (Condition, Cause, u64),
    l0: usize,
    imm: usize,
    pending: u64,
) {
    let (verb, tail) = match cond {
        Condition::Normal => {
            log.info("[default] Write stall condition is normal again");
            return;
        }
        Condition::Stopped => ("Stopping", String::new()),
        Condition::Delayed => ("Stalling", format!(" rate {rate}")),
    };
    let why = match cause {
        Cause::MemtableLimit => format!(
            "we have {imm} immutable memtables (waiting for flush), max_write_buffer_number is set to {}",
            opts.max_write_buffer_number
        ),
        Cause::L0FileCount => format!("we have {l0} level-0 files"),
        Cause::PendingCompactionBytes | Cause::None => format!("of estimated pending compaction bytes {pending}"),
    };
    log.warn(&format!("[default] {verb} writes because {why}{tail}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            level0_slowdown_writes_trigger: 8,
            level0_stop_writes_trigger: 12,
            soft_pending_compaction_bytes_limit: 1000,
            hard_pending_compaction_bytes_limit: 5000,
            max_write_buffer_number: 4,
            ..Options::default()
        }
    }

    #[test]
    fn conditions_and_causes_in_rocksdb_order() {
        use Cause::*;
        use Condition::*;
        let o = opts();
        assert_eq!(stall_condition(&o, 0, 0, 0), (Normal, None, false));
        assert_eq!(stall_condition(&o, 8, 0, 0), (Delayed, L0FileCount, false));
        assert_eq!(stall_condition(&o, 10, 0, 0), (Delayed, L0FileCount, true));
        assert_eq!(stall_condition(&o, 12, 0, 0), (Stopped, L0FileCount, true));
        assert_eq!(
            stall_condition(&o, 0, 0, 1000),
            (Delayed, PendingCompactionBytes, false)
        );
        assert_eq!(stall_condition(&o, 0, 0, 4500), (Delayed, PendingCompactionBytes, true));
        assert_eq!(stall_condition(&o, 0, 0, 5000), (Stopped, PendingCompactionBytes, true));
        assert_eq!(stall_condition(&o, 0, 3, 0), (Delayed, MemtableLimit, false));
        assert_eq!(stall_condition(&o, 20, 4, 9999), (Stopped, MemtableLimit, true));
        // limits of 0 are off; no compaction-driven stall without auto compactions
        let o2 = Options {
            soft_pending_compaction_bytes_limit: 0,
            hard_pending_compaction_bytes_limit: 0,
            ..opts()
        };
        assert_eq!(stall_condition(&o2, 0, 0, u64::MAX), (Normal, None, false));
        let o3 = Options {
            disable_auto_compactions: true,
            ..opts()
        };
        assert_eq!(stall_condition(&o3, 50, 0, u64::MAX), (Normal, None, false));
    }

    #[test]
    fn token_bucket_delays_to_the_rate() {
        let o = Options {
            delayed_write_rate: 1 << 20,
            ..opts()
        };
        let s = StallController::new(&o);
        assert_eq!(s.get_delay(1 << 20), Duration::ZERO, "not delayed");
        s.ctl.lock().condition = Condition::Delayed;
        // 1 MiB/s: without sleeping, the 16th 64 KiB write must wait until about a second
        // after the first (each delay is measured from now)
        let mut total = Duration::ZERO;
        for _ in 0..16 {
            total = s.get_delay(64 << 10);
        }
        assert!(
            total >= Duration::from_millis(900) && total <= Duration::from_millis(1100),
            "{total:?}"
        );
        // small writes within the refill credit are free
        let s = StallController::new(&o);
        s.ctl.lock().condition = Condition::Delayed;
        let _ = s.get_delay(10);
        assert_eq!(s.get_delay(10), Duration::ZERO);
    }
}
