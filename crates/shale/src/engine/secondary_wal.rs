//! The WAL side of a secondary instance's catch-up: each WAL is read from where the last
//! catch-up stopped, and each family keeps one memtable per WAL whose records it holds, so
//! that when the primary's MANIFEST says a family's data of a WAL is in its tables (the WAL is
//! below the family's log number) exactly that WAL's memtables are dropped.
//!
//! Invariant: after a catch-up, a family's memtables hold exactly the records a fresh open of
//! the primary would replay for it from the WALs read — every record of each WAL numbered at
//! or above the family's log number, up to where the catch-up stopped reading (the first
//! record not whole yet). Records are inserted into memtables readers may hold, but with
//! sequence numbers above the published last sequence, so no reader sees them before the
//! catch-up publishes; a record at or below it (the MANIFEST's last sequence can run ahead of
//! the WAL read) goes into a new memtable instead.

use std::collections::VecDeque;
use std::sync::Arc;

use super::column_family::{ColumnFamilyData, ImmMem, MemSet};
use super::secondary_tails::{TailMem, WalTail};
use super::state::DbInner;
use super::two_pc_replay::RecoveryInserter;
use crate::error::Result;
use crate::fs::name_of;
use crate::log;
use crate::log::DBRecoveryMode;
use crate::lsm::filename::wal_name;
use crate::lsm::version::VersionSet;
use crate::memtable::MemTable;
use crate::write_batch::WriteBatch;

/// What one WAL gained since the last catch-up read it: its bytes from the start of the block
/// of `offset` (where its next unread record starts) to its end.
pub(crate) struct WalBytes {
    num: u64,
    offset: u64,
    data: Vec<u8>,
}

/// What a replay did.
#[derive(Default)]
pub(crate) struct Replayed {
    pub records: u64,
    pub bytes: u64,
    /// The last sequence number of the records replayed, if any.
    pub last_seq: Option<u64>,
}

/// Times a WAL is read again when it shrank under the read.
const SHRINK_RETRIES: u32 = 3;

/// The bytes of WAL `num` from offset `base` to its end. A WAL can shrink while it is read: a
/// primary that writes zeros ahead of a WAL's end cuts them off when it closes the WAL (at a
/// WAL switch), so a read of the size seen at the open may come up short; it is read again at
/// its new size (the zeros cut off were past its records).
fn read_from(db: &DbInner, num: u64, base: u64) -> Result<Vec<u8>> {
    let path = wal_name(&db.path, num);
    let mut tries = 0;
    loop {
        let f = db.fs.open_random(&path)?;
        let size = f.size();
        if size <= base {
            return Ok(Vec::new());
        }
        match f.read_at(base, (size - base) as usize) {
            Ok(data) => return Ok(data),
            Err(e) => {
                tries += 1;
                let shrank = db.fs.file_size(&path).is_ok_and(|now| now < size);
                if !shrank || tries > SHRINK_RETRIES {
                    return Err(e);
                }
            }
        }
    }
}

impl WalTail {
    /// Read the new bytes of each of `wals` (ascending) at once: the primary may delete a WAL
    /// any time after the MANIFEST says its data is in tables.
    pub(crate) fn read_new(&self, db: &DbInner, wals: &[u64]) -> Result<Vec<WalBytes>> {
        let mut out = Vec::with_capacity(wals.len());
        for &num in wals {
            let offset = self.offsets.get(&num).copied().unwrap_or(0);
            let base = offset - offset % log::BLOCK_SIZE as u64;
            let data = read_from(db, num, base)?;
            out.push(WalBytes { num, offset, data });
        }
        Ok(out)
    }

    /// Forget WALs not in `wals` (the primary deleted them, or they are below every family's
    /// log number) and drop each family's memtables of WALs below its log number in `vs`
    /// (their data is in the family's tables now).
    pub(crate) fn retire(&mut self, vs: &VersionSet, wals: &[u64]) {
        self.offsets.retain(|n, _| wals.binary_search(n).is_ok());
        for (id, mems) in self.mems.iter_mut() {
            let log_number = vs.cfs.get(id).map_or(u64::MAX, |c| c.log_number);
            mems.retain(|m| m.wal >= log_number);
        }
    }

    /// Replay the records `new` holds (WALs in ascending order) into the families' memtables:
    /// a record goes to the families whose log number in `vs` is at or below its WAL's. The
    /// first record that does not read back whole (still being written) ends the replay; the
    /// next catch-up starts there. `published_seq`: the last sequence readers may see.
    pub(crate) fn replay(
        &mut self,
        db: &DbInner,
        families: &[Arc<ColumnFamilyData>],
        vs: &VersionSet,
        new: Vec<WalBytes>,
        published_seq: u64,
    ) -> Result<Replayed> {
        let mut done = Replayed::default();
        for w in new {
            let name = name_of(&wal_name(&db.path, w.num));
            let mut reader = log::Reader::resume(w.data, name.clone(), w.num, DBRecoveryMode::PointInTime, w.offset);
            let start = w.offset;
            let mut stop = false;
            while let Some(r) = reader.read_record()? {
                let rec = r.to_vec();
                let off = reader.last_record_offset();
                // A record that does not decode is one still being copied (mapped appends):
                // the replay stops before it, as at a torn tail.
                let Ok(batch) = WriteBatch::decode(rec) else {
                    stop = true;
                    break;
                };
                let seq = batch.sequence();
                let mems: MemSet = families
                    .iter()
                    .filter(|c| vs.cfs.get(&c.id).is_some_and(|v| w.num >= v.log_number))
                    .map(|c| (c.id, self.target(db, c, w.num, seq, published_seq)))
                    .collect();
                let mut ins = RecoveryInserter::new(db, &mems, seq, w.num);
                batch
                    .handle(&mut ins)
                    .and_then(|_| ins.check_finished())
                    .map_err(|e| e.in_file(&name, Some(off)))?;
                let next = ins.ins.seq();
                drop(ins);
                for (_, mem) in &mems {
                    mem.update_charge();
                    mem.range_dels.refresh(mem.icmp());
                }
                if next > seq {
                    done.last_seq = Some(done.last_seq.unwrap_or(0).max(next - 1));
                }
                done.records += 1;
                self.offsets.insert(w.num, reader.end_offset());
            }
            let end = self.offsets.entry(w.num).or_insert(start);
            done.bytes += *end - start;
            if stop || reader.corruption().is_some() || reader.torn_tail().is_some() {
                break;
            }
        }
        Ok(done)
    }

    /// The memtable family `cfd`'s records of WAL `wal` starting at sequence `seq` go into.
    fn target(
        &mut self,
        db: &DbInner,
        cfd: &ColumnFamilyData,
        wal: u64,
        seq: u64,
        published_seq: u64,
    ) -> Arc<MemTable> {
        let mems = self.mems.entry(cfd.id).or_default();
        match mems.last() {
            Some(m) if m.wal == wal && (!m.published || seq > published_seq) => m.mem.clone(),
            _ => {
                let mem = db.new_memtable(cfd);
                mems.push(TailMem {
                    wal,
                    mem: mem.clone(),
                    published: false,
                });
                mem
            }
        }
    }

    /// Family `id`'s memtables to publish: the newest (a new empty one, `fresh`, when it has
    /// none) and the older ones, oldest first; all are published from here on.
    pub(crate) fn publish(
        &mut self,
        id: u32,
        fresh: impl FnOnce() -> Arc<MemTable>,
    ) -> (Arc<MemTable>, VecDeque<ImmMem>) {
        let mems = self.mems.entry(id).or_default();
        for m in mems.iter_mut() {
            m.published = true;
        }
        let Some((last, older)) = mems.split_last() else {
            return (fresh(), VecDeque::new());
        };
        let imm = older
            .iter()
            .map(|m| ImmMem {
                mem: m.mem.clone(),
                next_log: m.wal + 1,
                flush_requested: false,
            })
            .collect();
        (last.mem.clone(), imm)
    }

    /// How many memtables the families hold (for the LOG).
    pub(crate) fn memtables(&self) -> usize {
        self.mems.values().map(|v| v.len()).sum()
    }
}
