//! The integrated blob files' options (RocksDB's `enable_blob_files` family of column-family
//! options), their `rocksdb`-crate setters, checks, and OPTIONS file lines.

use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::table::format::DBCompressionType;

/// A family's blob file settings (RocksDB's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlobOptions {
    /// Flushes and compactions write values of at least `min_blob_size` bytes to blob files.
    pub enable_blob_files: bool,
    pub min_blob_size: u64,
    /// A blob file is closed (and a new one started) once it reaches this many bytes.
    pub blob_file_size: u64,
    pub blob_compression_type: DBCompressionType,
    /// Compactions relocate the blobs of the oldest files (`age_cutoff` of them).
    pub enable_blob_garbage_collection: bool,
    pub blob_garbage_collection_age_cutoff: f64,
    pub blob_garbage_collection_force_threshold: f64,
    /// Accepted and written to the OPTIONS file; Shale reads blobs with plain reads.
    pub blob_compaction_readahead_size: u64,
    /// Blob files are written for outputs at this level or deeper (flushes are level 0).
    pub blob_file_starting_level: i32,
}

impl Default for BlobOptions {
    fn default() -> Self {
        BlobOptions {
            enable_blob_files: false,
            min_blob_size: 0,
            blob_file_size: 256 << 20,
            blob_compression_type: DBCompressionType::None,
            enable_blob_garbage_collection: false,
            blob_garbage_collection_age_cutoff: 0.25,
            blob_garbage_collection_force_threshold: 1.0,
            blob_compaction_readahead_size: 0,
            blob_file_starting_level: 0,
        }
    }
}

impl BlobOptions {
    /// InvalidArgument naming the option for a value out of its range.
    pub(crate) fn validate(&self) -> Result<()> {
        let frac = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(Error::invalid(format!("{name} must be in [0.0, 1.0], got {v}")))
            }
        };
        frac(
            "blob_garbage_collection_age_cutoff",
            self.blob_garbage_collection_age_cutoff,
        )?;
        frac(
            "blob_garbage_collection_force_threshold",
            self.blob_garbage_collection_force_threshold,
        )?;
        if self.blob_file_size == 0 {
            return Err(Error::invalid("blob_file_size must be at least 1"));
        }
        if self.blob_file_starting_level < 0 {
            return Err(Error::invalid(format!(
                "blob_file_starting_level must not be negative, got {}",
                self.blob_file_starting_level
            )));
        }
        Ok(())
    }

    #[allow(dead_code)] // used by the engine from the next commit on
    /// Whether an output written to `level` puts large values into blob files.
    pub(crate) fn writes_blobs_at(&self, level: usize) -> bool {
        self.enable_blob_files && level as i64 >= self.blob_file_starting_level as i64
    }

    /// The `[CFOptions]` lines, under RocksDB's names.
    pub(crate) fn render(&self, s: &mut String) {
        let mut l = |k: &str, v: &dyn std::fmt::Display| {
            let _ = writeln!(s, "  {k}={v}");
        };
        l("enable_blob_files", &self.enable_blob_files);
        l("min_blob_size", &self.min_blob_size);
        l("blob_file_size", &self.blob_file_size);
        l(
            "blob_compression_type",
            &compression_option_name(self.blob_compression_type),
        );
        l("enable_blob_garbage_collection", &self.enable_blob_garbage_collection);
        l(
            "blob_garbage_collection_age_cutoff",
            &format_args!("{:.6}", self.blob_garbage_collection_age_cutoff),
        );
        l(
            "blob_garbage_collection_force_threshold",
            &format_args!("{:.6}", self.blob_garbage_collection_force_threshold),
        );
        l("blob_compaction_readahead_size", &self.blob_compaction_readahead_size);
        l("blob_file_starting_level", &self.blob_file_starting_level);
    }

    /// Apply one `[CFOptions]` line if it is a blob option: `None` if `k` is not one,
    /// `Some(Err)` on a bad value (InvalidArgument naming the option).
    pub(crate) fn apply(&mut self, k: &str, v: &str) -> Option<Result<()>> {
        fn parse<T: std::str::FromStr>(k: &str, v: &str) -> Result<T> {
            v.parse()
                .map_err(|_| Error::invalid(format!("bad value {v:?} for {k}")))
        }
        fn boolean(k: &str, v: &str) -> Result<bool> {
            match v {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(Error::invalid(format!("bad value {v:?} for {k} (true or false)"))),
            }
        }
        let r = (|| -> Result<bool> {
            match k {
                "enable_blob_files" => self.enable_blob_files = boolean(k, v)?,
                "min_blob_size" => self.min_blob_size = parse(k, v)?,
                "blob_file_size" => self.blob_file_size = parse(k, v)?,
                "blob_compression_type" => {
                    self.blob_compression_type = compression_from_option_name(v)
                        .ok_or_else(|| Error::NotSupported(format!("blob_compression_type {v} is not supported")))?
                }
                "enable_blob_garbage_collection" => self.enable_blob_garbage_collection = boolean(k, v)?,
                "blob_garbage_collection_age_cutoff" => self.blob_garbage_collection_age_cutoff = parse(k, v)?,
                "blob_garbage_collection_force_threshold" => {
                    self.blob_garbage_collection_force_threshold = parse(k, v)?
                }
                "blob_compaction_readahead_size" => self.blob_compaction_readahead_size = parse(k, v)?,
                "blob_file_starting_level" => self.blob_file_starting_level = parse(k, v)?,
                _ => return Ok(false),
            }
            Ok(true)
        })();
        match r {
            Ok(false) => None,
            Ok(true) => Some(self.validate()),
            Err(e) => Some(Err(e)),
        }
    }
}

/// RocksDB's OPTIONS-file name of a compression type.
pub(crate) fn compression_option_name(c: DBCompressionType) -> &'static str {
    match c {
        DBCompressionType::None => "kNoCompression",
        DBCompressionType::Snappy => "kSnappyCompression",
        DBCompressionType::Zlib => "kZlibCompression",
        DBCompressionType::Bz2 => "kBZip2Compression",
        DBCompressionType::Lz4 => "kLZ4Compression",
        DBCompressionType::Lz4hc => "kLZ4HCCompression",
        DBCompressionType::Zstd => "kZSTD",
    }
}

fn compression_from_option_name(v: &str) -> Option<DBCompressionType> {
    Some(match v {
        "kNoCompression" => DBCompressionType::None,
        "kSnappyCompression" => DBCompressionType::Snappy,
        "kZlibCompression" => DBCompressionType::Zlib,
        "kBZip2Compression" => DBCompressionType::Bz2,
        "kLZ4Compression" => DBCompressionType::Lz4,
        "kLZ4HCCompression" => DBCompressionType::Lz4hc,
        "kZSTD" | "kZSTDNotFinalCompression" => DBCompressionType::Zstd,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_file_lines_round_trip() {
        let b = BlobOptions {
            enable_blob_files: true,
            min_blob_size: 100,
            blob_file_size: 1 << 20,
            blob_compression_type: DBCompressionType::Lz4,
            enable_blob_garbage_collection: true,
            blob_garbage_collection_age_cutoff: 0.5,
            blob_garbage_collection_force_threshold: 0.75,
            blob_compaction_readahead_size: 4096,
            blob_file_starting_level: 2,
        };
        let mut s = String::new();
        b.render(&mut s);
        assert!(s.contains("  blob_compression_type=kLZ4Compression\n"), "{s}");
        assert!(s.contains("  blob_garbage_collection_age_cutoff=0.500000\n"), "{s}");
        let mut back = BlobOptions::default();
        for line in s.lines() {
            let (k, v) = line.trim().split_once('=').unwrap();
            back.apply(k, v).unwrap().unwrap();
        }
        assert_eq!(back, b);
        assert!(back.apply("write_buffer_size", "1").is_none());
        let e = back
            .apply("blob_garbage_collection_age_cutoff", "2")
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("blob_garbage_collection_age_cutoff"));
        assert!(back
            .apply("blob_compression_type", "kBZip2Compression")
            .unwrap()
            .is_err());
    }
}
