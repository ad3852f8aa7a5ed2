//! Helpers shared by the fault, bad-input and concurrency tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod crash_after;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{Error, IteratorMode, Options, ReadOptions, DB};

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

pub struct Rng(pub u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub const DIR: &str = "/db";

pub fn dir() -> &'static Path {
    Path::new(DIR)
}

/// Small options over `fs` so that flushes and compactions happen quickly.
pub fn small_opts(fs: Arc<dyn FileSystem>) -> Options {
    {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(fs);
        o.set_write_buffer_size(8 << 10);
        o.set_target_file_size_base(16 << 10);
        o.set_max_bytes_for_level_base(64 << 10);
        o.set_level_zero_file_num_compaction_trigger(2);
        let mut bbo = o.get_block_based_options();
        bbo.set_block_size(256);
        o.set_block_based_table_factory(&bbo);
        o
    }
}

pub fn mem_opts(fs: &MemFs) -> Options {
    small_opts(Arc::new(fs.clone()))
}

/// Names of the files in `d`, sorted.
pub fn files(fs: &dyn FileSystem, d: &Path) -> Vec<String> {
    let mut v = fs.list(d).unwrap();
    v.sort();
    v
}

/// The single file in `d` whose name ends with `suffix` and has the largest number.
pub fn newest(fs: &dyn FileSystem, d: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let mut best: Option<(u64, String)> = None;
    for n in files(fs, d) {
        if let Some(mid) = n.strip_prefix(prefix).and_then(|r| r.strip_suffix(suffix)) {
            if let Ok(num) = mid.parse::<u64>() {
                if best.as_ref().map(|(b, _)| num > *b).unwrap_or(true) {
                    best = Some((num, n.clone()));
                }
            }
        }
    }
    d.join(
        best.unwrap_or_else(|| panic!("no {prefix}*{suffix} in {:?}", files(fs, d)))
            .1,
    )
}

pub fn all_with(fs: &dyn FileSystem, d: &Path, suffix: &str) -> Vec<PathBuf> {
    files(fs, d)
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .map(|n| d.join(n))
        .collect()
}

/// A copy of every file of `d` (durable: synced and directory-synced) on a fresh MemFs.
pub fn copy_fs(src: &MemFs, d: &Path) -> MemFs {
    let dst = MemFs::new();
    dst.create_dir_all(d).unwrap();
    for n in files(src, d) {
        let data = src.read_all(&d.join(&n)).unwrap();
        let mut w = dst.new_writable(&d.join(&n)).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
    }
    dst.sync_dir(d).unwrap();
    dst
}

/// Replace the whole content of a file.
pub fn write_file(fs: &dyn FileSystem, p: &Path, data: &[u8]) {
    let mut w = fs.new_writable(p).unwrap();
    w.append(data).unwrap();
    w.sync().unwrap();
    drop(w);
    fs.sync_dir(p.parent().unwrap()).unwrap();
}

/// Every key/value via a forward scan; the first error is returned.
pub fn scan(db: &DB, ro: ReadOptions) -> Result<Model, Error> {
    let mut m = Model::new();
    for r in db.iterator_opt(IteratorMode::Start, ro) {
        let (k, v) = r?;
        m.insert(k.to_vec(), v.to_vec());
    }
    Ok(m)
}

pub fn dump(db: &DB) -> Model {
    scan(db, ReadOptions::default()).unwrap()
}

/// Corruption whose `file` names `name` (substring).
#[track_caller]
pub fn assert_corruption_in(e: &Error, name: &str) {
    match e {
        Error::Corruption { file, .. } => {
            assert!(file.contains(name), "corruption names {file:?}, expected {name:?}: {e}")
        }
        _ => panic!("expected Corruption in {name}, got {e:?}"),
    }
}

pub fn kv(i: u64) -> (Vec<u8>, Vec<u8>) {
    (
        format!("key{i:06}").into_bytes(),
        format!("value{i:06}-{}", "v".repeat((i % 23) as usize)).into_bytes(),
    )
}

/// Files per level (levels 0..7), from `rocksdb.num-files-at-level<N>`.
pub fn level_files(db: &DB) -> Vec<u64> {
    (0..7)
        .map(|l| {
            db.property_int_value(&format!("rocksdb.num-files-at-level{l}"))
                .unwrap()
                .unwrap()
        })
        .collect()
}

/// Bytes in the WAL files (`*.log`) of the DB directory `dir` on the real file system.
pub fn wal_bytes_on_disk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| {
            // A live WAL may keep zeros written ahead of its records (docs/architecture.md,
            // "Mapped WAL appends"): count up to its last non-zero byte. Records end in a
            // non-zero byte in the tests that use this (their values do).
            let b = std::fs::read(e.path()).unwrap();
            b.iter().rposition(|&x| x != 0).map_or(0, |i| i as u64 + 1)
        })
        .sum()
}
