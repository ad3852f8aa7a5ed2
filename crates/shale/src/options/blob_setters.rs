//! The `rocksdb` crate's setters of the blob file options (`options::blob`).

use super::types::Options;
use crate::table::format::DBCompressionType;

/// The `rocksdb` crate's blob setters.
impl Options {
    /// Write values of at least [`set_min_blob_size`](Self::set_min_blob_size) bytes to blob
    /// files at flush and compaction, keeping a blob index in the table (default false).
    /// Blob files already in the DB are read whatever this says.
    pub fn set_enable_blob_files(&mut self, val: bool) {
        self.blob.enable_blob_files = val;
    }

    /// The smallest value that goes to a blob file (default 0: every value).
    pub fn set_min_blob_size(&mut self, val: u64) {
        self.blob.min_blob_size = val;
    }

    /// The size at which a blob file is closed and the next one started (default 256 MiB;
    /// 0 is refused at open).
    pub fn set_blob_file_size(&mut self, val: u64) {
        self.blob.blob_file_size = val;
    }

    /// The compression of blobs (default none). Each blob is compressed on its own and stored
    /// compressed whatever the ratio, as RocksDB does.
    pub fn set_blob_compression_type(&mut self, val: DBCompressionType) {
        self.blob.blob_compression_type = val;
    }

    /// Relocate, during compaction, the blobs of the oldest blob files (the
    /// [age cutoff](Self::set_blob_gc_age_cutoff) fraction of them) so those files become
    /// garbage and are deleted (default false).
    pub fn set_enable_blob_gc(&mut self, val: bool) {
        self.blob.enable_blob_garbage_collection = val;
    }

    /// The fraction of blob files, oldest first, whose blobs garbage collection relocates
    /// (default 0.25; outside [0, 1] is refused at open with InvalidArgument).
    pub fn set_blob_gc_age_cutoff(&mut self, val: f64) {
        self.blob.blob_garbage_collection_age_cutoff = val;
    }

    /// RocksDB's garbage ratio of the oldest blob files above which a compaction is forced
    /// (default 1.0; outside [0, 1] is refused at open). Accepted and stored; Shale does not
    /// schedule such compactions.
    pub fn set_blob_gc_force_threshold(&mut self, val: f64) {
        self.blob.blob_garbage_collection_force_threshold = val;
    }

    /// Read-ahead for blob reads in compaction (default 0). Accepted and stored; Shale reads
    /// each blob with one read.
    pub fn set_blob_compaction_readahead_size(&mut self, val: u64) {
        self.blob.blob_compaction_readahead_size = val;
    }

    /// The first level whose outputs write blob files (default 0: flushes too). Negative
    /// values are refused at open.
    pub fn set_blob_file_starting_level(&mut self, lvl: i32) {
        self.blob.blob_file_starting_level = lvl;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_name_the_option() {
        let mut o = Options::default();
        o.set_blob_gc_age_cutoff(1.5);
        let e = o.validate().unwrap_err();
        assert!(
            e.is_invalid_argument() && e.to_string().contains("blob_garbage_collection_age_cutoff"),
            "{e}"
        );
        let mut o = Options::default();
        o.set_blob_gc_force_threshold(-0.1);
        let e = o.validate().unwrap_err();
        assert!(e.to_string().contains("blob_garbage_collection_force_threshold"), "{e}");
        let mut o = Options::default();
        o.set_blob_file_size(0);
        assert!(o.validate().unwrap_err().to_string().contains("blob_file_size"));
        let mut o = Options::default();
        o.set_blob_file_starting_level(-1);
        assert!(o
            .validate()
            .unwrap_err()
            .to_string()
            .contains("blob_file_starting_level"));
        let mut o = Options::default();
        o.set_blob_gc_age_cutoff(f64::NAN);
        assert!(o.validate().is_err());
    }
}
