//! CuckooTable files from outside the crate: write one, read one (scan, get, multi_get,
//! verify), and `shale cuckoo_bench`, the read benchmark of RocksDB's
//! `cuckoo_table_reader_test` (`TestReadPerformance`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem, PosixFs};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, vt, Comparator, InternalKeyComparator, MAX_SEQUENCE};
use crate::table::cuckoo::{CuckooTable, CuckooTableBuilder, CuckooTableBuilderOptions, CuckooTableOptions};
use crate::table::reader_options::TableReaderOptions;

/// How [`write_cuckoo_file`] writes a file.
#[derive(Clone)]
pub struct CuckooWriteOptions {
    /// The cuckoo table's layout options.
    pub table: CuckooTableOptions,
    /// The comparator whose name the file records.
    pub comparator: Arc<dyn Comparator>,
    /// The column family name recorded in the properties.
    pub column_family_name: String,
    /// The DB id recorded in the properties.
    pub db_id: String,
    /// The DB session id recorded in the properties.
    pub db_session_id: String,
    /// The file number recorded in the properties.
    pub file_number: u64,
}

impl Default for CuckooWriteOptions {
    fn default() -> Self {
        CuckooWriteOptions {
            table: CuckooTableOptions::default(),
            comparator: Arc::new(crate::key::BytewiseComparator),
            column_family_name: "default".into(),
            db_id: String::new(),
            db_session_id: String::new(),
            file_number: 0,
        }
    }
}

/// Write `entries` (internal keys in order, values) as a cuckoo file at `path`; returns its size.
/// On error the partial file is removed.
pub fn write_cuckoo_file(path: &Path, entries: &[(Vec<u8>, Vec<u8>)], o: &CuckooWriteOptions) -> Result<u64> {
    let fs = PosixFs;
    let file = fs.new_writable(path)?;
    let opts = CuckooTableBuilderOptions {
        icmp: InternalKeyComparator::new(o.comparator.clone()),
        table: o.table.clone(),
        column_family_name: o.column_family_name.clone(),
        column_family_id: None,
        db_id: o.db_id.clone(),
        db_session_id: o.db_session_id.clone(),
        file_number: o.file_number,
        creation_time: 0,
    };
    let mut b = CuckooTableBuilder::new(opts, file);
    let r = (|| {
        for (k, v) in entries {
            b.add(k, v)?;
        }
        let (info, mut f) = b.finish()?;
        f.sync()?;
        Ok(info.file_size)
    })();
    if r.is_err() {
        let _ = fs.remove_file(path);
    }
    r
}

/// An open cuckoo file (held in memory).
pub struct CuckooFile {
    table: Arc<CuckooTable>,
}

impl CuckooFile {
    /// Open `path`; `comparator` orders the scan (bytewise when `None`).
    pub fn open(path: &Path, comparator: Option<Arc<dyn Comparator>>) -> Result<CuckooFile> {
        let fs = PosixFs;
        let file = fs.open_random(path)?;
        let size = file.size();
        let icmp = InternalKeyComparator::new(comparator.unwrap_or_else(|| Arc::new(crate::key::BytewiseComparator)));
        let opts = TableReaderOptions {
            icmp,
            ..Default::default()
        };
        let table = CuckooTable::open(file, name_of(path), size, &opts)?;
        Ok(CuckooFile { table: Arc::new(table) })
    }

    /// Every entry as (internal key, value) in comparator order.
    pub fn scan(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut it = self.table.iter();
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// The entry (internal key, value) of `user_key`, if present.
    pub fn get(&self, user_key: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.table.get(&make_internal_key(user_key, MAX_SEQUENCE, vt::FOR_SEEK))
    }

    /// The values of `user_keys` (batched lookup).
    pub fn multi_get(&self, user_keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut out = vec![None; user_keys.len()];
        self.table
            .multi_get(user_keys, MAX_SEQUENCE, |i, _, v| out[i] = Some(v.to_vec()))?;
        Ok(out)
    }

    /// Check that every bucket is where a lookup finds it (see `CuckooTable::verify`).
    pub fn verify(&self) -> Result<()> {
        self.table.verify()
    }

    /// Every property as stored.
    pub fn properties(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.table.properties().raw
    }

    /// The number of hash functions the table was built with.
    pub fn num_hash_func(&self) -> u32 {
        self.table.num_hash_func()
    }

    /// The number of buckets of the hash table.
    pub fn hash_table_size(&self) -> u64 {
        self.table.hash_table_size()
    }

    /// Whether the table was built for the last level (keys stored without sequence numbers).
    pub fn is_last_level(&self) -> bool {
        self.table.is_last_level()
    }
}

/// Options of [`cuckoo_read_bench`].
#[derive(Clone, Debug)]
pub struct CuckooBenchOptions {
    /// Keys at the highest utilization (at least this many: the table has the smallest power
    /// of two of buckets that holds `num` keys at 93.75%).
    pub num: u64,
    /// Where the files go (RocksDB's benchmark used tmpfs: `/dev/shm`).
    pub dir: PathBuf,
    /// Runs without and with `identity_as_first_hash`, or only the given one.
    pub identity_as_first_hash: Option<bool>,
    /// The lookup batch sizes to time, one run each (0: one key at a time).
    pub batch_sizes: Vec<u32>,
}

impl Default for CuckooBenchOptions {
    fn default() -> Self {
        CuckooBenchOptions {
            num: 100_000_000,
            dir: PathBuf::from("/dev/shm"),
            identity_as_first_hash: None,
            batch_sizes: vec![0, 10, 25, 50, 100],
        }
    }
}

/// RocksDB's uint64 comparator (keys are 8-byte little-endian integers).
struct Uint64Comparator;

impl Comparator for Uint64Comparator {
    fn name(&self) -> &str {
        "rocksdb.Uint64Comparator"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match (a.try_into(), b.try_into()) {
            (Ok(x), Ok(y)) => u64::from_le_bytes(x).cmp(&u64::from_le_bytes(y)),
            _ => a.cmp(b),
        }
    }
}

/// splitmix64, for the shuffle.
fn next_rand(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Write the benchmark file: keys `2*i` (8 bytes, little-endian) at sequence 0, values their
/// first 4 bytes; ratio 0.95, mask hashing, block size 5, search depth 1000 (RocksDB's
/// `WriteFile`).
fn write_bench_file(path: &Path, num: u64, identity: bool) -> Result<()> {
    let fs = PosixFs;
    let file = fs.new_writable(path)?;
    let opts = CuckooTableBuilderOptions {
        icmp: InternalKeyComparator::new(Arc::new(Uint64Comparator)),
        table: CuckooTableOptions {
            hash_table_ratio: 0.95,
            max_search_depth: 1000,
            cuckoo_block_size: 5,
            identity_as_first_hash: identity,
            use_module_hash: false,
        },
        ..Default::default()
    };
    let mut b = CuckooTableBuilder::new(opts, file);
    let mut ikey = [0u8; 16];
    ikey[8] = vt::VALUE;
    for i in 0..num {
        ikey[..8].copy_from_slice(&(2 * i).to_le_bytes());
        b.add(&ikey, &ikey[..4])?;
    }
    let (_, mut f) = b.finish()?;
    f.sync()?;
    Ok(())
}

/// Look up every key once in shuffled order, singly (`batch == 0`) or in batches; returns
/// (seconds, keys found).
fn read_keys(t: &CuckooTable, keys: &[[u8; 8]], batch: usize) -> Result<(f64, u64)> {
    let start = Instant::now();
    let mut found = 0u64;
    if batch == 0 {
        let mut ikey = [0u8; 16];
        ikey[8..].copy_from_slice(&((MAX_SEQUENCE << 8) | vt::FOR_SEEK as u64).to_le_bytes());
        for k in keys {
            ikey[..8].copy_from_slice(k);
            if t.get_with(&ikey, false, false, |_, v| v.len())?.is_some() {
                found += 1;
            }
        }
    } else {
        let mut refs: [&[u8]; 128] = [&[]; 128];
        for chunk in keys.chunks(batch) {
            for part in chunk.chunks(refs.len()) {
                for (r, k) in refs.iter_mut().zip(part) {
                    *r = k;
                }
                found += t.multi_get(&refs[..part.len()], MAX_SEQUENCE, |_, _, _| {})? as u64;
            }
        }
    }
    Ok((start.elapsed().as_secs_f64(), found))
}

/// RocksDB's cuckoo ReadPerformance benchmark: for item counts giving 93.75%, 78.12%, 62.5%
/// and 54.69% utilization of one power-of-two table, with and without the identity first hash,
/// build a last-level file of 8-byte keys and 4-byte values in `dir`, then time Gets (batch 0)
/// and prefetching batched lookups. Prints RocksDB's lines to `out`.
pub fn cuckoo_read_bench(o: &CuckooBenchOptions, out: &mut dyn Write) -> Result<()> {
    if o.num == 0 {
        return Err(Error::invalid("--num must be positive"));
    }
    let io = |e: std::io::Error| Error::io("output", e);
    let buckets = (o.num as u128 * 16).div_ceil(15).next_power_of_two() as u64;
    let nums = [buckets / 16 * 15, buckets / 32 * 25, buckets / 8 * 5, buckets / 64 * 35];
    let identities: Vec<bool> = match o.identity_as_first_hash {
        Some(b) => vec![b],
        None => vec![false, true],
    };
    PosixFs.create_dir_all(&o.dir)?;
    for identity in identities {
        writeln!(out, "identity_as_first_hash={identity}").map_err(io)?;
        for &num in &nums {
            let path = o.dir.join(format!("cuckoo_read_benchmark{}Mkeys", num / 1_000_000));
            let t0 = Instant::now();
            write_bench_file(&path, num, identity)?;
            let built = t0.elapsed().as_secs_f64();
            let r = (|| -> Result<()> {
                let file = PosixFs.open_random(&path)?;
                let size = file.size();
                let opts = TableReaderOptions {
                    icmp: InternalKeyComparator::new(Arc::new(Uint64Comparator)),
                    ..Default::default()
                };
                let t = CuckooTable::open(file, name_of(&path), size, &opts)?;
                writeln!(
                    out,
                    "With {num} items, utilization is {:.2}%, number of hash functions: {}.",
                    num as f64 * 100.0 / t.hash_table_size() as f64,
                    t.num_hash_func()
                )
                .map_err(io)?;
                writeln!(out, "(file of {size} bytes built in {built:.1} s)").map_err(io)?;
                let mut keys: Vec<[u8; 8]> = (0..num).map(|i| (2 * i).to_le_bytes()).collect();
                let mut seed = 0x5eed_u64 ^ num;
                for i in (1..keys.len()).rev() {
                    let j = (next_rand(&mut seed) % (i as u64 + 1)) as usize;
                    keys.swap(i, j);
                }
                for &b in &o.batch_sizes {
                    let (secs, found) = read_keys(&t, &keys, b as usize)?;
                    let us = secs * 1e6 / num as f64;
                    writeln!(
                        out,
                        "Time taken per op is {us:.3}us ({:.1} Mqps) with batch size of {b}, # of found keys {found}",
                        1.0 / us
                    )
                    .map_err(io)?;
                    if found != num {
                        return Err(Error::corrupt(format!(
                            "benchmark found {found} of {num} keys in {}",
                            path.display()
                        )));
                    }
                }
                writeln!(out).map_err(io)?;
                Ok(())
            })();
            let _ = PosixFs.remove_file(&path);
            r?;
        }
    }
    Ok(())
}
