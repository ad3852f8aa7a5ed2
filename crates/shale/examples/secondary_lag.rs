//! How far a secondary instance stays behind a primary that writes at a steady rate, and what
//! a catch-up costs. A primary thread writes `--rate` puts a second (keys random in a range of
//! 10 M, `--value_size`-byte values; its flushes and compactions run as configured) while the
//! main thread has a secondary instance of the same DB catch up every `--interval_ms`. Each
//! catch-up reports its time and how far behind the secondary is right after it: in sequence
//! numbers (the primary's last one minus the secondary's) and in milliseconds (now minus the
//! moment the primary had written the secondary's last sequence number). Run it with
//!
//! `cargo run -p shale --example secondary_lag -- --rate=100000 --seconds=20 --interval_ms=100`
//!
//! (`--dir=PATH` keeps the DB there; default a temporary directory, removed at the end).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shale::{Options, DB};

fn flag(args: &[String], name: &str, default: u64) -> u64 {
    let prefix = format!("--{name}=");
    args.iter()
        .find_map(|a| a.strip_prefix(&prefix))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("--{name}: not a number: {v}")))
        .unwrap_or(default)
}

/// The p-th percentile of `v` (sorted here).
fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return 0.0;
    }
    v[((v.len() - 1) as f64 * p / 100.0).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rate = flag(&args, "rate", 100_000);
    let seconds = flag(&args, "seconds", 20);
    let interval = Duration::from_millis(flag(&args, "interval_ms", 100));
    let value_size = flag(&args, "value_size", 100) as usize;
    let wbs = flag(&args, "write_buffer_size", 8 << 20);
    let tmp = tempfile::tempdir().unwrap();
    let dir = args
        .iter()
        .find_map(|a| a.strip_prefix("--dir="))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let (pdir, sdir) = (dir.join("primary"), dir.join("secondary"));
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(wbs as usize);
    o.set_max_background_jobs(2);
    let primary = Arc::new(DB::open(&o, &pdir).unwrap());
    primary.put(b"start", b"").unwrap();
    let sec = DB::open_as_secondary(&o, &pdir, &sdir).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    // (sequence number, when the primary had written it), one a millisecond.
    let marks: Arc<Mutex<Vec<(u64, Instant)>>> = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let writer = {
        let (primary, stop, written, marks) = (primary.clone(), stop.clone(), written.clone(), marks.clone());
        std::thread::spawn(move || {
            let value = vec![b'v'; value_size];
            let mut rng = 0x9E37_79B9_7F4A_7C15u64;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
                while n < due {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    primary.put(format!("k{:08}", rng % 10_000_000), &value).unwrap();
                    n += 1;
                }
                written.store(n, Ordering::Relaxed);
                marks
                    .lock()
                    .unwrap()
                    .push((primary.latest_sequence_number(), Instant::now()));
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let (mut took, mut lag_seq, mut lag_ms) = (Vec::new(), Vec::new(), Vec::new());
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(interval);
        let t = Instant::now();
        sec.try_catch_up_with_primary().unwrap();
        let now = Instant::now();
        took.push((now - t).as_secs_f64() * 1e3);
        let seen = sec.latest_sequence_number();
        lag_seq.push(primary.latest_sequence_number().saturating_sub(seen) as f64);
        // The first moment the primary was at or past what the secondary shows.
        let m = marks.lock().unwrap();
        let i = m.partition_point(|(s, _)| *s < seen);
        let at = m.get(i).map_or(now, |(_, at)| *at);
        lag_ms.push((now.saturating_duration_since(at)).as_secs_f64() * 1e3);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    let n = written.load(Ordering::Relaxed);
    let files = primary
        .property_value("rocksdb.num-files-at-level0")
        .unwrap()
        .unwrap_or_default();
    println!(
        "primary: {n} puts in {elapsed:.1}s ({:.0}/s, target {rate}/s), {value_size}-byte values, \
         write_buffer_size {wbs}; L0 files at the end: {files}",
        n as f64 / elapsed
    );
    println!(
        "secondary: {} catch-ups, one every {} ms",
        took.len(),
        interval.as_millis()
    );
    for (what, v) in [
        ("catch-up time (ms)", &mut took),
        ("lag after a catch-up (sequence numbers)", &mut lag_seq),
        ("lag after a catch-up (ms)", &mut lag_ms),
    ] {
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        println!(
            "  {what}: mean {mean:.2}  p50 {:.2}  p99 {:.2}  max {:.2}",
            pct(v, 50.0),
            pct(v, 99.0),
            pct(v, 100.0)
        );
    }
}
