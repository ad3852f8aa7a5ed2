//! Model test of ingests of external SST files, checkpoints, `delete_file_in_range`,
//! snapshots, flushes, compactions and reopens interleaved with writes, against a `BTreeMap`.
//! An ingested file's entries are newer than everything already in the DB; a snapshot taken
//! before an ingest does not see it; a checkpoint opens as the model was when it was taken.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale::checkpoint::Checkpoint;
use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{IteratorMode, Options, ReadOptions, SstFileWriter, DB};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

fn opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_write_buffer_size(16 << 10);
    o.set_target_file_size_base(32 << 10);
    o.set_max_bytes_for_level_base(128 << 10);
    o.set_level_zero_file_num_compaction_trigger(2);
    o
}

fn dump(db: &DB, ro: ReadOptions) -> Model {
    db.iterator_opt(IteratorMode::Start, ro)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn run(seed: u64) {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let o = opts(&fs);
    let mut db = DB::open(&o, "/db").unwrap();
    let mut rng = Rng(seed | 1);
    let mut model = Model::new();
    let mut snaps: Vec<(shale::Snapshot, Model)> = Vec::new();
    let mut files = 0u64;
    let mut checkpoints: Vec<(String, Model)> = Vec::new();
    let mut ingests = 0;
    for step in 0..600u64 {
        match rng.below(100) {
            0..=49 => {
                let k = key(rng.below(300));
                let v = format!("w{step}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            50..=59 => {
                let k = key(rng.below(300));
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            60..=71 => {
                // An external file of sorted puts and deletes over a random key range.
                let lo = rng.below(280);
                let n = 1 + rng.below(20);
                let path = format!("/ext/{files}.sst");
                files += 1;
                let mut w = SstFileWriter::create(&o);
                w.open(&path).unwrap();
                let mut changes = Vec::new();
                for i in lo..lo + n {
                    if rng.below(3) == 0 {
                        continue;
                    }
                    let k = key(i);
                    if rng.below(4) == 0 {
                        w.delete(&k).unwrap();
                        changes.push((k, None));
                    } else {
                        let v = format!("x{step}.{i}").into_bytes();
                        w.put(&k, &v).unwrap();
                        changes.push((k, Some(v)));
                    }
                }
                if changes.is_empty() {
                    continue;
                }
                w.finish().unwrap();
                db.ingest_external_file(vec![path]).unwrap();
                ingests += 1;
                for (k, v) in changes {
                    match v {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                }
            }
            72..=75 => {
                let dir = format!("/ck{step}");
                Checkpoint::new(&db).unwrap().create_checkpoint(&dir).unwrap();
                checkpoints.push((dir, model.clone()));
            }
            76..=79 => {
                if snaps.len() < 3 {
                    snaps.push((db.snapshot(), model.clone()));
                } else {
                    snaps.remove(rng.below(3) as usize);
                }
            }
            80..=85 => db.flush().unwrap(),
            86..=89 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            90..=93 => {
                // Whole files inside a range are dropped without rewriting: keys in the range
                // may vanish or show an older version (a newer one was in a dropped file, an
                // older one in a file that sticks out of the range; RocksDB's
                // DeleteFilesInRange is followed by a DeleteRange for that reason); keys
                // outside it must not change.
                let lo = key(rng.below(300));
                let hi = key(rng.below(300));
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                if snaps.is_empty() {
                    db.delete_file_in_range(&lo, &hi).unwrap();
                    let now = dump(&db, ReadOptions::default());
                    let outside = |m: &Model| -> Model {
                        m.iter()
                            .filter(|(k, _)| **k < lo || **k > hi)
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    };
                    assert_eq!(
                        outside(&now),
                        outside(&model),
                        "seed {seed} step {step}: outside the range"
                    );
                    model = now;
                }
            }
            _ => {
                snaps.clear();
                drop(db);
                db = DB::open(&o, "/db").unwrap();
            }
        }
        if step % 50 == 49 {
            assert_eq!(dump(&db, ReadOptions::default()), model, "seed {seed} step {step}");
            for (s, m) in &snaps {
                let mut ro = ReadOptions::default();
                ro.set_snapshot(s);
                assert_eq!(&dump(&db, ro), m, "seed {seed} step {step}: snapshot");
            }
        }
    }
    assert_eq!(dump(&db, ReadOptions::default()), model, "seed {seed} at the end");
    assert!(ingests > 10, "seed {seed}: only {ingests} ingests");
    drop(db);
    for (dir, m) in &checkpoints {
        let ck = DB::open(&o, dir).unwrap();
        assert_eq!(&dump(&ck, ReadOptions::default()), m, "seed {seed}: checkpoint {dir}");
    }
    assert!(!checkpoints.is_empty());
}

#[test]
fn model_ingest_checkpoint_snapshots_reopen() {
    for seed in 1..=6 {
        run(seed * 7919);
    }
}
