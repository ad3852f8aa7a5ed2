//! An `Env`'s background pools, shared by the databases opened with it: the low-priority pool
//! caps the compactions running at once across them, and a lowered pool runs its jobs at a
//! lowered priority (nice 19).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale::compaction_filter::{CompactionFilter, Decision};
use shale::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};
use shale::{Env, Options, WaitForCompactOptions, DB};

/// Counts the compactions running at once (a filter lives as long as its compaction) and
/// remembers the most; each key takes a little time, so compactions overlap when allowed to.
#[derive(Clone, Default)]
struct Overlap {
    active: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

struct Slow(Overlap);

impl CompactionFilter for Slow {
    fn filter(&mut self, _level: u32, _key: &[u8], _value: &[u8]) -> Decision {
        std::thread::sleep(Duration::from_micros(300));
        Decision::Keep
    }
    fn name(&self) -> &str {
        "Slow"
    }
}

impl Drop for Slow {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

impl CompactionFilterFactory for Overlap {
    type Filter = Slow;
    fn create(&mut self, _context: CompactionFilterContext) -> Slow {
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        Slow(self.clone())
    }
    fn name(&self) -> &str {
        "Overlap"
    }
}

fn options(env: Option<&Env>, overlap: &Overlap) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_max_background_jobs(2);
    o.set_write_buffer_size(64 << 10);
    o.set_level_zero_file_num_compaction_trigger(2);
    o.set_compaction_filter_factory(overlap.clone());
    if let Some(e) = env {
        o.set_env(e);
    }
    o
}

/// Two databases writing at once, each allowed one compaction at a time: sharing an `Env`,
/// never two compactions at once between them.
#[test]
fn databases_sharing_an_env_share_its_compaction_pool() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::new().unwrap();
    let overlap = Overlap::default();
    let dbs: Vec<DB> = (0..2)
        .map(|i| DB::open(&options(Some(&env), &overlap), dir.path().join(format!("db{i}"))).unwrap())
        .collect();
    std::thread::scope(|s| {
        for db in &dbs {
            s.spawn(move || {
                for i in 0..6000u32 {
                    db.put(format!("key{:05}", (i * 7919) % 6000), [b'v'; 100]).unwrap();
                }
                db.flush().unwrap();
            });
        }
    });
    for db in &dbs {
        db.wait_for_compact(&WaitForCompactOptions::default()).unwrap();
    }
    drop(dbs);
    assert!(overlap.active.load(Ordering::SeqCst) == 0);
    assert_eq!(
        overlap.most.load(Ordering::SeqCst),
        1,
        "compactions ran at once across the shared pool"
    );
}

/// The nice values of this process's threads named `name` (other tests' databases run
/// threads of the same names, at their normal priority).
fn nice_of(name: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let t = t.path();
        let comm = std::fs::read_to_string(t.join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(t.join("stat")) else {
            continue;
        };
        // After the command (which ends with ')'): state is field 3, nice is field 19.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        out.push(after.split(' ').nth(16).unwrap().parse().unwrap());
    }
    out
}

/// With the low pool's CPU priority lowered, the compaction threads run at nice 19 and the
/// flush thread keeps its priority.
#[cfg(target_os = "linux")]
#[test]
fn a_lowered_pool_runs_at_nice_19() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::new().unwrap();
    env.lower_thread_pool_cpu_priority();
    let db = DB::open(&options(Some(&env), &Overlap::default()), dir.path()).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while !nice_of("shale-bg-1").contains(&19) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(nice_of("shale-bg-1").contains(&19), "{:?}", nice_of("shale-bg-1"));
    assert!(!nice_of("shale-bg-0").contains(&19), "a flush thread was lowered");
    // Flushes and compactions still run, on their own threads.
    for i in 0..3000u32 {
        db.put(format!("key{i:05}"), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get("key01234").unwrap().unwrap(), vec![b'v'; 100]);
}
