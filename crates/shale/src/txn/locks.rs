//! The pessimistic DB's row locks (RocksDB's `PointLockManager`): keys hash to stripes, each a
//! map from (family, key) to its holders under one mutex with one condition variable. A lock is
//! shared (any number of holders) or exclusive (one). A transaction that must wait records whom
//! it waits for; with deadlock detection it first follows those edges and refuses to wait
//! (Busy, "Deadlock") when they lead back to itself. Locks of a transaction past its expiration
//! may be taken over by a waiter; that transaction then fails to commit (Expired).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::checks::printable;
use crate::error::{Error, Result};

type LockKey = (u32, Vec<u8>);

struct LockEntry {
    exclusive: bool,
    holders: Vec<u64>,
}

struct Stripe {
    map: Mutex<HashMap<LockKey, LockEntry>>,
    cv: Condvar,
}

/// A transaction's life as the lock manager sees it (for expiration).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Life {
    Active,
    /// Committing: its locks can no longer be taken over.
    Committing,
    /// Expired and some of its locks were taken over: it can only roll back.
    Stolen,
}

struct TxnLife {
    expires: Option<Instant>,
    life: Life,
}

pub(crate) struct LockManager {
    stripes: Vec<Stripe>,
    /// For each waiting transaction: the holders it waits for and the key.
    waits: Mutex<HashMap<u64, (Vec<u64>, LockKey)>>,
    lives: Mutex<HashMap<u64, TxnLife>>,
}

/// How one lock request may wait.
pub(crate) struct LockRequest {
    pub txn: u64,
    pub exclusive: bool,
    /// None: wait forever.
    pub timeout: Option<Duration>,
    /// Some(depth): detect deadlocks following at most `depth` edges.
    pub deadlock_depth: Option<usize>,
}

impl LockManager {
    pub(crate) fn new(stripes: usize) -> LockManager {
        LockManager {
            stripes: (0..stripes.max(1))
                .map(|_| Stripe {
                    map: Mutex::new(HashMap::new()),
                    cv: Condvar::new(),
                })
                .collect(),
            waits: Mutex::new(HashMap::new()),
            lives: Mutex::new(HashMap::new()),
        }
    }

    fn stripe(&self, key: &LockKey) -> &Stripe {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        &self.stripes[(h.finish() % self.stripes.len() as u64) as usize]
    }

    /// Register a transaction (with its expiration deadline, if any).
    pub(crate) fn begin(&self, txn: u64, expires: Option<Instant>) {
        self.lives.lock().insert(
            txn,
            TxnLife {
                expires,
                life: Life::Active,
            },
        );
    }
    /// Forget a finished transaction.
    pub(crate) fn end(&self, txn: u64) {
        self.lives.lock().remove(&txn);
    }
    /// The transaction starts committing: Expired if it is past its deadline (its locks may
    /// have been taken), else its locks can no longer be taken over.
    pub(crate) fn start_commit(&self, txn: u64) -> Result<()> {
        let mut lives = self.lives.lock();
        let Some(l) = lives.get_mut(&txn) else {
            return Ok(());
        };
        if l.life == Life::Stolen || l.expires.is_some_and(|e| Instant::now() >= e) {
            l.life = Life::Stolen;
            return Err(Error::Expired("the transaction passed its expiration time".into()));
        }
        l.life = Life::Committing;
        Ok(())
    }
    /// Whether the transaction expired (checked before each of its operations).
    pub(crate) fn expired(&self, txn: u64) -> bool {
        self.lives
            .lock()
            .get(&txn)
            .is_some_and(|l| l.life == Life::Stolen || l.expires.is_some_and(|e| Instant::now() >= e))
    }

    /// Take over the locks of expired holders: true if every holder in `holders` was expired
    /// (they are then marked so they cannot commit).
    fn steal_expired(&self, holders: &[u64]) -> bool {
        let mut lives = self.lives.lock();
        let now = Instant::now();
        let all = holders.iter().all(|h| {
            lives
                .get(h)
                .is_some_and(|l| l.life != Life::Committing && l.expires.is_some_and(|e| now >= e))
        });
        if all {
            for h in holders {
                if let Some(l) = lives.get_mut(h) {
                    l.life = Life::Stolen;
                }
            }
        }
        all
    }

    /// The earliest expiration among `holders` (a waiter wakes then to take their locks).
    fn earliest_expiry(&self, holders: &[u64]) -> Option<Instant> {
        let lives = self.lives.lock();
        holders
            .iter()
            .filter_map(|h| lives.get(h).and_then(|l| l.expires))
            .min()
    }

    /// Lock `key` of family `cf` for `req.txn`. Ok if taken (or already held strongly enough);
    /// TimedOut after the timeout; Busy("Deadlock ...") when waiting would close a cycle.
    pub(crate) fn lock(&self, cf: u32, key: &[u8], req: &LockRequest) -> Result<()> {
        let lk: LockKey = (cf, key.to_vec());
        let stripe = self.stripe(&lk);
        let deadline = req.timeout.map(|t| Instant::now() + t);
        let mut map = stripe.map.lock();
        let r = loop {
            let blockers = match map.get_mut(&lk) {
                None => {
                    map.insert(
                        lk.clone(),
                        LockEntry {
                            exclusive: req.exclusive,
                            holders: vec![req.txn],
                        },
                    );
                    break Ok(());
                }
                Some(e) => {
                    if e.holders.contains(&req.txn) {
                        if !req.exclusive || e.exclusive {
                            break Ok(());
                        }
                        if e.holders.len() == 1 {
                            e.exclusive = true;
                            break Ok(());
                        }
                        e.holders.iter().copied().filter(|h| *h != req.txn).collect::<Vec<_>>()
                    } else if !req.exclusive && !e.exclusive {
                        e.holders.push(req.txn);
                        break Ok(());
                    } else {
                        e.holders.clone()
                    }
                }
            };
            if self.steal_expired(&blockers) {
                if let Some(e) = map.get_mut(&lk) {
                    e.holders.retain(|h| !blockers.contains(h));
                    if e.holders.is_empty() {
                        map.remove(&lk);
                    }
                }
                continue;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                break Err(timed_out(&lk, &blockers));
            }
            if let Some(depth) = req.deadlock_depth {
                if let Some(cycle) = self.find_cycle(req.txn, &blockers, &lk, depth) {
                    break Err(Error::Busy(format!("Deadlock: {cycle}")));
                }
            } else {
                self.waits.lock().insert(req.txn, (blockers.clone(), lk.clone()));
            }
            let wake = match (deadline, self.earliest_expiry(&blockers)) {
                (Some(d), Some(x)) => Some(d.min(x)),
                (d, x) => d.or(x),
            };
            match wake {
                Some(w) => {
                    stripe.cv.wait_until(&mut map, w);
                }
                None => stripe.cv.wait(&mut map),
            }
        };
        self.waits.lock().remove(&req.txn);
        r
    }

    /// Record that `txn` waits for `blockers` unless that closes a cycle; the cycle as text if
    /// it does (RocksDB follows at most `deadlock_detect_depth` edges).
    fn find_cycle(&self, txn: u64, blockers: &[u64], key: &LockKey, depth: usize) -> Option<String> {
        let mut waits = self.waits.lock();
        // Breadth-first from the blockers; `parent` remembers the path.
        let mut parent: HashMap<u64, u64> = HashMap::new();
        let mut seen: HashSet<u64> = blockers.iter().copied().collect();
        let mut queue: VecDeque<(u64, usize)> = blockers.iter().map(|b| (*b, 1)).collect();
        for b in blockers {
            parent.insert(*b, txn);
        }
        while let Some((t, d)) = queue.pop_front() {
            if t == txn {
                // Walk back from txn's predecessor to txn.
                let mut path = vec![txn];
                let mut cur = parent.get(&txn).copied();
                let mut guard = 0;
                while let Some(c) = cur {
                    if c == txn || guard > depth + 1 {
                        break;
                    }
                    path.push(c);
                    cur = parent.get(&c).copied();
                    guard += 1;
                }
                path.push(txn);
                path.reverse();
                let chain: Vec<String> = path.iter().map(|t| format!("txn {t}")).collect();
                return Some(format!(
                    "{} (waiting for key {} of column family {})",
                    chain.join(" -> waits for -> "),
                    printable(&key.1),
                    key.0
                ));
            }
            if d >= depth {
                continue;
            }
            if let Some((next, _)) = waits.get(&t) {
                for n in next {
                    if *n == txn {
                        parent.insert(txn, t);
                        queue.push_front((txn, d + 1));
                    } else if seen.insert(*n) {
                        parent.insert(*n, t);
                        queue.push_back((*n, d + 1));
                    }
                }
            }
        }
        waits.insert(txn, (blockers.to_vec(), key.clone()));
        None
    }

    /// Release `txn`'s locks on `keys` and wake their waiters.
    pub(crate) fn unlock<'a>(&self, txn: u64, keys: impl IntoIterator<Item = &'a LockKey>) {
        for lk in keys {
            let stripe = self.stripe(lk);
            let mut map = stripe.map.lock();
            if let Some(e) = map.get_mut(lk) {
                e.holders.retain(|h| *h != txn);
                if e.holders.is_empty() {
                    map.remove(lk);
                }
                stripe.cv.notify_all();
            }
        }
    }

    /// Locks held, for tests and properties.
    #[cfg(test)]
    pub(crate) fn num_locks(&self) -> usize {
        self.stripes.iter().map(|s| s.map.lock().len()).sum()
    }
}

fn timed_out(key: &LockKey, holders: &[u64]) -> Error {
    let h: Vec<String> = holders.iter().map(|t| t.to_string()).collect();
    Error::TimedOut(format!(
        "timeout waiting to lock key {} of column family {} (held by transaction {})",
        printable(&key.1),
        key.0,
        h.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn req(txn: u64, exclusive: bool, ms: u64, detect: bool) -> LockRequest {
        LockRequest {
            txn,
            exclusive,
            timeout: Some(Duration::from_millis(ms)),
            deadlock_depth: detect.then_some(50),
        }
    }

    #[test]
    fn shared_exclusive_upgrade() {
        let m = LockManager::new(4);
        m.lock(0, b"a", &req(1, false, 0, false)).unwrap();
        m.lock(0, b"a", &req(2, false, 0, false)).unwrap();
        assert_eq!(
            m.lock(0, b"a", &req(3, true, 0, false)).unwrap_err().kind(),
            crate::error_kind::ErrorKind::TimedOut
        );
        // upgrade refused while another holder shares it
        assert!(m.lock(0, b"a", &req(1, true, 0, false)).is_err());
        m.unlock(2, [&(0, b"a".to_vec())]);
        m.lock(0, b"a", &req(1, true, 0, false)).unwrap();
        assert!(m.lock(0, b"a", &req(2, false, 0, false)).is_err());
        // another family is another key
        m.lock(1, b"a", &req(2, true, 0, false)).unwrap();
        m.unlock(1, [&(0, b"a".to_vec())]);
        m.unlock(2, [&(1, b"a".to_vec())]);
        assert_eq!(m.num_locks(), 0);
    }

    #[test]
    fn waiter_gets_lock_after_unlock() {
        let m = Arc::new(LockManager::new(1));
        m.lock(0, b"k", &req(1, true, 0, false)).unwrap();
        let m2 = m.clone();
        let t = std::thread::spawn(move || {
            m2.lock(
                0,
                b"k",
                &LockRequest {
                    txn: 2,
                    exclusive: true,
                    timeout: None,
                    deadlock_depth: Some(50),
                },
            )
        });
        // Unlock whenever; the waiter has no timeout so it must end up with the lock.
        m.unlock(1, [&(0, b"k".to_vec())]);
        t.join().unwrap().unwrap();
        assert!(m.lock(0, b"k", &req(1, true, 0, false)).is_err());
    }

    #[test]
    fn expired_holder_loses_lock() {
        let m = LockManager::new(2);
        m.begin(1, Some(Instant::now()));
        m.begin(2, None);
        m.lock(0, b"k", &req(1, true, 0, false)).unwrap();
        m.lock(0, b"k", &req(2, true, 0, false)).unwrap();
        assert_eq!(
            m.start_commit(1).unwrap_err().kind(),
            crate::error_kind::ErrorKind::Expired
        );
        m.start_commit(2).unwrap();
    }
}
