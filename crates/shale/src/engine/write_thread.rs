//! The writer queue (RocksDB's `WriteThread`): writers join a queue; the one at the front leads a
//! group of the writers behind it. Every writer waits on its own state — a short spin, a few
//! yields, then parking its thread — and whoever changes that state wakes exactly that writer:
//! no condition variable shared by all, no herd of wake-ups at each hand-off.
//!
//! A writer's state goes `WAITING` → `LEADER` (it leads the next group), or `WAITING` → `INSERT`
//! (its leader wrote the group's WAL record and asks it to insert its own batch into the
//! memtable, in parallel with the rest of the group) → `DONE`, or `WAITING` → `DONE` (its
//! leader inserted for it). `result` is written before `DONE` is stored (release/acquire).
//!
//! After its WAL write a group is a [`Group`]: its members insert, the last to finish publishes
//! the group's sequence numbers (after every earlier group's) and completes the members. With
//! pipelined or unordered writes the leader leaves the queue right after the WAL write, so the
//! next group's WAL write overlaps this group's inserts; the [`Pipeline`] counts the groups in
//! flight, which a memtable switch or an exclusive operation waits out.

use std::hint::spin_loop;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};

use parking_lot::Mutex;

use super::column_family::MemSet;
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
    /// A two-phase-commit write (prepare, commit or rollback marker): it leads a group of its
    /// own (`write::write_two_pc`).
    pub two_pc: Mutex<Option<super::write_thread::TwoPcWrite>>,
    /// The number of the WAL the writer's record went into (two-phase commit).
    pub log_used: AtomicU64,
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

/// A follower's part of a group's memtable stage: insert its batch at `seq`.
pub(crate) struct InsertTask {
    pub seq: u64,
    pub group: Arc<Group>,
}

/// One write group after its WAL write: the members still inserting their batches into the
/// memtables, and what the last of them publishes. Whoever finishes last (leader or follower)
/// publishes the group — after every earlier group, so readers see groups whole and in order —
/// and completes every member.
pub(crate) struct Group {
    pending: AtomicUsize,
    /// The group's sequence numbers, `first..=last`.
    pub first: u64,
    pub last: u64,
    pub mems: Arc<MemSet>,
    /// The leader and its followers: each is completed with the group's result.
    pub leader: Arc<Writer>,
    pub followers: Vec<Arc<Writer>>,
    /// The group publishes its sequence when it finishes (false: unordered_write published it
    /// right after the WAL write).
    pub ordered: bool,
    pub sync: bool,
    pub size: u64,
    /// The WAL write failed: nothing was inserted; the sequence numbers are used up.
    pub wal_error: Option<Error>,
    /// The group keeps the writer queue until it is published (no pipelining): whoever
    /// publishes it hands the queue to the next leader.
    pub holds_queue: bool,
    /// The first error (or panic) of a member's insert.
    pub error: Mutex<Option<Error>>,
    /// The group's result, once its last member finished.
    pub result: Mutex<Option<Result<()>>>,
}

impl Group {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        inserters: usize,
        first: u64,
        last: u64,
        mems: Arc<MemSet>,
        leader: Arc<Writer>,
        followers: Vec<Arc<Writer>>,
        ordered: bool,
        sync: bool,
        size: u64,
    ) -> Group {
        Group {
            pending: AtomicUsize::new(inserters),
            first,
            last,
            mems,
            leader,
            followers,
            ordered,
            sync,
            size,
            wal_error: None,
            holds_queue: false,
            error: Mutex::new(None),
            result: Mutex::new(None),
        }
    }

    /// A member finished its insert (with `err` if it failed); true for the last one, which
    /// publishes the group.
    pub(crate) fn finished(&self, err: Option<Error>) -> bool {
        if let Some(e) = err {
            self.error.lock().get_or_insert(e);
        }
        self.pending.fetch_sub(1, Ordering::AcqRel) == 1
    }
}

/// Where write groups stand between their WAL write and their publication: with pipelined or
/// unordered writes the next group's WAL write starts while earlier groups still insert.
#[derive(Default)]
pub(crate) struct Pipeline {
    /// The last sequence number given to a group (ahead of the published one while groups are
    /// in flight). Written by the write leader only.
    pub allocated: AtomicU64,
    /// Groups whose WAL write is done but that are not yet completed.
    pub in_flight: AtomicUsize,
    /// A group's insert failed or panicked: nothing after it may be published.
    broken: AtomicBool,
    broken_error: Mutex<Option<Error>>,
    /// Threads parked until a group is published or completed.
    waiters: Mutex<Vec<Thread>>,
    has_waiters: AtomicBool,
    /// Groups done inserting whose turn to be published has not come (an earlier group is still
    /// inserting), by first sequence number. Whoever publishes a group publishes the ones
    /// waiting right behind it too: no thread waits for another group's inserts.
    pub unpublished: Mutex<std::collections::BTreeMap<u64, Arc<Group>>>,
}

impl Pipeline {
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// The error that broke the pipeline.
    pub(crate) fn broken_error(&self) -> Error {
        self.broken_error
            .lock()
            .clone()
            .unwrap_or_else(|| Error::Busy("write: an earlier write group failed; writes are stopped".into()))
    }

    /// A group's memtable insert failed: groups after it are never published.
    pub(crate) fn set_broken(&self, e: Error) {
        self.broken_error.lock().get_or_insert(e);
        self.broken.store(true, Ordering::Release);
        self.wake();
    }

    /// Park (after spinning and yielding) until `done()`, or fail once the pipeline is broken.
    pub(crate) fn wait(&self, mut done: impl FnMut() -> bool) -> Result<()> {
        let mut ok = true;
        await_until(
            || {
                if done() {
                    return true;
                }
                ok = !self.broken.load(Ordering::Acquire);
                !ok
            },
            Some(&|| {
                self.waiters.lock().push(thread::current());
                self.has_waiters.store(true, Ordering::SeqCst);
                fence(Ordering::SeqCst);
            }),
        );
        if ok {
            return Ok(());
        }
        Err(self
            .broken_error
            .lock()
            .clone()
            .unwrap_or_else(|| Error::Busy("write: an earlier write group failed; writes are stopped".into())))
    }

    /// Wake the threads parked in [`wait`](Self::wait) (they check again). Called after the
    /// state they wait for changed.
    pub(crate) fn wake(&self) {
        fence(Ordering::SeqCst);
        if !self.has_waiters.load(Ordering::SeqCst) {
            return;
        }
        let mut w = self.waiters.lock();
        self.has_waiters.store(false, Ordering::SeqCst);
        for t in w.drain(..) {
            t.unpark();
        }
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
            two_pc: Mutex::new(None),
            log_used: AtomicU64::new(0),
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
        let parked = || self.parked.store(true, Ordering::SeqCst);
        await_until(
            || {
                s = self.state.load(Ordering::Acquire);
                s != from
            },
            Some(&parked),
        );
        self.parked.store(false, Ordering::SeqCst);
        s
    }

    /// The writer is parked: a leader should not wait for it to wake up.
    pub(crate) fn is_parked(&self) -> bool {
        self.parked.load(Ordering::SeqCst)
    }

    /// Hand this writer its part of a group's memtable stage and wake it.
    pub(crate) fn start_insert(&self, task: InsertTask) {
        *self.task.lock() = Some(task);
        self.set_state(INSERT);
    }

    /// Finish this writer with `r` and wake it.
    pub(crate) fn complete(&self, r: Result<()>) {
        *self.result.lock() = Some(r);
        self.set_state(DONE);
    }

    /// The leader, after its own part: wait until its group is completed; its result.
    pub(crate) fn wait_done(&self) -> Result<()> {
        loop {
            let s = self.state.load(Ordering::Acquire);
            if s == DONE {
                break;
            }
            self.await_change(s);
        }
        self.result.lock().take().unwrap_or(Ok(()))
    }
}

/// Spin, then yield, then park until `done()` holds. Whoever makes it hold unparks this thread.
/// `before_park` (if given) runs before the thread first parks (to say it is parked, or to
/// register it for a wake-up); parking times out now and then, so a waiter never depends on a
/// wake-up alone.
fn await_until(mut done: impl FnMut() -> bool, before_park: Option<&dyn Fn()>) {
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
    loop {
        if let Some(f) = before_park {
            f();
        }
        if done() {
            return;
        }
        thread::park_timeout(std::time::Duration::from_millis(10));
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
/// insert its own batch does so with `insert` (on this thread), then waits for its group.
pub(crate) fn join(
    queue: &Mutex<std::collections::VecDeque<Arc<Writer>>>,
    w: &Arc<Writer>,
    insert: &dyn Fn(&Writer, InsertTask),
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
            INSERT => {
                if let Some(task) = w.task.lock().take() {
                    insert(w, task);
                }
            }
            _ => return Role::Done(w.result.lock().take().unwrap_or(Ok(()))),
        }
    }
}

/// The leader's group (itself and `followers` writers right behind it) leaves the queue: the
/// next writer becomes leader. The members are completed by whoever finishes their group.
pub(crate) fn leave_queue(queue: &Mutex<std::collections::VecDeque<Arc<Writer>>>, followers: usize) {
    let next = {
        let mut q = queue.lock();
        for _ in 0..=followers {
            q.pop_front();
        }
        q.front().cloned()
    };
    if let Some(n) = next {
        n.set_state(LEADER);
    }
}

/// A two-phase-commit write (RocksDB's WRITE_COMMITTED policy). Each leads a write group of
/// its own; its WAL record is the writer's batch, with the sequence number the next write
/// would take.
pub(crate) enum TwoPcWrite {
    /// The batch is a prepared section (`WriteBatch::prepared`): WAL only, no memtable insert,
    /// no sequence number used; its WAL is recorded as holding a prepared section before the
    /// write queue moves on (so no flush can delete it first).
    Prepare,
    /// The batch is a commit marker (count 0): `data`, the prepared records, go into the
    /// memtables at the marker's sequence number (as recovery will replay them), and every
    /// memtable written references `prep_log`, the WAL of the prepared section.
    Commit { data: WriteBatch, prep_log: u64 },
    /// The batch is a rollback marker: WAL only.
    Rollback,
}
