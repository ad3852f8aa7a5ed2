//! `fillseqingest`: db_bench's `fillseq` loaded the bulk way. The same keys (`--num` of them, in
//! order, `--key_size`) and values (db_bench's value generator, `--value_size`,
//! `--compression_ratio`) are written with `SstFileWriter` into external table files cut at
//! `--target_file_size_base` bytes, beside the DB, and then ingested with one
//! `ingest_external_file` call that moves (hard-links) them in. The reported time covers both
//! steps, so ops/sec and MB/s compare directly with `fillseq` and with RocksDB's own
//! `SstFileWriter` + `IngestExternalFile` path (`scripts/bulkload_native.sh`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use shale::{IngestExternalFileOptions, Options, SstFileWriter};

use super::generate_key_from_int;
use super::random::RandomGenerator;
use super::stats::OpType;

/// What one bulk load did.
pub struct BulkLoad {
    pub files: usize,
    pub bytes: u64,
    pub write_secs: f64,
    pub ingest_secs: f64,
}

/// The directory the external files are written in: beside the DB, on the same file system
/// (so the ingest can link them), removed afterwards.
fn staging_dir(db_path: &Path) -> PathBuf {
    let mut name = db_path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".bulkload");
    db_path.with_file_name(name)
}

/// Write `num` sequential keys into external files and ingest them into `db`. `tick` is called
/// after every key (the benchmark's op counter).
#[allow(clippy::too_many_arguments)]
pub fn load(
    db: &shale::DB,
    opts: &Options,
    db_path: &Path,
    num: u64,
    key_size: usize,
    value_size: usize,
    compression_ratio: f64,
    file_bytes: u64,
    mut tick: impl FnMut(u64, OpType),
) -> Result<BulkLoad, String> {
    let dir = staging_dir(db_path);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let started = Instant::now();
    let mut gen = RandomGenerator::new(value_size, compression_ratio);
    let mut writer = SstFileWriter::create(opts);
    let mut key = Vec::with_capacity(key_size);
    let mut files = Vec::new();
    let mut bytes = 0u64;
    let mut open = false;
    for k in 0..num {
        if !open {
            let p = dir.join(format!("{:06}.sst", files.len()));
            writer.open(&p).map_err(|e| format!("SstFileWriter::open: {e}"))?;
            files.push(p);
            open = true;
        }
        generate_key_from_int(k, key_size, &mut key);
        let v = gen.generate();
        writer.put(&key, v).map_err(|e| format!("SstFileWriter::put: {e}"))?;
        bytes += (key.len() + v.len()) as u64;
        tick(1, OpType::Write);
        if file_bytes > 0 && writer.file_size() >= file_bytes {
            writer.finish().map_err(|e| format!("SstFileWriter::finish: {e}"))?;
            open = false;
        }
    }
    if open {
        writer.finish().map_err(|e| format!("SstFileWriter::finish: {e}"))?;
    }
    let written = Instant::now();
    let mut io = IngestExternalFileOptions::default();
    io.set_move_files(true);
    let r = if files.is_empty() {
        Ok(())
    } else {
        db.ingest_external_file_opts(&io, files.clone())
    };
    let done = Instant::now();
    let _ = std::fs::remove_dir_all(&dir);
    r.map_err(|e| format!("ingest_external_file: {e}"))?;
    Ok(BulkLoad {
        files: files.len(),
        bytes,
        write_secs: (written - started).as_secs_f64(),
        ingest_secs: (done - written).as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_load_ingests_every_key_in_order_across_files() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("db");
        let mut o = Options::default();
        o.create_if_missing(true);
        let db = shale::DB::open(&o, &path).unwrap();
        let mut ticks = 0u64;
        // small files: several of them, each cut at 4 KiB
        let r = load(&db, &o, &path, 2000, 16, 100, 0.5, 4096, |n, _| ticks += n).unwrap();
        assert_eq!(ticks, 2000);
        assert!(r.files > 5, "expected the load cut into several files, got {}", r.files);
        assert_eq!(r.bytes, 2000 * 116);
        let mut key = Vec::new();
        for k in [0u64, 1, 999, 1999] {
            generate_key_from_int(k, 16, &mut key);
            assert_eq!(db.get(&key).unwrap().map(|v| v.len()), Some(100), "key {k}");
        }
        generate_key_from_int(2000, 16, &mut key);
        assert_eq!(db.get(&key).unwrap(), None);
        let n = db.iterator(shale::IteratorMode::Start).count();
        assert_eq!(n, 2000);
        // the staging directory is gone, and the files live in the DB now
        assert!(!staging_dir(&path).exists());
        assert_eq!(db.live_files().unwrap().len(), r.files);
    }
}
