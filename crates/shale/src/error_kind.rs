//! The `rocksdb` crate's `ErrorKind`: the class of an [`Error`], as RocksDB's `Status` codes.

use crate::error::Error;

/// The class of an error (the `rocksdb` crate's `ErrorKind`, RocksDB's `Status::Code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
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
}

impl Error {
    /// The class of this error. A background error has the kind of the failure that caused it
    /// (as RocksDB reports the background status itself).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Io { .. } => ErrorKind::IOError,
            Error::Busy(_) => ErrorKind::Busy,
            Error::NotSupported(_) => ErrorKind::NotSupported,
            Error::Background(e) => e.kind(),
            Error::Incomplete(_) => ErrorKind::Incomplete,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::TimedOut(_) => ErrorKind::TimedOut,
            Error::TryAgain(_) => ErrorKind::TryAgain,
            Error::Expired(_) => ErrorKind::Expired,
            Error::MergeInProgress(_) => ErrorKind::MergeInProgress,
            // RocksDB has no status for a panic (it would abort the process): the operation was
            // abandoned.
            Error::Panic { .. } => ErrorKind::Aborted,
        }
    }
}
