//! The file-system abstraction: every byte Shale reads or writes goes through [`FileSystem`].
//!
//! Implementations: [`PosixFs`] (the real one), [`MemFs`] (in memory, with power-loss
//! simulation) and [`FaultFs`] (wraps another and injects I/O errors).

mod background;
mod fault;
mod file_system;
mod forwarding;
mod log_order;
mod mem;
mod posix;

pub(crate) use background::BackgroundWritable;
pub(crate) use fault::ActivityGuard;
pub use fault::{FaultFs, FaultKind, IoActivity};
pub(crate) use file_system::{copy_file, name_of};
pub use file_system::{FileLock, FileSystem, RandomAccessFile, WritableFile};
pub use forwarding::ForwardingFs;
pub use log_order::kill_inside_wal_appends;
#[cfg(test)]
pub(crate) use log_order::{copy_interrupted, head_offset, head_range};
pub use mem::MemFs;
pub use posix::PosixFs;
