//! Background errors, as RocksDB's `ErrorHandler` classifies them: hard errors stop writes until
//! `resume()`; ENOSPC in a compaction is soft and retried after a growing delay.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{state::DbInner, state::DbState};
use crate::error::Error;

/// Record a hard background error (unless shutting down): writes stop until `resume()`.
pub(crate) fn record_error(db: &DbInner, st: &mut DbState, e: Error) {
    if !db.shutting_down.load(Ordering::Acquire) {
        record_write_error(db, st, e);
    }
}

/// Record a hard error of the write path — a failed WAL append, sync or switch, or a memtable
/// insert that failed after its WAL record was written — as fail-stop: no later write succeeds
/// until `resume()` (or, after a torn insert, a reopen), whether or not the DB is closing.
pub(crate) fn record_write_error(db: &DbInner, st: &mut DbState, e: Error) {
    if st.bg_error.is_none() {
        super::events::background_error(db, &e, false);
        st.bg_error = Some(e);
    }
}

/// `resume()` cleared the hard error.
pub(crate) fn clear_after_resume(st: &mut DbState) {
    st.bg_error = None;
}

/// First delay before a compaction is retried after a soft error; it doubles up to
/// `MAX_RETRY_DELAY` while the error persists.
pub(crate) const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);

/// Classify a compaction failure as RocksDB's error handler does: ENOSPC while writing tables is
/// a soft error (writes go on, compactions are retried after a delay and the first success
/// clears it); anything else is a hard error that stops writes until `resume()`.
pub(crate) fn record_compaction_error(db: &DbInner, st: &mut DbState, e: Error) {
    if db.shutting_down.load(Ordering::Acquire) {
        return;
    }
    if e.is_no_space() && st.bg_error.is_none() {
        super::events::background_error(db, &e, true);
        st.soft_error = Some(e);
        st.compaction_retry_at = Some(Instant::now() + st.compaction_retry_delay);
        st.compaction_retry_delay = (st.compaction_retry_delay * 2).min(MAX_RETRY_DELAY);
    } else {
        record_error(db, st, e);
    }
}

/// A compaction finished: a soft error is over.
pub(crate) fn compaction_succeeded(st: &mut DbState) {
    st.soft_error = None;
    st.compaction_retry_at = None;
    st.compaction_retry_delay = FIRST_RETRY_DELAY;
}
