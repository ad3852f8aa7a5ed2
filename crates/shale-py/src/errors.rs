//! The Python exceptions: `ShaleError` and one subclass per RocksDB status (plus
//! `DbClosedError`), and the conversion of an engine error to them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(shale, ShaleError, PyException, "Base class of Shale's errors.");
create_exception!(shale, NotFound, ShaleError, "RocksDB's NotFound status.");
create_exception!(shale, Corruption, ShaleError, "RocksDB's Corruption status.");
create_exception!(shale, NotSupported, ShaleError, "RocksDB's NotSupported status.");
create_exception!(shale, InvalidArgument, ShaleError, "RocksDB's InvalidArgument status.");
create_exception!(shale, IOError, ShaleError, "RocksDB's IOError status.");
create_exception!(shale, MergeInProgress, ShaleError, "RocksDB's MergeInProgress status.");
create_exception!(shale, Incomplete, ShaleError, "RocksDB's Incomplete status.");
create_exception!(
    shale,
    ShutdownInProgress,
    ShaleError,
    "RocksDB's ShutdownInProgress status."
);
create_exception!(shale, TimedOut, ShaleError, "RocksDB's TimedOut status.");
create_exception!(shale, Aborted, ShaleError, "RocksDB's Aborted status.");
create_exception!(shale, Busy, ShaleError, "RocksDB's Busy status.");
create_exception!(shale, Expired, ShaleError, "RocksDB's Expired status.");
create_exception!(shale, TryAgain, ShaleError, "RocksDB's TryAgain status.");
create_exception!(
    shale,
    CompactionTooLarge,
    ShaleError,
    "RocksDB's CompactionTooLarge status."
);
create_exception!(
    shale,
    ColumnFamilyDropped,
    ShaleError,
    "RocksDB's ColumnFamilyDropped status."
);
create_exception!(shale, Unknown, ShaleError, "An error of no other class.");
create_exception!(
    shale,
    DbClosedError,
    ShaleError,
    "The Rdict was closed (rocksdict's name)."
);

/// The Python exception for an engine error: one class per RocksDB status.
pub(crate) fn to_py(e: shale::Error) -> PyErr {
    use shale::ErrorKind as K;
    let m = e.to_string();
    match e.kind() {
        K::NotFound => NotFound::new_err(m),
        K::Corruption => Corruption::new_err(m),
        K::NotSupported => NotSupported::new_err(m),
        K::InvalidArgument => InvalidArgument::new_err(m),
        K::IOError => IOError::new_err(m),
        K::MergeInProgress => MergeInProgress::new_err(m),
        K::Incomplete => Incomplete::new_err(m),
        K::ShutdownInProgress => ShutdownInProgress::new_err(m),
        K::TimedOut => TimedOut::new_err(m),
        K::Aborted => Aborted::new_err(m),
        K::Busy => Busy::new_err(m),
        K::Expired => Expired::new_err(m),
        K::TryAgain => TryAgain::new_err(m),
        K::CompactionTooLarge => CompactionTooLarge::new_err(m),
        K::ColumnFamilyDropped => ColumnFamilyDropped::new_err(m),
        K::Unknown => Unknown::new_err(m),
    }
}

/// Add the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    macro_rules! add_errors {
        ($($e:ident),*) => { $(m.add(stringify!($e), py.get_type::<$e>())?;)* };
    }
    add_errors!(
        ShaleError,
        NotFound,
        Corruption,
        NotSupported,
        InvalidArgument,
        IOError,
        MergeInProgress,
        Incomplete,
        ShutdownInProgress,
        TimedOut,
        Aborted,
        Busy,
        Expired,
        TryAgain,
        CompactionTooLarge,
        ColumnFamilyDropped,
        Unknown,
        DbClosedError
    );
    Ok(())
}
