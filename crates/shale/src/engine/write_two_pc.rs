//! Two-phase-commit writes (RocksDB's WRITE_COMMITTED policy; `txn/prepared.rs` uses them): a
//! prepared section, a commit marker with the prepared records to insert, a rollback marker.
//! Each such writer leads a write group of its own (`write::run_writer` never groups it).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::mem_insert::insert_batch;
use super::state::DbInner;
use super::switch::make_room;
use super::write_group::{finish_group, mode, next_free_sequence, wal_append, Mode};
use super::write_thread::{self, Writer};
use crate::engine::write_thread::TwoPcWrite;
use crate::error::{Error, Result};
use crate::write_batch::WriteBatch;

/// A two-phase-commit writer's group (it has no followers): its marker record goes to the WAL
/// with the next sequence number; a commit then inserts the prepared records with the sequence
/// numbers from there and is published as any group.
pub(super) fn two_pc_group(
    db: &Arc<DbInner>,
    leader: &Arc<Writer>,
    mut wal_batch: WriteBatch,
    kind: TwoPcWrite,
    handed_off: &mut bool,
) -> Result<()> {
    let sync = leader.sync;
    let (data, prep_log) = match &kind {
        TwoPcWrite::Commit { data, prep_log } => (Some(data), *prep_log),
        _ => (None, 0),
    };
    let n = data.map_or(0, |d| d.count() as u64);
    let size = wal_batch.size_in_bytes() + data.map_or(0, |d| d.size_in_bytes());
    let mems = make_room(db, size as u64)?;
    let pipe = &db.pipeline;
    let first = next_free_sequence(db);
    wal_batch.set_sequence(first);
    let wal = wal_append(db, &wal_batch, sync);
    if let Ok(log) = &wal {
        leader.log_used.store(*log, Ordering::Release);
        if matches!(kind, TwoPcWrite::Prepare) {
            db.two_pc.mark_prep_log(*log);
        }
    }
    let Some(data) = data.filter(|_| n > 0) else {
        // Markers use no sequence number (RocksDB's WRITE_COMMITTED: a prepare skips the
        // memtable, a rollback or an empty commit has no records).
        return wal.map(|_| ());
    };
    let last = first + n - 1;
    pipe.allocated.store(last, Ordering::Relaxed);
    let mode = mode(db);
    let unordered = mode == Mode::Unordered && wal.is_ok();
    let early_exit = matches!(mode, Mode::Pipelined | Mode::Unordered);
    let mut group = write_thread::Group::new(
        1,
        first,
        last,
        mems,
        leader.clone(),
        Vec::new(),
        !unordered,
        sync,
        size as u64,
    );
    group.wal_error = wal.err();
    group.holds_queue = !early_exit;
    let group = Arc::new(group);
    pipe.in_flight.fetch_add(1, Ordering::AcqRel);
    if unordered {
        db.last_seq.store(last, Ordering::Release);
    }
    *handed_off = true;
    if early_exit {
        write_thread::leave_queue(&db.writers, 0);
    }
    let mine = if group.wal_error.is_some() {
        Ok(())
    } else {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<()> {
            // The memtables this commit writes need the prepared section's WAL until they are
            // flushed (recovery replays the commit from it).
            for rec in data.records() {
                if let Some(cf) = rec?.column_family() {
                    if let Some((_, m)) = group.mems.iter().find(|(id, _)| *id == cf) {
                        m.ref_prep_log(prep_log);
                    }
                }
            }
            insert_batch(&group.mems, first, data)
        }))
        .unwrap_or_else(|p| Err(Error::from_panic("memtable insert", p)))
    };
    if group.finished(mine.err()) {
        finish_group(db, &group);
    }
    leader.wait_done()
}
