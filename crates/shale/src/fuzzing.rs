//! Thin wrappers over internal decoders for the fuzz targets in `fuzz/` (feature `fuzzing`).
//! Not a stable API: every function takes arbitrary bytes and must return (Ok or Err), never
//! panic, hang or allocate without bound.

use std::sync::Arc;

use crate::error::Result;
use crate::fs::testing::MemFs;
use crate::fs::FileSystem;
use crate::iterator::InternalIterator;
use crate::key::InternalKeyComparator;
use crate::log::DBRecoveryMode;
use crate::table::block::{Block, BlockIter, EntryFormat, KeyOrder};
use crate::table::block_based::reader::Table;
use crate::table::reader_options::TableReaderOptions;
use crate::write_batch::{BatchHandler, WriteBatch};

/// Walk an iterator both ways and seek around; returns the entries seen.
fn exercise(it: &mut dyn InternalIterator, probe: &[u8]) -> Result<usize> {
    let mut n = 0usize;
    it.seek_to_first();
    while it.valid() && n < 100_000 {
        let _ = (it.key().len(), it.value().len());
        n += 1;
        it.next();
    }
    it.status()?;
    it.seek_to_last();
    let mut m = 0usize;
    while it.valid() && m < 100_000 {
        m += 1;
        it.prev();
    }
    it.status()?;
    it.seek(probe);
    if it.valid() {
        it.next();
    }
    it.seek_for_prev(probe);
    if it.valid() {
        it.prev();
    }
    it.status()?;
    Ok(n)
}

/// Decode a (decompressed, trailer-less) block and iterate it as a data block with internal
/// keys, as a bytewise meta block and as each kind of index block. `selector` picks the formats.
pub fn block_decode(data: &[u8], selector: u8) -> Result<usize> {
    let block = Arc::new(Block::new(data.to_vec())?);
    let icmp = InternalKeyComparator::default();
    let probe: Vec<u8> = data.iter().rev().take(12).copied().collect();
    let mut total = 0;
    let formats = [
        (KeyOrder::Internal(icmp.clone()), EntryFormat::Data),
        (KeyOrder::Bytewise, EntryFormat::Data),
        (
            KeyOrder::Internal(icmp.clone()),
            EntryFormat::Index {
                delta: selector & 1 != 0,
                first_key: selector & 2 != 0,
            },
        ),
        (
            KeyOrder::UserKeyIndex(icmp),
            EntryFormat::Index {
                delta: selector & 4 != 0,
                first_key: false,
            },
        ),
    ];
    for (order, format) in formats {
        let mut it = BlockIter::new(block.clone(), order, format);
        total += exercise(&mut it, &probe).unwrap_or(0);
    }
    Ok(total)
}

/// Open `data` as a block-based table file and read it: full scans (with and without checksum
/// verification) and point lookups, with index and filter blocks in the table or in a block
/// cache.
pub fn table_read(data: &[u8]) -> Result<usize> {
    let fs = MemFs::new();
    let path = std::path::Path::new("/fuzz/000007.sst");
    fs.create_dir_all(path.parent().unwrap())?;
    let mut w = fs.new_writable(path)?;
    w.append(data)?;
    w.sync()?;
    drop(w);
    let file = fs.open_random(path)?;
    // the first byte's low bits pick checksum verification and where index and filter blocks
    // (and partitions) live: in the table, or in a small block cache
    let sel = data.first().copied().unwrap_or(0);
    let opts = TableReaderOptions {
        verify_checksums: sel & 1 == 0,
        block_cache: Some(Arc::new(crate::table::cache::BlockCache::new(64 << 10))),
        cache_index_and_filter_blocks: sel & 2 != 0,
        ..Default::default()
    };
    let t = Table::open(file, "000007.sst".into(), data.len() as u64, opts)?;
    let probe: Vec<u8> = data.iter().take(16).copied().collect();
    let mut n = 0;
    for verify in [true, false] {
        let mut it = t.iter(verify, false);
        n += exercise(&mut it, &probe)?;
    }
    let mut lookup = probe.clone();
    lookup.extend_from_slice(&u64::MAX.to_le_bytes()[..8]);
    let _ = t.get(&lookup, true, false)?;
    let _ = t.key_may_match(&probe);
    Ok(n)
}

/// Open `data` as a CuckooTable file and read it: verify, full scan both ways, point lookups
/// (single and batched) of a key taken from the input.
pub fn cuckoo_table_read(data: &[u8]) -> Result<usize> {
    let t = Arc::new(crate::table::cuckoo::CuckooTable::from_bytes(
        data.to_vec(),
        "000009.sst".into(),
        InternalKeyComparator::default(),
    )?);
    let verified = t.verify();
    let probe: Vec<u8> = data.iter().take(16).copied().collect();
    let mut it = t.iter();
    let n = exercise(&mut it, &probe)?;
    for len in [8, 16] {
        let uk = &probe[..len.min(probe.len())];
        let _ = t.get(&crate::key::make_internal_key(uk, crate::key::MAX_SEQUENCE, 0xff))?;
        let _ = t.multi_get(&[uk, &probe], crate::key::MAX_SEQUENCE, |_, _, _| {})?;
    }
    verified?;
    Ok(n)
}

/// Open `data` as a PlainTable file (with the prefix extractor its properties name, and in
/// full-scan mode without one) and read it: a forward scan, seeks and a point lookup of a key
/// taken from the input (plain iterators move forward only).
pub fn plain_table_read(data: &[u8]) -> Result<usize> {
    use crate::table::plain::{PlainTable, PlainTableFactoryOptions};
    let fs = MemFs::new();
    let path = std::path::Path::new("/fuzz/000011.sst");
    fs.create_dir_all(path.parent().unwrap())?;
    let mut w = fs.new_writable(path)?;
    w.append(data)?;
    w.sync()?;
    drop(w);
    let probe: Vec<u8> = data.iter().take(16).copied().collect();
    let mut n = 0;
    let attempts: [(Option<Arc<dyn crate::slice_transform::PrefixExtractor>>, bool); 2] = [
        (Some(crate::slice_transform::new_fixed_prefix_transform(8)), false),
        (None, true),
    ];
    let mut first_err = None;
    for (prefix, full_scan) in attempts {
        let plain = PlainTableFactoryOptions {
            full_scan_mode: full_scan,
            ..Default::default()
        };
        let file = fs.open_random(path)?;
        let t = match PlainTable::open(
            file,
            "000011.sst".into(),
            data.len() as u64,
            &TableReaderOptions::default(),
            &plain,
            prefix,
        ) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                first_err.get_or_insert(e);
                continue;
            }
        };
        let mut it = t.iter();
        it.seek_to_first();
        while it.valid() && n < 100_000 {
            let _ = (it.key().len(), it.value().len());
            n += 1;
            it.next();
        }
        it.status()?;
        it.seek(&probe);
        if it.valid() {
            it.next();
        }
        let mut lookup = probe.clone();
        lookup.extend_from_slice(&u64::MAX.to_le_bytes());
        if !full_scan {
            let _ = t.get(&lookup)?;
        }
    }
    match first_err {
        Some(e) if n == 0 => Err(e),
        _ => Ok(n),
    }
}

struct Count(usize);

impl BatchHandler for Count {
    fn put(&mut self, _k: &[u8], _v: &[u8]) -> Result<()> {
        self.0 += 1;
        Ok(())
    }
    fn delete(&mut self, _k: &[u8]) -> Result<()> {
        self.0 += 1;
        Ok(())
    }
    fn single_delete(&mut self, _k: &[u8]) -> Result<()> {
        self.0 += 1;
        Ok(())
    }
    fn delete_range(&mut self, _b: &[u8], _e: &[u8]) -> Result<()> {
        self.0 += 1;
        Ok(())
    }
    fn merge(&mut self, _k: &[u8], _v: &[u8]) -> Result<()> {
        self.0 += 1;
        Ok(())
    }
    fn put_entity(&mut self, _k: &[u8], v: &[u8]) -> Result<()> {
        crate::wide_columns::decode(v)?;
        self.0 += 1;
        Ok(())
    }
    fn set_cf(&mut self, _cf: u32) -> Result<()> {
        Ok(())
    }
}

/// Decode a WriteBatch (its RocksDB encoding), walk its records, and insert them into a
/// memtable as WAL recovery does (records the memtable cannot hold must be errors).
pub fn write_batch_decode(data: &[u8]) -> Result<usize> {
    let b = WriteBatch::decode(data.to_vec())?;
    let mut c = Count(0);
    b.handle(&mut c)?;
    let _ = b.count();
    let mem = std::sync::Arc::new(crate::memtable::MemTable::new(InternalKeyComparator::default(), 4096));
    // The default family and one more: records of any other family only take their sequence
    // numbers, as in recovery.
    let other = std::sync::Arc::new(crate::memtable::MemTable::new(InternalKeyComparator::default(), 4096));
    let mems = vec![(0, mem), (1, other)];
    b.handle(&mut crate::engine::mem_insert::MemInserter::new(&mems, 1))?;
    Ok(c.0)
}

/// Decode a wide-column entity (RocksDB's serialization); what decodes must encode back to a
/// value that decodes to the same columns, and the default-column and merge helpers must
/// agree with the decoded columns. Returns the number of columns.
pub fn wide_columns_decode(data: &[u8]) -> Result<usize> {
    let cols = crate::wide_columns::decode(data)?;
    let again = crate::wide_columns::serialize_sorted(&cols)?;
    assert_eq!(crate::wide_columns::decode(&again)?, cols, "re-encoded entity differs");
    let dflt = crate::wide_columns::default_range(data)?;
    assert_eq!(dflt.is_some(), cols.first().is_some_and(|c| c.0.is_empty()));
    let merged = crate::wide_columns::with_default(data, b"m")?;
    let m = crate::wide_columns::decode(&merged)?;
    assert_eq!(m.first(), Some(&(&b""[..], &b"m"[..])));
    assert_eq!(m.len(), cols.len() + usize::from(dflt.is_none()));
    Ok(cols.len())
}

/// Replay a WAL file: the log reader (in the recovery mode picked by `mode`) and every record
/// decoded as a WriteBatch, as recovery does.
pub fn wal_replay(data: &[u8], mode: u8) -> Result<usize> {
    let mode = match mode % 4 {
        0 => DBRecoveryMode::TolerateCorruptedTailRecords,
        1 => DBRecoveryMode::AbsoluteConsistency,
        2 => DBRecoveryMode::PointInTime,
        _ => DBRecoveryMode::SkipAnyCorruptedRecord,
    };
    let mut r = crate::log::Reader::new(data.to_vec(), "000003.log", 3, mode);
    let mut n = 0;
    while let Some(rec) = r.read_record()? {
        match write_batch_decode(rec) {
            Ok(k) => n += k,
            Err(_) if mode == DBRecoveryMode::SkipAnyCorruptedRecord => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Decode a MANIFEST record (a VersionEdit); a decoded edit is re-encoded and decoded again.
pub fn version_edit_decode(data: &[u8]) -> Result<()> {
    let e = crate::lsm::version_edit::VersionEdit::decode(data)?;
    let again = e.encoded();
    crate::lsm::version_edit::VersionEdit::decode(&again)?;
    Ok(())
}

/// Read a MANIFEST file: log records, each a VersionEdit.
pub fn manifest_replay(data: &[u8]) -> Result<usize> {
    let mut r = crate::log::Reader::new(data.to_vec(), "MANIFEST-000001", 1, DBRecoveryMode::AbsoluteConsistency);
    let mut n = 0;
    while let Some(rec) = r.read_record()? {
        crate::lsm::version_edit::VersionEdit::decode(rec)?;
        n += 1;
    }
    Ok(n)
}

/// A block built by the table builder's block builder (for seed corpora): `kvs` in order.
pub fn build_block(kvs: &[(Vec<u8>, Vec<u8>)], restart_interval: usize) -> Vec<u8> {
    let mut b = crate::table::block::BlockBuilder::new(restart_interval.max(1), false);
    for (k, v) in kvs {
        b.add(k, v);
    }
    b.finish()
}

/// The records of a log file (WAL or MANIFEST), for seed corpora.
pub fn log_records(data: &[u8]) -> Vec<Vec<u8>> {
    let mut r = crate::log::Reader::new(data.to_vec(), "x.log", 0, DBRecoveryMode::PointInTime);
    let mut out = Vec::new();
    while let Ok(Some(rec)) = r.read_record() {
        out.push(rec.to_vec());
    }
    out
}

/// A blob index and a blob file: `data` is the index's length (1 byte), the index, then the
/// bytes of blob file 1. The index is decoded (and its re-encoding decodes the same) and
/// resolved against the file for the key `k`, as is a plain index to the file's first record.
/// Returns the bytes of the values read.
pub fn blob_read(data: &[u8]) -> Result<usize> {
    use crate::blob::index::BlobIndex;
    let (&n, rest) = data.split_first().unwrap_or((&0, &[]));
    let (index, file) = rest.split_at((n as usize).min(rest.len()));
    if let Ok(d) = BlobIndex::decode(index) {
        assert_eq!(BlobIndex::decode(&d.encode())?, d, "re-encoded blob index differs");
    }
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let dir = std::path::Path::new("/db");
    fs.create_dir_all(dir)?;
    let mut w = fs.new_writable(&crate::lsm::filename::blob_name(dir, 1))?;
    w.append(file)?;
    w.sync()?;
    drop(w);
    let cache = crate::blob::reader::BlobFileCache::new(fs, dir);
    let _ = cache.reader(1)?;
    let first = BlobIndex::Blob {
        file_number: 1,
        offset: 30 + 32 + 1,
        size: file.len().saturating_sub(30 + 32 + 1 + 32) as u64,
        compression: file.get(13).copied().unwrap_or(0),
        expiration: None,
    };
    let a = cache.resolve(b"k", index, true)?.len();
    let b = cache.resolve(b"k", &first.encode(), true).map_or(0, |v| v.len());
    Ok(a + b)
}
