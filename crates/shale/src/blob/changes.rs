//! What a flush or compaction does to blob files: the files it wrote, and the garbage it makes
//! (RocksDB's blob garbage meter: per blob file, the blobs its inputs referenced minus those its
//! outputs still reference).

use std::collections::BTreeMap;
use std::path::Path;

use super::format::RECORD_HEADER_SIZE;
use super::index::BlobIndex;
use crate::fs::FileSystem;
use crate::lsm::filename::blob_name;
use crate::lsm::version_edit::{BlobFileAddition, BlobFileGarbage, VersionEdit};

/// Blob counts and bytes per blob file.
type Flow = BTreeMap<u64, (u64, u64)>;

/// A job's blob file changes.
#[derive(Default, Debug)]
pub(crate) struct BlobChanges {
    /// Blob files written, complete and synced.
    pub additions: Vec<BlobFileAddition>,
    /// Every blob file the job created (removed if the job fails).
    pub created: Vec<u64>,
    inflow: Flow,
    outflow: Flow,
}

/// The blob file and record size a blob index refers to (None: not a blob reference).
fn reference(user_key: &[u8], index: &[u8]) -> Option<(u64, u64)> {
    match BlobIndex::decode(index).ok()? {
        BlobIndex::Blob { file_number, size, .. } => {
            Some((file_number, RECORD_HEADER_SIZE + user_key.len() as u64 + size))
        }
        BlobIndex::InlinedTtl { .. } => None,
    }
}

fn count(flow: &mut Flow, r: Option<(u64, u64)>) {
    if let Some((file, bytes)) = r {
        let e = flow.entry(file).or_default();
        e.0 += 1;
        e.1 += bytes;
    }
}

impl BlobChanges {
    /// An input entry of type blob index.
    pub(crate) fn note_input(&mut self, user_key: &[u8], index: &[u8]) {
        count(&mut self.inflow, reference(user_key, index));
    }

    /// A blob index written to an output; returns the blob file it points into.
    pub(crate) fn note_output(&mut self, user_key: &[u8], index: &[u8]) -> Option<u64> {
        let r = reference(user_key, index);
        if r.is_some_and(|(f, _)| self.inflow.contains_key(&f)) {
            count(&mut self.outflow, r);
        }
        r.map(|(f, _)| f)
    }

    /// Fold in the changes of another part of the same job (a subcompaction).
    pub(crate) fn absorb(&mut self, other: BlobChanges) {
        self.additions.extend(other.additions);
        self.created.extend(other.created);
        for (flow, theirs) in [(&mut self.inflow, other.inflow), (&mut self.outflow, other.outflow)] {
            for (f, (c, b)) in theirs {
                let e = flow.entry(f).or_default();
                e.0 += c;
                e.1 += b;
            }
        }
    }

    /// The garbage per blob file: what the inputs referenced and the outputs do not.
    pub(crate) fn garbage(&self) -> Vec<BlobFileGarbage> {
        self.inflow
            .iter()
            .filter_map(|(&f, &(c, b))| {
                let (oc, ob) = self.outflow.get(&f).copied().unwrap_or_default();
                (c > oc).then(|| BlobFileGarbage {
                    blob_file_number: f,
                    garbage_blob_count: c - oc,
                    garbage_blob_bytes: b.saturating_sub(ob),
                })
            })
            .collect()
    }

    /// Record the blob files written and the garbage in the job's MANIFEST edit.
    pub(crate) fn add_to_edit(&self, edit: &mut VersionEdit) {
        edit.blob_file_additions.extend(self.additions.iter().cloned());
        edit.blob_file_garbages.extend(self.garbage());
    }

    /// Remove the blob files the job created (it failed; no version names them).
    pub(crate) fn remove_files(&self, fs: &dyn FileSystem, dir: &Path) {
        for &n in &self.created {
            let _ = fs.remove_file(&blob_name(dir, n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_inflow_minus_outflow_of_input_files_only() {
        let mut c = BlobChanges::default();
        let a = BlobIndex::encode_blob(5, 100, 10, 0);
        let b = BlobIndex::encode_blob(5, 200, 20, 0);
        let d = BlobIndex::encode_blob(6, 100, 30, 0);
        c.note_input(b"k1", &a);
        c.note_input(b"k2", &b);
        c.note_input(b"k3", &d);
        assert_eq!(c.note_output(b"k1", &a), Some(5));
        assert_eq!(c.note_output(b"k3", &d), Some(6));
        // a new file's blob is not outflow of an input file
        let n = BlobIndex::encode_blob(9, 100, 30, 0);
        assert_eq!(c.note_output(b"k9", &n), Some(9));
        let g = c.garbage();
        assert_eq!(
            g,
            vec![BlobFileGarbage {
                blob_file_number: 5,
                garbage_blob_count: 1,
                garbage_blob_bytes: 32 + 2 + 20,
            }]
        );
    }
}
