//! The file-system abstraction: every byte Shale reads or writes goes through [`FileSystem`].
//!
//! Implementations: [`PosixFs`] (the real one), [`ForwardingFs`] (a base for wrappers), and for
//! tests, in [`testing`], `MemFs` (in memory, with power-loss simulation) and `FaultFs` (wraps
//! another and injects I/O errors).

mod background;
mod fault;
mod file_system;
mod forwarding;
mod fsync;
mod log_order;
mod mem;
mod posix;
pub mod testing;

pub(crate) use background::BackgroundWritable;
pub(crate) use fault::ActivityGuard;
pub(crate) use fault::IoActivity;
pub(crate) use file_system::{copy_file, name_of};
pub use file_system::{FileLock, FileSystem, RandomAccessFile, WritableFile};
pub use forwarding::ForwardingFs;
pub(crate) use fsync::with_fsync;
#[cfg(test)]
pub(crate) use log_order::{copy_interrupted, head_offset, head_range};
#[cfg(test)]
pub(crate) use mem::MemFs;
pub use posix::PosixFs;
