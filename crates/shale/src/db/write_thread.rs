//! The writer queue (RocksDB's `WriteThread`): writers join a queue; the one at the front leads a
//! group of the writers behind it. Every writer waits on its own state — a short spin, a few
//! yields, then parking its thread — and whoever changes that state wakes exactly that writer:
//! no condition variable shared by all, no herd of wake-ups at each hand-off.
//!
//! A writer's state goes `WAITING` → `LEADER` (it leads the next group), or `WAITING` → `INSERT`
//! (its leader wrote the group's WAL record and asks it to insert its own batch into the
//! memtable, in parallel with the rest of the group) → `DONE`, or `WAITING` → `DONE` (its
//! leader did everything). `result` is written before `DONE` is stored (release/acquire).

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};

use parking_lot::Mutex;

use super::write::MemSet;
use crate::error::{Error, Result};
use crate::write_batch::WriteBatch;

pub(crate) const WAITING: u8 = 0;
pub(crate) const LEADER: u8 = 1;
pub(crate) const INSERT: u8 = 2;
pub(crate) const DONE: u8 = 3;

/// Spins before yielding: a few microseconds (a hand-off inside one group commit is usually
/// that fast; parking and unparking costs several). Kept short: with more writers than cores a
/// spinning writer takes the CPU its leader needs.
const SPINS: u32 = 200;
/// How long a waiter yields its CPU (to the leader, when writers outnumber cores) before it
/// parks, as RocksDB's `AwaitState` (which yields for up to 100 µs).
const YIELD_FOR: std::time::Duration = std::time::Duration::from_micros(60);

/// A writer in the queue.
pub(crate) struct Writer {
    pub batch: Mutex<Option<WriteBatch>>,
    pub sync: bool,
    pub disable_wal: bool,
    /// An operation the leader runs alone, with no write in flight (a memtable switch for
    /// `flush()`, creating or dropping a family); no data.
    pub force_switch: bool,
    pub op: Mutex<Option<ExclusiveOp>>,
    pub result: Mutex<Option<Result<()>>>,
    state: AtomicU8,
    /// The writer's thread is parked (or about to be): waking it costs a context switch, so a
    /// leader inserts such a follower's batch itself rather than wait for it.
    parked: AtomicBool,
    thread: Thread,
    /// Set by the leader before `INSERT`: where to insert this writer's batch.
    task: Mutex<Option<InsertTask>>,
}

/// What an exclusive writer does.
pub(crate) type ExclusiveOp = Box<dyn FnOnce() -> Result<()> + Send>;

/// A follower's part of a parallel memtable insert.
pub(crate) struct InsertTask {
    pub mems: Arc<MemSet>,
    /// Sequence number of the batch's first record.
    pub seq: u64,
    pub group: Arc<GroupInsert>,
}

/// The inserts of one group still running; the last follower to finish wakes the leader.
pub(crate) struct GroupInsert {
    pending: AtomicUsize,
    leader: Thread,
    /// The first error (or panic) of a follower's insert.
    pub error: Mutex<Option<Error>>,
}

impl GroupInsert {
    pub(crate) fn new(followers: usize) -> Arc<GroupInsert> {
        Arc::new(GroupInsert {
            pending: AtomicUsize::new(followers),
            leader: thread::current(),
            error: Mutex::new(None),
        })
    }

    /// A follower finished its insert (with `err` if it failed).
    fn finished(&self, err: Option<Error>) {
        if let Some(e) = err {
            self.error.lock().get_or_insert(e);
        }
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.leader.unpark();
        }
    }

    /// The leader waits until every follower's insert is done (their entries are then visible
    /// to whoever acquires after this returns).
    pub(crate) fn wait(&self) {
        await_until(|| self.pending.load(Ordering::Acquire) == 0, None);
    }
}

impl Writer {
    pub(crate) fn new(batch: Option<WriteBatch>, sync: bool, disable_wal: bool, force_switch: bool) -> Writer {
        Writer {
            batch: Mutex::new(batch),
            sync,
            disable_wal,
            force_switch,
            op: Mutex::new(None),
            result: Mutex::new(None),
            state: AtomicU8::new(WAITING),
            parked: AtomicBool::new(false),
            thread: thread::current(),
            task: Mutex::new(None),
        }
    }

    fn set_state(&self, s: u8) {
        self.state.store(s, Ordering::Release);
        self.thread.unpark();
    }

    /// Wait until the state differs from `from`; returns the new state.
    fn await_change(&self, from: u8) -> u8 {
        let mut s = from;
        await_until(
            || {
                s = self.state.load(Ordering::Acquire);
                s != from
            },
            Some(&self.parked),
        );
        s
    }

    /// The writer is parked: a leader should not wait for it to wake up.
    pub(crate) fn is_parked(&self) -> bool {
        self.parked.load(Ordering::SeqCst)
    }

    /// Hand this writer its part of a parallel insert and wake it.
    pub(crate) fn start_insert(&self, task: InsertTask) {
        *self.task.lock() = Some(task);
        self.set_state(INSERT);
    }

    /// Finish this (follower) writer with `r` and wake it.
    pub(crate) fn complete(&self, r: Result<()>) {
        *self.result.lock() = Some(r);
        self.set_state(DONE);
    }

    /// Run this writer's part of a parallel insert, on its own thread.
    fn run_insert(&self, insert: &dyn Fn(&MemSet, u64, &WriteBatch) -> Result<()>) {
        let Some(task) = self.task.lock().take() else {
            return;
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match self.batch.lock().as_ref() {
            Some(b) => insert(&task.mems, task.seq, b),
            None => Ok(()),
        }))
        .unwrap_or_else(|p| Err(Error::from_panic("memtable insert", p)));
        task.group.finished(r.err());
    }
}

/// Spin, then yield, then park until `done()` holds. Whoever makes it hold unparks this thread.
/// `parked` (if given) is set while the thread parks.
fn await_until(mut done: impl FnMut() -> bool, parked: Option<&AtomicBool>) {
    for _ in 0..SPINS {
        if done() {
            return;
        }
        spin_loop();
    }
    let start = std::time::Instant::now();
    loop {
        for _ in 0..4 {
            if done() {
                return;
            }
            thread::yield_now();
        }
        if start.elapsed() >= YIELD_FOR {
            break;
        }
    }
    // `unpark` before `park` leaves a token, so a wake-up between the check and `park` is not
    // lost; a spurious return just checks again.
    if let Some(p) = parked {
        p.store(true, Ordering::SeqCst);
    }
    while !done() {
        thread::park();
    }
    if let Some(p) = parked {
        p.store(false, Ordering::SeqCst);
    }
}

/// What a writer that joined the queue is to do.
pub(crate) enum Role {
    /// Lead a group (it is at the front of the queue).
    Leader,
    /// Its group is done: this is its result.
    Done(Result<()>),
}

/// Join the queue and wait until this writer leads or its group finished. A follower asked to
/// insert its own batch does so with `insert` (on this thread) while it waits.
pub(crate) fn join(
    queue: &Mutex<std::collections::VecDeque<Arc<Writer>>>,
    w: &Arc<Writer>,
    insert: &dyn Fn(&MemSet, u64, &WriteBatch) -> Result<()>,
) -> Role {
    {
        let mut q = queue.lock();
        q.push_back(w.clone());
        if q.len() == 1 {
            return Role::Leader;
        }
    }
    let mut s = WAITING;
    loop {
        s = w.await_change(s);
        match s {
            LEADER => return Role::Leader,
            INSERT => w.run_insert(insert),
            _ => return Role::Done(w.result.lock().take().unwrap_or(Ok(()))),
        }
    }
}

/// The leader finished its group (itself and `followers`, the writers right behind it): take
/// them off the queue, make the next writer leader, and complete the followers with `r`.
pub(crate) fn exit_group(
    queue: &Mutex<std::collections::VecDeque<Arc<Writer>>>,
    followers: &[Arc<Writer>],
    r: &Result<()>,
) {
    let next = {
        let mut q = queue.lock();
        for _ in 0..=followers.len() {
            q.pop_front();
        }
        q.front().cloned()
    };
    if let Some(n) = next {
        n.set_state(LEADER);
    }
    for f in followers {
        f.complete(r.clone());
    }
}
