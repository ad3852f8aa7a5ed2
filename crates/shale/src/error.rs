//! The one public error type of Shale.
//!
//! Absence is not an error: `get` returns `Ok(None)`. Everything else that can go wrong is one of
//! the variants below; each carries enough context (file, offset, option name) to act on it.

use std::fmt;
use std::sync::Arc;

/// Result alias used throughout Shale.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error Shale returns.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// Bytes on disk are not what they must be. `file` is the file name (may be empty when the
    /// decoder did not know it), `offset` the byte offset inside it when known.
    Corruption {
        /// The file the bytes came from (empty when unknown).
        file: String,
        /// The byte offset in `file`, when known.
        offset: Option<u64>,
        /// What was wrong.
        msg: String,
    },
    /// A bad option value or a misuse of the API; the message names the option or argument.
    InvalidArgument(String),
    /// An operating-system I/O error on `file`.
    Io {
        /// The file the I/O was on (may be a directory or empty).
        file: String,
        /// The operating system's error.
        source: Arc<std::io::Error>,
    },
    /// The resource is in use (e.g. the DB directory is locked by another opener).
    Busy(String),
    /// The operation or format feature is not supported.
    NotSupported(String),
    /// A background job (flush, compaction) failed; writes are stopped until `resume()` or reopen.
    Background(Arc<Error>),
    /// Code running inside the engine panicked (a user comparator, merge operator or filter, or
    /// a bug): `context` says which work (e.g. "write group", "flush"), `message` is the panic's
    /// message. A panic on the write path stops writes as a background error does.
    Panic {
        /// The work the panic interrupted (e.g. "write group", "flush").
        context: String,
        /// The panic's message.
        message: String,
    },
    /// The operation could not finish without waiting (a write with `no_slowdown` during a write
    /// stall: RocksDB's `Status::Incomplete`).
    Incomplete(String),
    /// What was asked for does not exist any more (e.g. `get_updates_since` for a sequence
    /// number whose WAL was deleted: RocksDB's `Status::NotFound`).
    NotFound(String),
    /// A transaction waited longer than its lock timeout for a row lock (RocksDB's
    /// `Status::TimedOut`).
    TimedOut(String),
    /// The operation may succeed if retried: an optimistic transaction could not be checked for
    /// conflicts because the memtable history is too short (RocksDB's `Status::TryAgain`).
    TryAgain(String),
    /// A transaction ran past its expiration time; its locks may have been taken by others
    /// (RocksDB's `Status::Expired`).
    Expired(String),
    /// A read found merge operands but no base value and no way to resolve them (RocksDB's
    /// `Status::MergeInProgress`, e.g. `get_from_batch` without a merge operator).
    MergeInProgress(String),
}

impl Error {
    /// Corruption in a known file at a known offset.
    pub fn corruption(file: impl Into<String>, offset: Option<u64>, msg: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            msg: msg.into(),
        }
    }
    /// Corruption found by a decoder that does not know the file; callers add it with `in_file`.
    pub fn corrupt(msg: impl Into<String>) -> Error {
        Error::Corruption {
            file: String::new(),
            offset: None,
            msg: msg.into(),
        }
    }
    /// InvalidArgument naming an option or argument.
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }
    /// I/O error on a file.
    pub fn io(file: impl Into<String>, e: std::io::Error) -> Error {
        Error::Io {
            file: file.into(),
            source: Arc::new(e),
        }
    }
    /// Fill in file (and offset, if not yet known) of a Corruption produced without them.
    pub fn in_file(self, name: &str, off: Option<u64>) -> Error {
        match self {
            Error::Corruption { file, offset, msg } => Error::Corruption {
                file: if file.is_empty() { name.to_string() } else { file },
                offset: offset.or(off),
                msg,
            },
            Error::NotSupported(m) if !name.is_empty() && !m.contains(name) => {
                Error::NotSupported(format!("{name}: {m}"))
            }
            e => e,
        }
    }
    /// True for [`Error::Corruption`] (not looking inside [`Error::Background`]; use
    /// [`kind`](Self::kind) for that).
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
    /// True for [`Error::InvalidArgument`] (not looking inside [`Error::Background`]).
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self, Error::InvalidArgument(_))
    }
    /// True for [`Error::Io`] (not looking inside [`Error::Background`]).
    pub fn is_io(&self) -> bool {
        matches!(self, Error::Io { .. })
    }
    /// True for [`Error::Busy`] (not looking inside [`Error::Background`]).
    pub fn is_busy(&self) -> bool {
        matches!(self, Error::Busy(_))
    }
    /// True for [`Error::NotSupported`] (not looking inside [`Error::Background`]).
    pub fn is_not_supported(&self) -> bool {
        matches!(self, Error::NotSupported(_))
    }
    /// True if this error reports a panic (possibly wrapped in a background error).
    pub fn is_panic(&self) -> bool {
        match self {
            Error::Panic { .. } => true,
            Error::Background(e) => e.is_panic(),
            _ => false,
        }
    }
    /// The error for a caught panic payload (from `catch_unwind` or a thread's `join`).
    pub(crate) fn from_panic(context: &str, payload: Box<dyn std::any::Any + Send>) -> Error {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "panic with a non-string payload".into()
        };
        Error::Panic {
            context: context.to_string(),
            message,
        }
    }
    /// True for an ENOSPC I/O error (possibly wrapped in a background error).
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::Io { source, .. } => source.raw_os_error() == Some(libc::ENOSPC),
            Error::Background(e) => e.is_no_space(),
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Corruption { file, offset, msg } => {
                write!(f, "Corruption: {msg}")?;
                if !file.is_empty() {
                    write!(f, " in file {file}")?;
                }
                if let Some(o) = offset {
                    write!(f, " at offset {o}")?;
                }
                Ok(())
            }
            Error::InvalidArgument(m) => write!(f, "Invalid argument: {m}"),
            Error::Io { file, source } => write!(f, "IO error: {file}: {source}"),
            Error::Busy(m) => write!(f, "Resource busy: {m}"),
            Error::NotSupported(m) => write!(f, "Not implemented: {m}"),
            Error::Background(e) => write!(f, "Background error (writes stopped): {e}"),
            Error::Panic { context, message } => write!(f, "Panic in {context}: {message}"),
            Error::Incomplete(m) => write!(f, "Result incomplete: {m}"),
            Error::NotFound(m) => write!(f, "NotFound: {m}"),
            Error::TimedOut(m) => write!(f, "Operation timed out: {m}"),
            Error::TryAgain(m) => write!(f, "Operation failed. Try again.: {m}"),
            Error::Expired(m) => write!(f, "Operation expired: {m}"),
            Error::MergeInProgress(m) => write!(f, "Merge in progress: {m}"),
        }
    }
}

impl Error {
    /// The error's message, as `to_string()` gives it (the `rocksdb` crate's `Error::into_string`):
    /// RocksDB's status text (`"Invalid argument: ..."`, `"Corruption: ..."`) then the details.
    pub fn into_string(self) -> String {
        self.to_string()
    }
}

impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

/// Errors are equal when they are the same variant with equal fields; two I/O errors compare by
/// file, [`std::io::ErrorKind`] and message (the operating system's error itself has no
/// equality). This lets code compare results, as with the `rocksdb` crate's `Error`.
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        use Error as E;
        match (self, other) {
            (
                E::Corruption { file, offset, msg },
                E::Corruption {
                    file: f2,
                    offset: o2,
                    msg: m2,
                },
            ) => file == f2 && offset == o2 && msg == m2,
            (E::Io { file, source }, E::Io { file: f2, source: s2 }) => {
                file == f2 && source.kind() == s2.kind() && source.to_string() == s2.to_string()
            }
            (E::Background(a), E::Background(b)) => a == b,
            (
                E::Panic { context, message },
                E::Panic {
                    context: c2,
                    message: m2,
                },
            ) => context == c2 && message == m2,
            (E::InvalidArgument(a), E::InvalidArgument(b))
            | (E::Busy(a), E::Busy(b))
            | (E::NotSupported(a), E::NotSupported(b))
            | (E::Incomplete(a), E::Incomplete(b))
            | (E::NotFound(a), E::NotFound(b))
            | (E::TimedOut(a), E::TimedOut(b))
            | (E::TryAgain(a), E::TryAgain(b))
            | (E::Expired(a), E::Expired(b))
            | (E::MergeInProgress(a), E::MergeInProgress(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Error {}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.as_ref()),
            Error::Background(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_compare_by_variant_and_fields() {
        assert_eq!(Error::invalid("x"), Error::invalid("x"));
        assert_ne!(Error::invalid("x"), Error::invalid("y"));
        assert_ne!(Error::invalid("x"), Error::NotSupported("x".into()));
        assert_eq!(
            Error::corruption("f", Some(3), "m"),
            Error::corruption("f", Some(3), "m")
        );
        assert_ne!(Error::corruption("f", Some(3), "m"), Error::corruption("f", None, "m"));
        let io = |k| Error::Io {
            file: "f".into(),
            source: Arc::new(std::io::Error::new(k, "boom")),
        };
        assert_eq!(io(std::io::ErrorKind::Other), io(std::io::ErrorKind::Other));
        assert_ne!(io(std::io::ErrorKind::Other), io(std::io::ErrorKind::NotFound));
        let bg = |e| Error::Background(Arc::new(e));
        assert_eq!(bg(Error::invalid("x")), bg(Error::invalid("x")));
        assert_ne!(bg(Error::invalid("x")), Error::invalid("x"));
        assert_eq!(
            Some(Err::<(), _>(Error::Busy("l".into()))),
            Some(Err(Error::Busy("l".into())))
        );
    }

    #[test]
    fn errors_compare_by_variant_and_message() {
        assert_eq!(Error::invalid("bad x"), Error::invalid("bad x"));
        assert_ne!(Error::invalid("bad x"), Error::invalid("bad y"));
        assert_ne!(Error::Busy("m".into()), Error::NotSupported("m".into()));
        let io = |k| Error::io("f", std::io::Error::new(k, "boom"));
        assert_eq!(io(std::io::ErrorKind::Other), io(std::io::ErrorKind::Other));
        assert_ne!(
            Error::io("f", std::io::Error::other("a")),
            Error::io("f", std::io::Error::other("b"))
        );
    }

    #[test]
    fn into_string_is_the_status_text() {
        assert_eq!(Error::invalid("bad x").into_string(), "Invalid argument: bad x");
        let s: String = Error::NotFound("gone".into()).into();
        assert_eq!(s, "NotFound: gone");
    }
}
