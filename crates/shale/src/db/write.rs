//! The write path: group commit (one WAL write and at most one sync for a whole group of
//! waiting writers), memtable insert, then publication of the new last sequence. Also the
//! memtable switch and write stalls.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::write_thread::{self, ExclusiveOp, InsertTask, Role, Writer};
use super::{column_family::ColumnFamilyData, state::DbInner, state::DbState, state::ImmMem};
use crate::error::{Error, Result};
use crate::key::{vt, UserCmpKind};
use crate::log;
use crate::lsm::filename::wal_name;
use crate::memtable::{AddCounters, MemTable};
use crate::options::WriteOptions;
use crate::perf_context::{field as perf, PerfTimer};
use crate::statistics::{Histogram, StopWatch, Ticker};
use crate::write_batch::{oversize_reason, BatchHandler, WriteBatch};

/// A follower inserts its own batch (in parallel with the leader) only if it has at least this
/// many records; smaller ones cost less to insert than to hand off.
const PARALLEL_MIN_RECORDS: u64 = 1;

/// Most bytes one group carries (as RocksDB: 1 MiB, or less when the leader is small).
const MAX_GROUP_BYTES: usize = 1 << 20;

/// The mutable memtable of every live family, by id (what a write group inserts into).
pub(crate) type MemSet = Vec<(u32, Arc<MemTable>)>;

/// Checks a batch's records before they reach the WAL: each family exists, each key suits the
/// family's comparator, range deletions are ordered and merges have an operator.
struct Validate<'a> {
    db: &'a DbInner,
    cf: Arc<ColumnFamilyData>,
    keys: bool,
}
impl Validate<'_> {
    #[inline(always)]
    fn key(&self, k: &[u8]) -> Result<()> {
        if self.keys {
            self.cf.icmp.user_comparator().validate_key(k)
        } else {
            Ok(())
        }
    }
}
impl BatchHandler for Validate<'_> {
    fn put(&mut self, k: &[u8], _v: &[u8]) -> Result<()> {
        self.key(k)
    }
    fn delete(&mut self, k: &[u8]) -> Result<()> {
        self.key(k)
    }
    fn single_delete(&mut self, k: &[u8]) -> Result<()> {
        self.key(k)
    }
    fn delete_range(&mut self, b: &[u8], e: &[u8]) -> Result<()> {
        super::range_del::validate_range(&self.cf, b, e)
    }
    fn merge(&mut self, k: &[u8], _v: &[u8]) -> Result<()> {
        self.key(k)?;
        super::range_del::validate_merge(&self.cf)
    }
    fn set_cf(&mut self, cf: u32) -> Result<()> {
        self.cf = live_cf(self.db, cf)?;
        self.keys = self.cf.icmp.kind() != UserCmpKind::Bytewise;
        Ok(())
    }
}

/// The live family with id `cf`, or InvalidArgument (never created, or dropped).
pub(crate) fn live_cf(db: &DbInner, cf: u32) -> Result<Arc<ColumnFamilyData>> {
    db.cf_by_id(cf).filter(|c| !c.is_dropped()).ok_or_else(|| {
        Error::invalid(format!(
            "column family id {cf} does not exist (never created, or dropped)"
        ))
    })
}

/// The comparator's check of a key about to be written ([`Comparator::validate_key`]); the
/// bytewise comparator accepts everything, so its writes skip the call.
///
/// [`Comparator::validate_key`]: crate::Comparator::validate_key
#[inline]
pub(crate) fn check_key(cf: &ColumnFamilyData, k: &[u8]) -> Result<()> {
    if cf.icmp.kind() == UserCmpKind::Bytewise {
        return Ok(());
    }
    cf.icmp.user_comparator().validate_key(k)
}

/// A write to family `cf` is refused once the family is dropped (a handle outlives the drop).
pub(crate) fn check_writable(cf: &ColumnFamilyData) -> Result<()> {
    if cf.is_dropped() {
        return Err(Error::invalid(format!("column family {:?} was dropped", cf.name)));
    }
    Ok(())
}

/// Check that every record of a user batch can be applied (before anything reaches the WAL).
pub(crate) fn validate_batch(db: &DbInner, b: &WriteBatch) -> Result<()> {
    let cf = db.default_cf.clone();
    let keys = cf.icmp.kind() != UserCmpKind::Bytewise;
    b.iterate(&mut Validate { db, cf, keys })
}

/// Inserts a batch's records into the memtables of their families with consecutive sequence
/// numbers. A record for a family not in the set (dropped while the write waited: the write is
/// ordered before the drop; or, in recovery, a family that does not need this WAL) only takes
/// its sequence number. The memtable's counters are updated once per run of records of a
/// family (not once per record).
pub(crate) struct MemInserter<'a> {
    mems: &'a [(u32, Arc<MemTable>)],
    mem: Option<&'a MemTable>,
    seq: u64,
    counters: AddCounters,
}

impl<'a> MemInserter<'a> {
    /// The sequence number the next record takes.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }
    pub(crate) fn new(mems: &'a [(u32, Arc<MemTable>)], seq: u64) -> Self {
        MemInserter {
            mems,
            mem: find_mem(mems, 0),
            seq,
            counters: AddCounters::default(),
        }
    }
    #[inline]
    fn add(&mut self, vtype: u8, k: &[u8], v: &[u8]) -> Result<()> {
        // Writes refuse such records before the WAL (`WriteBatch::validate`); a WAL written
        // elsewhere may still carry one, and the memtable cannot hold it.
        if let Some(why) = oversize_reason(k.len(), v.len()) {
            return Err(Error::corrupt(format!("WAL record at sequence {}: {why}", self.seq)));
        }
        if let Some(mem) = self.mem {
            mem.add_deferred(self.seq, vtype, k, v, &mut self.counters);
        }
        self.seq += 1;
        Ok(())
    }
    fn apply_counters(&mut self) {
        if let Some(m) = self.mem {
            m.apply_counters(&self.counters);
        }
        self.counters = AddCounters::default();
    }
}

#[inline]
fn find_mem(mems: &[(u32, Arc<MemTable>)], cf: u32) -> Option<&MemTable> {
    mems.iter().find(|(id, _)| *id == cf).map(|(_, m)| &**m)
}

impl Drop for MemInserter<'_> {
    fn drop(&mut self) {
        self.apply_counters();
    }
}

impl BatchHandler for MemInserter<'_> {
    fn put(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        self.add(vt::VALUE, k, v)
    }
    fn delete(&mut self, k: &[u8]) -> Result<()> {
        self.add(vt::DELETION, k, &[])
    }
    fn single_delete(&mut self, k: &[u8]) -> Result<()> {
        self.add(vt::SINGLE_DELETION, k, &[])
    }
    fn delete_range(&mut self, b: &[u8], e: &[u8]) -> Result<()> {
        if let Some(mem) = self.mem {
            super::range_del::mem_add_range_tombstone(mem, self.seq, b, e);
        }
        self.seq += 1;
        Ok(())
    }
    fn merge(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        self.add(vt::MERGE, k, v)
    }
    fn set_cf(&mut self, cf: u32) -> Result<()> {
        self.apply_counters();
        self.mem = find_mem(self.mems, cf);
        Ok(())
    }
}

pub(crate) fn write(db: &Arc<DbInner>, wo: &WriteOptions, batch: WriteBatch, _user_batch: bool) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported("write to a database opened read-only".into()));
    }
    if wo.sync && wo.disable_wal {
        return Err(Error::invalid(
            "WriteOptions: sync and disable_wal are mutually exclusive",
        ));
    }
    // A key or value too large to store was dropped from the batch when it was added: refuse
    // the whole batch before any of it reaches the WAL.
    batch.validate()?;
    if wo.no_slowdown {
        super::stall::check_no_slowdown(db)?;
    }
    let _watch = StopWatch::start(&db.stats, Histogram::DbWrite);
    if let Some(s) = &db.stats {
        s.record(Histogram::BytesPerWrite, batch.size_in_bytes() as u64);
    }
    let w = Arc::new(Writer::new(Some(batch), wo.sync, wo.disable_wal, false));
    run_writer(db, w)
}

/// Append one record to the current WAL (flushed to the OS, synced with `sync`); returns the
/// WAL's number. A failure becomes the background error (fail-stop).
pub(super) fn wal_append(db: &DbInner, batch: &WriteBatch, sync: bool) -> Result<u64> {
    let mut wal = db.wal.lock();
    let number = wal.number;
    let r = (|| -> Result<()> {
        let w = wal.writer.as_mut().ok_or_else(|| Error::invalid("no WAL is open"))?;
        w.add_record(batch.data())?;
        if sync {
            let _watch = StopWatch::start(&db.stats, Histogram::WalFileSyncMicros);
            w.sync()?;
            crate::statistics::tick(&db.stats, Ticker::WalFileSynced, 1);
        } else if !db.opts.manual_wal_flush {
            w.flush()?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => {
            wal.unsynced = !sync;
            Ok(number)
        }
        Err(e) => {
            drop(wal);
            // Fail-stop: no later write may succeed after a WAL failure.
            let mut st = db.state.lock();
            if st.bg_error.is_none() {
                st.bg_error = Some(e.clone());
            }
            db.bg_cv.notify_all();
            Err(e)
        }
    }
}

/// The first sequence number not yet handed out: after the last one allocated to a group (which
/// may still be inserting) and the last one published.
pub(super) fn next_free_sequence(db: &DbInner) -> u64 {
    db.pipeline
        .allocated
        .load(Ordering::Relaxed)
        .max(db.last_seq.load(Ordering::Acquire))
        + 1
}

/// Switch the memtables of families `cfs` through the write queue (so no write is in flight).
pub(crate) fn force_switch(db: &Arc<DbInner>, cfs: Vec<u32>) -> Result<()> {
    let d = db.clone();
    exclusive(db, Box::new(move || switch_now(&d, &cfs)))
}

/// Run `op` as the write leader, alone: no write is in flight while it runs (a memtable
/// switch, a family created or dropped).
pub(crate) fn exclusive(db: &Arc<DbInner>, op: ExclusiveOp) -> Result<()> {
    let w = Arc::new(Writer::new(None, false, true, true));
    *w.op.lock() = Some(op);
    run_writer(db, w)
}

/// Insert one writer's batch (a follower's part of a parallel insert).
pub(super) fn insert_batch(mems: &MemSet, seq: u64, b: &WriteBatch) -> Result<()> {
    b.iterate(&mut MemInserter::new(mems, seq))
}

/// A follower's part of its group's memtable stage, on its own thread; the last member to
/// finish publishes the group.
fn follower_insert(db: &DbInner, w: &Writer, task: InsertTask) {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match w.batch.lock().as_ref() {
        Some(b) => insert_batch(&task.group.mems, task.seq, b),
        None => Ok(()),
    }))
    .unwrap_or_else(|p| Err(Error::from_panic("memtable insert", p)));
    if task.group.finished(r.err()) {
        finish_group(db, &task.group);
    }
}

/// How a DB's write groups pass from the WAL to the memtables.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Mode {
    /// The leader inserts the whole group (the memtable takes no concurrent inserts, or
    /// `allow_concurrent_memtable_write` is off); the next group waits for this one.
    Serial,
    /// Members insert their own batches in parallel; the next group's WAL write waits until
    /// this group is published (RocksDB's default).
    Parallel,
    /// `enable_pipelined_write`: the next group's WAL write overlaps this group's inserts;
    /// groups are still published whole and in order.
    Pipelined,
    /// `unordered_write`: the group's sequence is published right after its WAL write and its
    /// inserts run unordered with later groups' (a snapshot may see part of a group until its
    /// inserts end, as RocksDB documents).
    Unordered,
}

pub(super) fn mode(db: &DbInner) -> Mode {
    let opts = &db.opts;
    if !(opts.allow_concurrent_memtable_write && db.concurrent_inserts.load(Ordering::Relaxed)) {
        Mode::Serial
    } else if opts.unordered_write {
        Mode::Unordered
    } else if opts.enable_pipelined_write {
        Mode::Pipelined
    } else {
        Mode::Parallel
    }
}

/// Wait until no write group is between its WAL write and its completion (before a memtable
/// switch or an exclusive operation, which the write leader runs).
pub(crate) fn drain_writes(db: &DbInner) -> Result<()> {
    let p = &db.pipeline;
    if p.in_flight.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    p.wait(|| p.in_flight.load(Ordering::Acquire) == 0)
}

pub(super) fn run_writer(db: &Arc<DbInner>, w: Arc<Writer>) -> Result<()> {
    let insert = |w: &Writer, t: InsertTask| follower_insert(db, w, t);
    if let Role::Done(r) = write_thread::join(&db.writers, &w, &insert) {
        return r;
    }
    if w.force_switch {
        // An exclusive operation: no group in flight, none started until it ends.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drain_writes(db)?;
            match w.op.lock().take() {
                Some(op) => op(),
                None => Ok(()),
            }
        }))
        .unwrap_or_else(|p| {
            let e = Error::from_panic("write group", p);
            stop_after_torn_insert(db, e.clone());
            Err(e)
        });
        write_thread::leave_queue(&db.writers, 0);
        return r;
    }
    // We lead: gather a group of compatible writers from the front of the queue (followers
    // only; no allocation when we write alone).
    let mut followers: Vec<Arc<Writer>> = Vec::new();
    {
        let q = db.writers.lock();
        let lead_size = w.batch.lock().as_ref().map(|b| b.size_in_bytes()).unwrap_or(0);
        let max = if lead_size <= 128 << 10 {
            lead_size + (128 << 10)
        } else {
            MAX_GROUP_BYTES
        };
        let mut size = lead_size;
        let alone = w.two_pc.lock().is_some();
        for other in q.iter().skip(1) {
            if alone || other.force_switch || other.disable_wal != w.disable_wal || other.two_pc.lock().is_some() {
                break;
            }
            let s = other.batch.lock().as_ref().map(|b| b.size_in_bytes()).unwrap_or(0);
            if size + s > max {
                break;
            }
            size += s;
            followers.push(other.clone());
        }
    }
    // The leader's work runs user code (comparator, merge operator) and must never leave the
    // queue blocked: a panic becomes an error for the whole group and a background error that
    // stops every later write (the memtable may hold part of the group's batch).
    let mut handed_off = false;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        write_group(db, &w, &followers, &mut handed_off)
    }))
    .unwrap_or_else(|p| {
        let e = Error::from_panic("write group", p);
        stop_after_torn_insert(db, e.clone());
        Err(e)
    });
    if !handed_off {
        // The group never reached its memtable stage (nothing to write, or it failed before
        // its WAL write): its members end here.
        write_thread::leave_queue(&db.writers, followers.len());
        for f in &followers {
            f.complete(r.clone());
        }
    }
    r
}

/// A group's memtable insert panicked or failed after its WAL record was written: the memtable
/// may hold part of it under unpublished sequence numbers. Stop writes for good (no `resume()`;
/// a reopen replays the WAL).
fn stop_after_torn_insert(db: &DbInner, e: Error) {
    db.pipeline.set_broken(e.clone());
    let mut st = db.state.lock();
    st.write_panicked = true;
    if st.bg_error.is_none() {
        st.bg_error = Some(e);
    }
    db.bg_cv.notify_all();
}

pub(crate) fn switch_now(db: &Arc<DbInner>, cfs: &[u32]) -> Result<()> {
    let mut st = db.state.lock();
    DbInner::check_bg_error(&st)?;
    let non_empty: Vec<u32> = cfs
        .iter()
        .copied()
        .filter(|id| {
            st.cfs
                .get(id)
                .is_some_and(|m| m.mem.num_entries() > 0 || !m.mem.range_dels.is_empty())
        })
        .collect();
    if non_empty.is_empty() && !st.wal_switch_pending {
        return Ok(());
    }
    // After `resume()` the WAL is switched even with empty memtables, and their (empty) flush
    // records the new WAL as the families' log number: the old WAL, which may end in a torn
    // record, is never replayed again.
    let non_empty = if non_empty.is_empty() { cfs.to_vec() } else { non_empty };
    // wait for room in the immutable lists
    let full = |st: &DbState| {
        non_empty.iter().any(|id| {
            st.cfs
                .get(id)
                .is_some_and(|m| m.imm.len() + 1 >= m.cfd.opts.max_write_buffer_number.max(2))
        })
    };
    while full(&st) {
        DbInner::check_bg_error(&st)?;
        check_not_cancelled(db)?;
        db.bg_cv.wait_for(&mut st, Duration::from_millis(100));
    }
    switch_memtable(db, &mut st, &non_empty)
}

fn write_group(
    db: &Arc<DbInner>,
    leader: &Arc<Writer>,
    followers: &[Arc<Writer>],
    handed_off: &mut bool,
) -> Result<()> {
    if let Some(kind) = leader.two_pc.lock().take() {
        let b = leader.batch.lock().take().unwrap_or_default();
        return super::write_two_pc::two_pc_group(db, leader, b, kind, handed_off);
    }
    let sync = leader.sync || followers.iter().any(|g| g.sync);
    let disable_wal = leader.disable_wal;
    let mode = mode(db);
    let leader_batch = leader.batch.lock().take().unwrap_or_default();
    let mut leader_batch = leader_batch;
    let leader_count = leader_batch.count() as u64;
    // The group's WAL record: the leader's batch followed by each follower's (a writer alone
    // writes its own batch, copying nothing).
    let mut combined = (!followers.is_empty()).then(|| {
        let mut b = leader_batch.clone();
        for g in followers {
            if let Some(fb) = g.batch.lock().as_ref() {
                b.append_batch(fb);
            }
        }
        b
    });
    let (size, count) = {
        let b = combined.as_ref().unwrap_or(&leader_batch);
        (b.size_in_bytes(), b.count() as u64)
    };
    let mems = make_room(db, size as u64)?;
    if count == 0 {
        return Ok(());
    }
    // Earlier groups may still be inserting (pipelined or unordered writes): number after the
    // last sequence handed out, not the last published one.
    let pipe = &db.pipeline;
    let first = next_free_sequence(db);
    let last = first + count - 1;
    pipe.allocated.store(last, Ordering::Relaxed);
    leader_batch.set_sequence(first);
    if let Some(b) = combined.as_mut() {
        b.set_sequence(first);
    }
    let batch = combined.as_ref().unwrap_or(&leader_batch);
    let mut wal_error = None;
    if let Some(s) = db.stats.as_ref().and_then(|s| s.local()) {
        // as RocksDB's WriteImpl, once per group by its leader
        s.tick(Ticker::NumberKeysWritten, count);
        s.tick(Ticker::BytesWritten, size as u64);
        s.tick(Ticker::WriteDoneBySelf, 1);
        if !followers.is_empty() {
            s.tick(Ticker::WriteDoneByOther, followers.len() as u64);
        }
        if !disable_wal {
            s.tick(Ticker::WriteWithWal, 1 + followers.len() as u64);
            s.tick(Ticker::WalFileBytes, batch.data().len() as u64);
        }
    }
    let mut perf_timer = PerfTimer::start();
    if disable_wal {
        db.unpersisted_data.store(true, Ordering::Release);
    } else if let Err(e) = wal_append(db, batch, sync) {
        wal_error = Some(e);
    }
    // Followers still awake insert their own batches; the leader inserts its own and those of
    // parked followers (waking one would cost more than inserting for it). A group whose WAL
    // write failed inserts nothing: it only uses up its sequence numbers, in order (the record
    // may have reached the WAL and be replayed by recovery, so a write after `resume()` must
    // never reuse them).
    let mut own: Vec<(u64, &Writer)> = Vec::new();
    let mut helpers: Vec<(u64, &Writer)> = Vec::new();
    if wal_error.is_none() {
        let mut seq = first + leader_count;
        for g in followers {
            let n = g.batch.lock().as_ref().map(|b| b.count() as u64).unwrap_or(0);
            if mode == Mode::Serial || n < PARALLEL_MIN_RECORDS || g.is_parked() {
                own.push((seq, g));
            } else {
                helpers.push((seq, g));
            }
            seq += n;
        }
    }
    let unordered = mode == Mode::Unordered && wal_error.is_none();
    let early_exit = matches!(mode, Mode::Pipelined | Mode::Unordered);
    let mut group = write_thread::Group::new(
        1 + helpers.len(),
        first,
        last,
        mems,
        leader.clone(),
        followers.to_vec(),
        !unordered,
        sync,
        size as u64,
    );
    group.wal_error = wal_error;
    group.holds_queue = !early_exit;
    let group = Arc::new(group);
    pipe.in_flight.fetch_add(1, Ordering::AcqRel);
    if unordered {
        // Visible at once; the inserts below finish unordered with later groups'.
        db.last_seq.store(last, Ordering::Release);
    }
    *handed_off = true;
    perf_timer.lap(perf::WRITE_WAL_TIME);
    for &(seq, g) in &helpers {
        g.start_insert(InsertTask {
            seq,
            group: group.clone(),
        });
    }
    if early_exit {
        write_thread::leave_queue(&db.writers, followers.len());
    }
    let mine = if group.wal_error.is_some() {
        Ok(())
    } else {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<()> {
            insert_batch(&group.mems, first, &leader_batch)?;
            for &(seq, g) in &own {
                if let Some(b) = g.batch.lock().as_ref() {
                    insert_batch(&group.mems, seq, b)?;
                }
            }
            Ok(())
        }))
        .unwrap_or_else(|p| Err(Error::from_panic("memtable insert", p)))
    };
    perf_timer.stop(perf::WRITE_MEMTABLE_TIME);
    if group.finished(mine.err()) {
        finish_group(db, &group);
    }
    if !helpers.is_empty() {
        db.write_stats.parallel_groups.fetch_add(1, Ordering::Relaxed);
    }
    leader.wait_done()
}

/// The last member of a group to finish its insert publishes the group — after every earlier
/// group, so readers never see part of a group or a gap — and completes every member. A group
/// whose turn has not come (an earlier one still inserts) waits in `Pipeline::unpublished`, and
/// whoever publishes the group before it publishes it too: no thread waits for another's inserts.
pub(super) fn finish_group(db: &DbInner, g: &Arc<write_thread::Group>) {
    let pipe = &db.pipeline;
    let mut insert_error = g.error.lock().take();
    if g.wal_error.is_none() && insert_error.is_none() {
        // Fragmenting orders the tombstones with the user comparator: a panic here is handled
        // as one in the inserts (unwinding would leave every member of the group waiting).
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for (_, mem) in g.mems.iter() {
                mem.update_charge();
                // Fragment the memtable's range tombstones once, here, so readers never do.
                mem.range_dels.refresh(mem.icmp());
            }
        }));
        if let Err(p) = r {
            insert_error = Some(Error::from_panic("range tombstone fragmenting", p));
        }
    }
    let r = match (&g.wal_error, insert_error) {
        (Some(e), _) => Err(e.clone()),
        (None, Some(e)) => {
            // Part of the group may be in the memtable under unpublished sequence numbers: the
            // group is never published, nor is any after it.
            stop_after_torn_insert(db, e.clone());
            Err(e)
        }
        (None, None) => Ok(()),
    };
    *g.result.lock() = Some(r);
    if !g.ordered {
        // unordered_write: published at the WAL write.
        complete_group(db, g);
        return;
    }
    let mut ready = Vec::new();
    {
        let mut waiting = pipe.unpublished.lock();
        if waiting.is_empty() && !pipe.is_broken() && db.last_seq.load(Ordering::Acquire) + 1 == g.first {
            // Its turn, and no group waits behind it (the common case): publish it alone.
            db.last_seq.store(g.last, Ordering::Release);
            drop(waiting);
            complete_group(db, g);
            return;
        }
        waiting.insert(g.first, g.clone());
        if pipe.is_broken() {
            // No group after the broken one is ever published: all fail.
            let e = pipe.broken_error();
            for (_, h) in std::mem::take(&mut *waiting) {
                let mut hr = h.result.lock();
                if hr.as_ref().is_some_and(|r| r.is_ok()) {
                    *hr = Some(Err(e.clone()));
                }
                drop(hr);
                ready.push(h);
            }
        } else {
            while let Some(h) = waiting.remove(&(db.last_seq.load(Ordering::Acquire) + 1)) {
                // Publish: readers never see part of a group. A group whose WAL write failed
                // only uses up its sequence numbers (a write after `resume()` must never reuse
                // them: the record may be in the WAL).
                db.last_seq.store(h.last, Ordering::Release);
                ready.push(h);
            }
        }
    }
    for h in ready {
        complete_group(db, &h);
    }
}

/// A group is published (or failed): count it out of the pipeline, hand the queue on if it
/// kept it, and complete its members with its result.
fn complete_group(db: &DbInner, g: &write_thread::Group) {
    let pipe = &db.pipeline;
    let r = g.result.lock().clone().unwrap_or(Ok(()));
    if r.is_ok() {
        db.write_stats
            .record(1 + g.followers.len() as u64, g.last - g.first + 1, g.size, g.sync);
    }
    pipe.in_flight.fetch_sub(1, Ordering::AcqRel);
    pipe.wake();
    if g.holds_queue {
        // The group kept the queue until now: hand it on before completing the members (a
        // member that writes again at once then queues behind the next leader).
        write_thread::leave_queue(&db.writers, g.followers.len());
    }
    for m in &g.followers {
        m.complete(r.clone());
    }
    g.leader.complete(r);
}

/// Ensure the memtables have room, switching the full ones (and the WAL) first, then delay or
/// stop the write group as RocksDB's write controller says (see `stall`). Returns the memtables
/// to insert into.
pub(super) fn make_room(db: &Arc<DbInner>, bytes: u64) -> Result<Arc<MemSet>> {
    let mutex_timer = PerfTimer::start_mutex();
    let stats_timer = db.stats.as_ref().filter(|s| s.mutex_timers()).map(|_| Instant::now());
    let mut st = db.state.lock();
    mutex_timer.stop(perf::DB_MUTEX_LOCK_NANOS);
    if let (Some(s), Some(t0)) = (&db.stats, stats_timer) {
        s.tick(Ticker::DbMutexWaitMicros, t0.elapsed().as_micros() as u64);
    }
    // Read the clock only when a stall begins (not on every write).
    let mut stall_start: Option<Instant> = None;
    let wbm = db.write_buffer_manager();
    loop {
        DbInner::check_bg_error(&st)?;
        // Full: at write_buffer_size, or the write buffer manager wants memory back (RocksDB's
        // `WriteBufferManager::ShouldFlush`: the DB switches its largest mutable memtable).
        let mut full: Vec<u32> = st
            .cfs
            .iter()
            .filter(|(_, m)| m.mem.approximate_memory_usage() >= m.cfd.opts.write_buffer_size)
            .map(|(id, _)| *id)
            .collect();
        if full.is_empty() && wbm.is_some_and(|w| w.should_flush()) {
            if let Some((id, _)) = st
                .cfs
                .iter()
                .filter(|(_, m)| !m.mem.is_empty())
                .max_by_key(|(_, m)| m.mem.approximate_memory_usage())
            {
                full.push(*id);
            }
        }
        if full.is_empty() && st.cfs.len() > 1 {
            full = families_holding_old_wals(db, &st);
        }
        if !full.is_empty() && db.opts.atomic_flush {
            // atomic_flush: every family with data switches (and flushes) together.
            full = st
                .cfs
                .iter()
                .filter(|(_, m)| !m.mem.is_empty() || !m.mem.range_dels.is_empty())
                .map(|(id, _)| *id)
                .collect();
        }
        if !full.is_empty() {
            let blocked = full
                .iter()
                .any(|id| st.cfs[id].imm.len() + 1 >= st.cfs[id].cfd.opts.max_write_buffer_number);
            if blocked {
                // No flush will make room once background work is cancelled.
                check_not_cancelled(db)?;
                stall_start.get_or_insert_with(Instant::now);
                db.work_cv.notify_all();
                db.bg_cv.wait_for(&mut st, Duration::from_millis(100));
                continue;
            }
            switch_memtable(db, &mut st, &full)?;
            continue;
        }
        // All memtables use the whole budget: wait for flushes to free some (allow_stall).
        if let Some(w) = wbm.filter(|w| w.should_stall()) {
            stall_start.get_or_insert_with(Instant::now);
            db.work_cv.notify_all();
            parking_lot::MutexGuard::unlocked(&mut st, || w.wait_for_free(Duration::from_millis(10)));
            continue;
        }
        break;
    }
    if let Some(stall_start) = stall_start {
        let micros = stall_start.elapsed().as_micros() as u64;
        db.stall.counters.record(
            super::stall::Condition::Stopped,
            super::stall::Cause::MemtableLimit,
            micros,
        );
        super::stall::stall_stats(db, micros);
    }
    super::stall::delay_or_stop_write(db, &mut st, bytes)?;
    Ok(st.memset.clone())
}

/// RocksDB's `max_total_wal_size` rule: once the live WALs hold more than the limit, the
/// families whose unflushed data is in the oldest live WAL (and whose memtable has data) are
/// switched, so their flush lets that WAL go.
fn families_holding_old_wals(db: &DbInner, st: &DbState) -> Vec<u32> {
    let limit = match db.opts.max_total_wal_size {
        0 => st
            .cfs
            .values()
            .map(|m| (m.cfd.opts.write_buffer_size * m.cfd.opts.max_write_buffer_number) as u64)
            .sum::<u64>()
            .saturating_mul(4),
        n => n,
    };
    let (total, oldest) = {
        let wal = db.wal.lock();
        let current = wal.writer.as_ref().map_or(0, |w| w.file_size());
        let total = wal.alive.iter().map(|(_, b)| b).sum::<u64>() + current;
        (total, wal.alive.front().map(|(n, _)| *n))
    };
    let Some(oldest) = oldest.filter(|_| total > limit) else {
        return Vec::new();
    };
    st.cfs
        .iter()
        .filter(|(id, m)| {
            !m.mem.is_empty() && st.versions.cf(**id).is_ok_and(|c| c.log_number <= oldest) && m.imm.is_empty()
        })
        .map(|(id, _)| *id)
        .collect()
}

/// Make the memtables of families `cfs` immutable, start one new WAL and new memtables, and
/// wake the flusher. Called by the write leader with the DB mutex held. The WAL files are created
/// and synced without the mutex: only the write leader switches or writes (the writer queue), so
/// nothing else touches the memtables or the WAL meanwhile, and readers and background jobs go
/// on.
pub(crate) fn switch_memtable(
    db: &Arc<DbInner>,
    st: &mut parking_lot::MutexGuard<'_, DbState>,
    cfs: &[u32],
) -> Result<()> {
    // Groups still inserting into the memtables about to become immutable finish first (with
    // pipelined or unordered writes the leader switching may not be the last to insert).
    drain_writes(db)?;
    let num = st.versions.new_file_number();
    let r = parking_lot::MutexGuard::unlocked(st, || -> Result<()> {
        let file = db.fs.new_writable(&wal_name(&db.path, num))?;
        {
            let mut guard = db.wal.lock();
            let wal = &mut *guard;
            // Sync the old WAL so that a later synced write can never survive a power loss that
            // loses an earlier write (recovered state must be a prefix of the history).
            if let Some(w) = wal.writer.as_mut() {
                if wal.unsynced {
                    w.sync()?;
                }
            }
            if let Some(w) = wal.writer.as_ref() {
                let old = (wal.number, w.file_size());
                wal.alive.push_back(old);
            }
            wal.writer = Some(log::Writer::new_wal(file, db.opts.wal_mapped_appends));
            wal.number = num;
            wal.unsynced = false;
        }
        // The new WAL's directory entry must be durable before a synced write relies on it.
        db.fs.sync_dir(&db.path)
    });
    if let Err(e) = r {
        if st.bg_error.is_none() {
            st.bg_error = Some(e.clone());
        }
        db.bg_cv.notify_all();
        return Err(e);
    }
    st.wal_switch_pending = false;
    for &id in cfs {
        let Some(m) = st.cfs.get_mut(&id) else {
            continue;
        };
        let new_mem = db.new_memtable(&m.cfd);
        let old = std::mem::replace(&mut m.mem, new_mem);
        old.mark_immutable();
        m.imm.push_back(ImmMem {
            mem: old.clone(),
            next_log: num,
        });
        // An immutable memtable that waits for others before it is flushed
        // (`min_write_buffer_number_to_merge`) serves reads for a while: give it a sorted
        // directory, built off the write path, so lookups skip the skiplist descent.
        if !super::state::flush_due(db, st, id) {
            let _ = std::thread::Builder::new()
                .name("shale-memdir".into())
                .spawn(move || old.build_directory());
        }
    }
    st.rebuild_memset();
    for &id in cfs {
        db.install_super_version(st, id);
    }
    db.work_cv.notify_all();
    Ok(())
}

/// A write waiting for a flush fails once the background threads are gone
/// (`cancel_all_background_work`), rather than wait forever.
fn check_not_cancelled(db: &DbInner) -> Result<()> {
    if db.shutting_down.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Error::Busy(
            "write: the memtables are full and background work was cancelled".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::db::handle::DB;
    use crate::fs::MemFs;
    use crate::options::Options;
    use crate::write_batch::WriteBatch;

    /// Four threads writing batches of 8 records into one DB; returns how many groups inserted
    /// in parallel.
    fn parallel_groups(allow: bool) -> u64 {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(MemFs::new()));
        o.set_allow_concurrent_memtable_write(allow);
        let db = Arc::new(DB::open(&o, "/db").unwrap());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for i in 0..3000u64 {
                        let mut b = WriteBatch::new();
                        for j in 0..8 {
                            b.put(format!("{t}-{i}-{j}"), b"v");
                        }
                        db.write(b).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(db.latest_sequence_number(), 4 * 3000 * 8);
        for t in 0..4u64 {
            for i in (0..3000u64).step_by(97) {
                assert_eq!(db.get(format!("{t}-{i}-7")).unwrap().as_deref(), Some(&b"v"[..]));
            }
        }
        db.inner
            .write_stats
            .parallel_groups
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    #[test]
    fn followers_insert_in_parallel_only_when_allowed() {
        // Groups with followers form under contention; some must have inserted in parallel.
        let mut seen = 0;
        for _ in 0..5 {
            seen += parallel_groups(true);
            if seen > 0 {
                break;
            }
        }
        assert!(seen > 0, "no group inserted in parallel");
        assert_eq!(parallel_groups(false), 0);
    }
}
