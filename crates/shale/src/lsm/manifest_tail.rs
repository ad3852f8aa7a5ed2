//! Tailing a live MANIFEST, as a secondary instance does: remember the MANIFEST read and the
//! offset just past the last edit applied, and on each read apply only the records written
//! since. A record still being appended (torn at the end of the file) ends a read and is read
//! whole by a later one; an atomic group is applied once all of its edits are there. When
//! CURRENT names another MANIFEST (the primary reopened, or its MANIFEST grew too large), the
//! new one is read from its start. The versions built reuse the `FileMeta`s of tables the
//! last published version held, so a table opened once stays open (also across a trivial move
//! to another level), and only tables new to the version are opened.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use super::blob_files::BlobFiles;
use super::version::{
    manifest_missing, read_current, CfLookup, CfVersion, FileLife, FileMeta, Levels, ManifestReplay, VersionSet,
    DEFAULT_COLUMN_FAMILY_NAME,
};
use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem};
use crate::log;
use crate::log::DBRecoveryMode;
use crate::lsm::filename::manifest_name;

/// What a tail has replayed of one MANIFEST: the version set's counters and families, each
/// family's files by level, and which required fields were seen.
struct Replayed {
    vs: VersionSet,
    levels: BTreeMap<u32, Levels>,
    /// Each family's blob files as the edits so far leave them.
    blobs: BTreeMap<u32, BlobFiles>,
    have: [bool; 3],
}

/// A MANIFEST followed from one read to the next (see the module comment).
#[derive(Default)]
pub(crate) struct ManifestTail {
    /// The MANIFEST's number, the offset where its next unread record starts and what was
    /// replayed before it; None: nothing read yet (or a read failed and the next starts over).
    read: Option<(u64, u64, Replayed)>,
    /// The files of the last version published, by number.
    lives: HashMap<u64, Arc<FileLife>>,
}

/// One read of a [`ManifestTail`].
pub(crate) struct TailRead {
    /// The version set as of the last edit applied (its files' `FileMeta`s reused where the
    /// last published version held them).
    pub vs: VersionSet,
    /// Whether CURRENT named a MANIFEST other than the one read before (it was read from its
    /// start).
    pub switched: bool,
    /// Edits applied by this read.
    pub records: usize,
    /// Bytes read by this read.
    pub bytes: u64,
    /// The MANIFEST ended in a record not whole yet (offset and reason); a later read reads it.
    pub torn: Option<(u64, String)>,
}

impl ManifestTail {
    /// Read what CURRENT's MANIFEST gained since the last read. An error (a MANIFEST that is
    /// corrupt before its end, an edit that does not apply) leaves nothing half-applied: the
    /// next read starts over from the MANIFEST's start.
    pub(crate) fn read(
        &mut self,
        dir: &Path,
        fs: &Arc<dyn FileSystem>,
        lookup: CfLookup<'_>,
        paranoid: bool,
    ) -> Result<TailRead> {
        let mut read_on = || -> Result<TailRead> {
            let mnum = read_current(dir, &**fs)?;
            let (switched, offset, replayed) = match self.read.take() {
                Some((n, off, r)) if n == mnum => (false, off, r),
                _ => {
                    let (icmp, levels) = lookup(DEFAULT_COLUMN_FAMILY_NAME)
                        .ok_or_else(|| Error::invalid("the default column family must be opened"))?;
                    let mut vs = VersionSet::new_empty(dir, fs.clone(), icmp, levels);
                    vs.manifest_number = mnum;
                    let mut lv = BTreeMap::new();
                    lv.insert(0, vec![BTreeMap::new(); levels]);
                    (
                        true,
                        0,
                        Replayed {
                            vs,
                            levels: lv,
                            blobs: BTreeMap::new(),
                            have: [false; 3],
                        },
                    )
                }
            };
            let mpath = manifest_name(dir, mnum);
            let mfile = name_of(&mpath);
            let file = fs.open_random(&mpath).map_err(manifest_missing)?;
            let size = file.size();
            let base = offset - offset % log::BLOCK_SIZE as u64;
            let data = if size > base {
                file.read_at(base, (size - base) as usize)?
            } else {
                Vec::new()
            };
            drop(file);
            let bytes = size.saturating_sub(offset);
            let mut reader = log::Reader::resume(
                data,
                mfile.clone(),
                0,
                DBRecoveryMode::TolerateCorruptedTailRecords,
                offset,
            );
            let [have_log, have_next, have_last] = replayed.have;
            let mut replay = ManifestReplay {
                vs: replayed.vs,
                lookup,
                mfile: mfile.clone(),
                levels: replayed.levels,
                blobs: replayed.blobs,
                have_log,
                have_next,
                have_last,
            };
            let (applied_to, records) = replay.apply_records(&mut reader)?;
            replay.check_required_fields()?;
            let torn = reader.torn_tail();
            let replayed = Replayed {
                vs: replay.vs,
                levels: replay.levels,
                blobs: replay.blobs,
                have: [replay.have_log, replay.have_next, replay.have_last],
            };
            let vs = self.build(&replayed, &mfile, paranoid)?;
            self.read = Some((mnum, applied_to, replayed));
            Ok(TailRead {
                vs,
                switched,
                records,
                bytes,
                torn,
            })
        };
        let r = read_on();
        if r.is_err() {
            self.read = None;
        }
        r
    }

    /// The MANIFEST read and the offset of its next unread record.
    pub(crate) fn position(&self) -> Option<(u64, u64)> {
        self.read.as_ref().map(|(n, off, _)| (*n, *off))
    }

    /// The version `vs` was published: its tables are the ones later reads reuse.
    pub(crate) fn published(&mut self, vs: &VersionSet) {
        self.lives = vs.all_files().map(|(_, _, f)| (f.number(), f.life().clone())).collect();
    }

    /// A version set with `r`'s counters and families, whose versions hold `r`'s files.
    fn build(&self, r: &Replayed, mfile: &str, paranoid: bool) -> Result<VersionSet> {
        let src = &r.vs;
        let mut vs = VersionSet::new_empty(&src.dir, src.fs.clone(), src.cfs[&0].icmp.clone(), 1);
        vs.cfs = src
            .cfs
            .iter()
            .map(|(id, c)| {
                (
                    *id,
                    CfVersion {
                        name: c.name.clone(),
                        icmp: c.icmp.clone(),
                        current: c.current.clone(),
                        log_number: c.log_number,
                        compact_cursor: c.compact_cursor.clone(),
                        full_history_ts_low: c.full_history_ts_low.clone(),
                    },
                )
            })
            .collect();
        vs.skipped_cfs = src.skipped_cfs.clone();
        vs.max_column_family = src.max_column_family;
        vs.next_file_number = src.next_file_number;
        vs.last_sequence = src.last_sequence;
        vs.prev_log_number = src.prev_log_number;
        vs.min_log_number_to_keep = src.min_log_number_to_keep;
        vs.manifest_number = src.manifest_number;
        vs.db_id = src.db_id.clone();
        let reaper = vs.reaper.clone();
        vs.install_levels(
            r.levels.clone(),
            &mut r.blobs.clone(),
            mfile,
            paranoid,
            &mut |f, level| match self.lives.get(&f.number) {
                Some(life) => FileMeta::with_life(f, life.clone(), level),
                None => FileMeta::new_at(f, reaper.clone(), level),
            },
        )?;
        Ok(vs)
    }
}
