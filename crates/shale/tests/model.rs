//! Randomized model tests: Shale against a `BTreeMap`, across flushes, compactions, reopens and
//! simulated power loss, with snapshots and iterators in both directions with bounds.
#![allow(clippy::field_reassign_with_default)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale::{MemFs, Options, ReadOptions, WriteBatch, WriteOptions, DB};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn small_opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing = true;
    o.env = Arc::new(fs.clone());
    o.write_buffer_size = 8 << 10;
    o.block_size = 256;
    o.target_file_size_base = 16 << 10;
    o.max_bytes_for_level_base = 64 << 10;
    o.level0_file_num_compaction_trigger = 2;
    o
}

fn range_scan(m: &Model, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter()
        .filter(|(k, _)| lo.map(|l| k.as_slice() >= l).unwrap_or(true) && hi.map(|h| k.as_slice() < h).unwrap_or(true))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn check_full(db: &DB, m: &Model, rng: &mut Rng, ro: &ReadOptions) {
    // point reads
    for _ in 0..50 {
        let k = key(rng.below(400));
        assert_eq!(
            db.get_opt(&k, ro).unwrap(),
            m.get(&k).cloned(),
            "get {:?}",
            String::from_utf8_lossy(&k)
        );
    }
    // multi_get
    let keys: Vec<Vec<u8>> = (0..20).map(|_| key(rng.below(400))).collect();
    let got = db.multi_get_opt(&keys, ro);
    for (k, g) in keys.iter().zip(got) {
        assert_eq!(g.unwrap(), m.get(k).cloned());
    }
    // iterators with random bounds, both directions
    let mut ro2 = ro.clone();
    let lo = if rng.below(2) == 0 {
        Some(key(rng.below(400)))
    } else {
        None
    };
    let hi = if rng.below(2) == 0 {
        Some(key(rng.below(400)))
    } else {
        None
    };
    ro2.iterate_lower_bound = lo.clone();
    ro2.iterate_upper_bound = hi.clone();
    let expect = range_scan(m, lo.as_deref(), hi.as_deref());
    let mut it = db.raw_iterator_opt(ro2.clone());
    it.seek_to_first();
    let mut fwd = Vec::new();
    while it.valid() {
        fwd.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert_eq!(fwd, expect, "forward scan lo={lo:?} hi={hi:?}");
    it.seek_to_last();
    let mut rev = Vec::new();
    while it.valid() {
        rev.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.prev();
    }
    rev.reverse();
    assert_eq!(rev, expect, "reverse scan");
    // seek / seek_for_prev then mixed next/prev
    for _ in 0..5 {
        let t = key(rng.below(400));
        it.seek(&t);
        let exp = expect.iter().position(|(k, _)| k >= &t);
        match exp {
            Some(i) => {
                assert_eq!(it.key().unwrap(), expect[i].0.as_slice());
                // a few random steps
                let mut pos = i as i64;
                for _ in 0..6 {
                    if rng.below(2) == 0 {
                        it.next();
                        pos += 1;
                    } else {
                        it.prev();
                        pos -= 1;
                    }
                    if pos < 0 || pos >= expect.len() as i64 {
                        assert!(!it.valid());
                        break;
                    }
                    assert_eq!(it.key().unwrap(), expect[pos as usize].0.as_slice(), "step");
                }
            }
            None => assert!(!it.valid()),
        }
        it.seek_for_prev(&t);
        let exp = expect.iter().rposition(|(k, _)| k <= &t);
        match exp {
            Some(i) => assert_eq!(it.key().unwrap(), expect[i].0.as_slice(), "seek_for_prev"),
            None => assert!(!it.valid()),
        }
    }
}

fn random_write(db: &DB, m: &mut Model, rng: &mut Rng, wo: &WriteOptions) {
    match rng.below(10) {
        0..=4 => {
            let k = key(rng.below(400));
            let v = format!("v{}-{}", rng.next() % 100000, "x".repeat(rng.below(60) as usize)).into_bytes();
            db.put_opt(&k, &v, wo).unwrap();
            m.insert(k, v);
        }
        5 | 6 => {
            let k = key(rng.below(400));
            db.delete_opt(&k, wo).unwrap();
            m.remove(&k);
        }
        _ => {
            let mut b = WriteBatch::new();
            for _ in 0..rng.below(8) + 1 {
                let k = key(rng.below(400));
                if rng.below(3) == 0 {
                    b.delete(&k);
                    m.remove(&k);
                } else {
                    let v = format!("b{}", rng.next() % 1000).into_bytes();
                    b.put(&k, &v);
                    m.insert(k, v);
                }
            }
            db.write_opt(b, wo).unwrap();
        }
    }
}

#[test]
fn model_with_flush_compaction_reopen_and_snapshots() {
    for seed in 1..=3u64 {
        let fs = MemFs::new();
        let path = Path::new("/db");
        let opts = small_opts(&fs);
        let mut db = DB::open(&opts, path).unwrap();
        let mut m = Model::new();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let wo = WriteOptions::default();
        let mut snaps: Vec<(shale::Snapshot, Model)> = Vec::new();
        for step in 0..3000 {
            random_write(&db, &mut m, &mut rng, &wo);
            match rng.below(100) {
                0 => db.flush().unwrap(),
                1 => db.compact_range(None, None).unwrap(),
                2 if snaps.len() < 4 => snaps.push((db.snapshot(), m.clone())),
                3 if !snaps.is_empty() => {
                    snaps.remove(0);
                }
                4 => {
                    snaps.clear();
                    drop(db);
                    db = DB::open(&opts, path).unwrap();
                }
                _ => {}
            }
            if step % 250 == 0 {
                check_full(&db, &m, &mut rng, &ReadOptions::default());
                for (s, sm) in &snaps {
                    let mut ro = ReadOptions::default();
                    ro.set_snapshot(s);
                    check_full(&db, sm, &mut rng, &ro);
                }
            }
        }
        db.wait_for_compact().unwrap();
        check_full(&db, &m, &mut rng, &ReadOptions::default());
        drop(snaps);
        drop(db);
        let db = DB::open(&opts, path).unwrap();
        check_full(&db, &m, &mut rng, &ReadOptions::default());
    }
}

/// After power loss every synced write survives and the recovered state is a prefix of the
/// history (no holes).
#[test]
fn power_loss_keeps_synced_writes_and_a_prefix() {
    for seed in 1..=4u64 {
        let fs = MemFs::new();
        let path = Path::new("/db");
        let opts = small_opts(&fs);
        let mut rng = Rng(seed * 7919 + 1);
        let mut durable = Model::new();
        for _round in 0..6 {
            let db = DB::open(&opts, path).unwrap();
            // the recovered state is the durable state
            let mut m = durable.clone();
            let mut states = vec![m.clone()];
            let mut last_synced = 0;
            for _ in 0..150 {
                let sync = rng.below(8) == 0;
                let wo = WriteOptions {
                    sync,
                    disable_wal: false,
                };
                random_write(&db, &mut m, &mut rng, &wo);
                states.push(m.clone());
                if sync {
                    last_synced = states.len() - 1;
                }
                if rng.below(60) == 0 {
                    db.flush().unwrap();
                    last_synced = states.len() - 1;
                }
            }
            // The DB goes away (background work may finish first, as before a real crash), then
            // the power fails: unsynced bytes and directory entries are lost.
            drop(db);
            fs.power_loss();
            let db = DB::open(&opts, path).unwrap();
            let got: Model = db
                .iterator(shale::IteratorMode::Start)
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.to_vec(), v.to_vec())
                })
                .collect();
            let idx = states.iter().rposition(|s| *s == got);
            match idx {
                Some(i) => assert!(
                    i >= last_synced,
                    "seed {seed}: recovered prefix {i} < last synced {last_synced}"
                ),
                None => panic!("seed {seed}: recovered state is not a prefix of the history"),
            }
            durable = got;
            drop(db);
        }
    }
}
