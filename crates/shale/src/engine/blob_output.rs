//! The blob side of writing tables: large values go to blob files and the table gets their
//! blob index; blob indexes into the oldest blob files are relocated (garbage collection); the
//! blob indexes the job reads and writes are metered into garbage.

use std::path::Path;
use std::sync::Arc;

use super::key_compaction::KEntry;
use crate::blob::changes::BlobChanges;
use crate::blob::index::BlobIndex;
use crate::blob::reader::BlobFileCache;
use crate::blob::writer::{BlobFileBuilder, BlobWriteConfig};
use crate::error::Result;
use crate::fs::FileSystem;
use crate::key::vt;

/// How one output stream (a flush, a compaction or one of its subcompactions) treats blobs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BlobPolicy {
    /// Write large values to blob files (None: values stay in the table).
    pub write: Option<BlobWriteConfig>,
    /// Garbage collection: blobs in files numbered below this are rewritten (0: none).
    pub relocate_below: u64,
}

/// The blob state of one output stream.
pub(crate) struct BlobOutput {
    policy: BlobPolicy,
    builder: Option<BlobFileBuilder>,
    cache: Arc<BlobFileCache>,
    pub changes: BlobChanges,
}

impl BlobOutput {
    pub(crate) fn new(
        policy: BlobPolicy,
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        cache: Arc<BlobFileCache>,
    ) -> BlobOutput {
        BlobOutput {
            builder: policy.write.map(|cfg| BlobFileBuilder::new(cfg, fs.clone(), dir)),
            policy,
            cache,
            changes: BlobChanges::default(),
        }
    }

    /// An input entry: blob indexes are metered.
    #[inline]
    pub(crate) fn note_input(&mut self, user_key: &[u8], vtype: u8, value: &[u8]) {
        if vtype == vt::BLOB_INDEX {
            self.changes.note_input(user_key, value);
        }
    }

    /// Before the per-key rules run: a key with merge operands gets its blob values read, so
    /// the merge sees the value (as RocksDB's compaction reads a blob it must merge).
    pub(crate) fn resolve_for_merge(&self, user_key: &[u8], entries: &mut [KEntry]) -> Result<()> {
        if !entries.iter().any(|e| e.vtype == vt::MERGE) {
            return Ok(());
        }
        for e in entries.iter_mut().filter(|e| e.vtype == vt::BLOB_INDEX) {
            e.value = self.cache.resolve(user_key, &e.value, true)?;
            e.vtype = vt::VALUE;
        }
        Ok(())
    }

    /// What is written for a kept entry: a large value becomes a blob index (its blob
    /// appended to the open blob file, numbered by `new_number`); a blob index into a file
    /// being collected is read and written again the same way. `None`: the entry as it is.
    pub(crate) fn output(
        &mut self,
        user_key: &[u8],
        vtype: u8,
        value: &[u8],
        new_number: &mut dyn FnMut() -> u64,
    ) -> Result<Option<(u8, Vec<u8>)>> {
        let relocated;
        let value = match vtype {
            vt::VALUE => value,
            vt::BLOB_INDEX if self.policy.relocate_below > 0 => match BlobIndex::decode(value) {
                Ok(BlobIndex::Blob {
                    file_number,
                    expiration: None,
                    ..
                }) if file_number < self.policy.relocate_below => {
                    relocated = self.cache.resolve(user_key, value, true)?;
                    &relocated
                }
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let Some(b) = self.builder.as_mut().filter(|b| b.wants(value)) else {
            // A relocated blob too small for a blob file (or blobs off) goes back in the table.
            return Ok((vtype == vt::BLOB_INDEX).then(|| (vt::VALUE, value.to_vec())));
        };
        let index = b.add(user_key, value, new_number)?;
        Ok(Some((vt::BLOB_INDEX, index)))
    }

    /// Close the open blob file (footer, sync); its addition joins the changes.
    pub(crate) fn finish(&mut self) -> Result<()> {
        if let Some(b) = self.builder.as_mut() {
            b.finish()?;
            self.changes.additions.append(&mut b.additions);
            self.changes.created.append(&mut b.created);
        }
        Ok(())
    }

    /// The stream failed: remove every blob file it created.
    pub(crate) fn abandon(&mut self) {
        if let Some(b) = self.builder.as_mut() {
            b.abandon();
        }
    }
}
