//! The `rocksdb` crate's `ErrorKind`: the class of an [`Error`], as RocksDB's `Status` codes.

use crate::error::Error;

/// The class of an error (the `rocksdb` crate's `ErrorKind`, RocksDB's `Status::Code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// What was asked for does not exist any more ([`Error::NotFound`]).
    NotFound,
    /// Stored data failed a check ([`Error::Corruption`]).
    Corruption,
    /// The operation or format feature is not supported ([`Error::NotSupported`]).
    NotSupported,
    /// A bad option value or API misuse ([`Error::InvalidArgument`]).
    InvalidArgument,
    /// An operating-system I/O error ([`Error::Io`]).
    IOError,
    /// Merge operands could not be resolved ([`Error::MergeInProgress`]).
    MergeInProgress,
    /// The operation would have had to wait ([`Error::Incomplete`]).
    Incomplete,
    /// RocksDB's shutdown-in-progress status; no Shale error has this kind.
    ShutdownInProgress,
    /// A lock wait exceeded its timeout ([`Error::TimedOut`]).
    TimedOut,
    /// The operation was abandoned: Shale gives this kind to [`Error::Panic`].
    Aborted,
    /// A resource is in use, or a transaction conflict or deadlock ([`Error::Busy`]).
    Busy,
    /// A transaction ran past its expiration ([`Error::Expired`]).
    Expired,
    /// Retrying may succeed ([`Error::TryAgain`]).
    TryAgain,
    /// RocksDB's compaction-too-large status; no Shale error has this kind.
    CompactionTooLarge,
    /// RocksDB's column-family-dropped status; no Shale error has this kind (a write to a dropped
    /// family is [`ErrorKind::InvalidArgument`]).
    ColumnFamilyDropped,
    /// RocksDB's catch-all status; no Shale error has this kind.
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
