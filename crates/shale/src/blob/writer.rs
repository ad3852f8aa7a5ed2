//! Writing blob files: values go to the open file (rolled once it reaches `blob_file_size`),
//! each file gets its footer and is synced when closed, and becomes a `BlobFileAddition` for
//! the MANIFEST edit that installs the tables referencing it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format::{compress_blob, encode_record_header, BlobFooter, BlobHeader, RECORD_HEADER_SIZE};
use super::index::BlobIndex;
use crate::error::Result;
use crate::fs::{FileSystem, WritableFile};
use crate::lsm::filename::blob_name;
use crate::lsm::version_edit::BlobFileAddition;
use crate::table::format::DBCompressionType;

/// How a job writes blob files (from the family's options).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlobWriteConfig {
    /// Values of at least this size go to blob files.
    pub min_blob_size: u64,
    /// A blob file is closed once it reaches this size.
    pub blob_file_size: u64,
    pub compression: DBCompressionType,
    pub column_family_id: u32,
}

struct OpenBlob {
    number: u64,
    file: Box<dyn WritableFile>,
    offset: u64,
    count: u64,
    bytes: u64,
}

/// The blob files of one output stream (a flush or a subcompaction).
pub(crate) struct BlobFileBuilder {
    cfg: BlobWriteConfig,
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    cur: Option<OpenBlob>,
    /// Files finished (footer written, synced).
    pub(crate) additions: Vec<BlobFileAddition>,
    /// Every file created, finished or not (removed if the job fails).
    pub(crate) created: Vec<u64>,
}

impl BlobFileBuilder {
    pub(crate) fn new(cfg: BlobWriteConfig, fs: Arc<dyn FileSystem>, dir: &Path) -> BlobFileBuilder {
        BlobFileBuilder {
            cfg,
            fs,
            dir: dir.to_path_buf(),
            cur: None,
            additions: Vec::new(),
            created: Vec::new(),
        }
    }

    /// Whether `value` goes to a blob file.
    pub(crate) fn wants(&self, value: &[u8]) -> bool {
        value.len() as u64 >= self.cfg.min_blob_size
    }

    /// Append the blob of `user_key` to the open blob file (opening one numbered by
    /// `new_number` if none is); returns the blob index the table stores instead of the value.
    pub(crate) fn add(
        &mut self,
        user_key: &[u8],
        value: &[u8],
        new_number: &mut dyn FnMut() -> u64,
    ) -> Result<Vec<u8>> {
        if self.cur.is_none() {
            let number = new_number();
            self.created.push(number);
            let mut file = self.fs.new_writable(&blob_name(&self.dir, number))?;
            let header = BlobHeader {
                column_family_id: self.cfg.column_family_id,
                compression: self.cfg.compression as u8,
                has_ttl: false,
                expiration_range: (0, 0),
            };
            file.append(&header.encode())?;
            self.cur = Some(OpenBlob {
                number,
                file,
                offset: super::format::HEADER_SIZE,
                count: 0,
                bytes: 0,
            });
        }
        let stored = compress_blob(self.cfg.compression, value)?;
        let o = self.cur.as_mut().expect("opened above");
        let header = encode_record_header(user_key, &stored, 0);
        o.file.append(&header)?;
        o.file.append(user_key)?;
        o.file.append(&stored)?;
        let value_offset = o.offset + RECORD_HEADER_SIZE + user_key.len() as u64;
        let record = RECORD_HEADER_SIZE + user_key.len() as u64 + stored.len() as u64;
        o.offset += record;
        o.count += 1;
        o.bytes += record;
        let index = BlobIndex::encode_blob(o.number, value_offset, stored.len() as u64, self.cfg.compression as u8);
        if o.offset >= self.cfg.blob_file_size {
            self.close_current()?;
        }
        Ok(index)
    }

    /// Write the open file's footer and sync it.
    fn close_current(&mut self) -> Result<()> {
        let Some(mut o) = self.cur.take() else {
            return Ok(());
        };
        let footer = BlobFooter {
            blob_count: o.count,
            expiration_range: (0, 0),
        };
        o.file.append(&footer.encode())?;
        o.file.sync()?;
        self.additions.push(BlobFileAddition {
            blob_file_number: o.number,
            total_blob_count: o.count,
            total_blob_bytes: o.bytes,
            ..Default::default()
        });
        Ok(())
    }

    /// Close the open file: every file written is then complete and synced. The caller syncs
    /// the directory before the MANIFEST edit that names them.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.close_current()
    }

    /// Remove every file this builder created (the job failed; no version names them).
    pub(crate) fn abandon(&mut self) {
        self.cur = None;
        for n in self.created.drain(..) {
            let _ = self.fs.remove_file(&blob_name(&self.dir, n));
        }
        self.additions.clear();
    }
}
