//! Options that `set_options` can replace while the DB runs, read without locks.
//!
//! Readers dereference the current `Options` through one atomic pointer load (no lock, no
//! reference count): hot paths read `cf.opts.write_buffer_size` as before. A change installs a
//! new boxed copy; the old copies are kept until the family (or DB) is dropped, so a reference
//! taken before a change stays valid. Changes are rare (one copy per `set_options` call).

use std::ops::Deref;
use std::sync::atomic::{AtomicPtr, Ordering};

use parking_lot::Mutex;

use super::types::Options;

pub(crate) struct LiveOptions {
    cur: AtomicPtr<Options>,
    /// Every version ever installed (the last is current); never shrinks while `self` lives.
    /// Boxed: readers hold addresses of the elements, which a growing `Vec` would move.
    #[allow(clippy::vec_box)]
    all: Mutex<Vec<Box<Options>>>,
}

impl LiveOptions {
    pub(crate) fn new(opts: Options) -> LiveOptions {
        let mut b = Box::new(opts);
        let p: *mut Options = &mut *b;
        LiveOptions {
            cur: AtomicPtr::new(p),
            all: Mutex::new(vec![b]),
        }
    }

    /// Install `opts` as the current options (later reads see it).
    pub(crate) fn store(&self, opts: Options) {
        let mut all = self.all.lock();
        let mut b = Box::new(opts);
        let p: *mut Options = &mut *b;
        all.push(b);
        self.cur.store(p, Ordering::Release);
    }
}

impl Deref for LiveOptions {
    type Target = Options;
    #[inline]
    fn deref(&self) -> &Options {
        // SAFETY: `cur` always points into a box of `all`, which is only ever appended to and
        // is dropped with `self`; a box's contents never move, and are never written after
        // being installed. The returned reference borrows `self`, so it cannot outlive them.
        unsafe { &*self.cur.load(Ordering::Acquire) }
    }
}

impl std::fmt::Debug for LiveOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}
