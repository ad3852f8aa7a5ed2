//! The snapshot data openraft holds: a snapshot file in the store's snapshot directory, read or
//! written through Shale's `FileSystem` (so the in-memory file system of the tests sees it too),
//! never the whole snapshot in memory.

use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use shale::fs::FileSystem;
use shale::fs::RandomAccessFile;
use shale::fs::WritableFile;
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

/// The most one read hands out (the caller's buffer may be smaller).
const READ_CHUNK: usize = 1 << 20;

enum Mode {
    Read(Arc<dyn RandomAccessFile>),
    Write(Box<dyn WritableFile>),
}

/// A snapshot file opened for reading (a snapshot built or kept by the store) or for writing (a
/// snapshot being received). Reads and seeks go anywhere in a file being read; a file being
/// written is only appended to (a seek must name its end).
pub struct SnapshotData {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    mode: Mode,
    pos: u64,
    len: u64,
}

fn io_err(e: shale::Error) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

impl SnapshotData {
    pub(crate) fn open(fs: Arc<dyn FileSystem>, path: &Path) -> shale::error::Result<SnapshotData> {
        let f = fs.open_random(path)?;
        let len = f.size();
        Ok(SnapshotData {
            fs,
            path: path.to_path_buf(),
            mode: Mode::Read(f),
            pos: 0,
            len,
        })
    }

    pub(crate) fn create(fs: Arc<dyn FileSystem>, path: &Path) -> shale::error::Result<SnapshotData> {
        let f = fs.new_writable(path)?;
        Ok(SnapshotData {
            fs,
            path: path.to_path_buf(),
            mode: Mode::Write(f),
            pos: 0,
            len: 0,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `data` (a file being written).
    pub(crate) fn append(&mut self, data: &[u8]) -> shale::error::Result<()> {
        match &mut self.mode {
            Mode::Write(w) => {
                w.append(data)?;
                self.len += data.len() as u64;
                self.pos = self.len;
                Ok(())
            }
            Mode::Read(_) => Err(shale::Error::invalid(format!(
                "snapshot {}: opened for reading, not writing",
                self.path.display()
            ))),
        }
    }

    /// A file being written is synced and reopened for reading; the random-access handle.
    pub(crate) fn reader(&mut self) -> shale::error::Result<Arc<dyn RandomAccessFile>> {
        if let Mode::Write(w) = &mut self.mode {
            w.flush()?;
            w.sync()?;
            let f = self.fs.open_random(&self.path)?;
            self.len = f.size();
            self.mode = Mode::Read(f);
        }
        match &self.mode {
            Mode::Read(f) => Ok(f.clone()),
            Mode::Write(_) => unreachable!("switched to reading above"),
        }
    }
}

impl AsyncRead for SnapshotData {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let me = &mut *self;
        let f = match &me.mode {
            Mode::Read(f) => f,
            Mode::Write(_) => return Poll::Ready(Err(std::io::Error::other("snapshot is being written"))),
        };
        let n = (me.len.saturating_sub(me.pos)).min(buf.remaining().min(READ_CHUNK) as u64) as usize;
        if n > 0 {
            let mut tmp = vec![0u8; n];
            if let Err(e) = f.read_exact_at(me.pos, &mut tmp) {
                return Poll::Ready(Err(io_err(e)));
            }
            buf.put_slice(&tmp);
            me.pos += n as u64;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for SnapshotData {
    fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        Poll::Ready(self.append(data).map(|()| data.len()).map_err(io_err))
    }
    fn poll_flush(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.mode {
            Mode::Write(w) => Poll::Ready(w.flush().map_err(io_err)),
            Mode::Read(_) => Poll::Ready(Ok(())),
        }
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.mode {
            Mode::Write(w) => Poll::Ready(w.flush().and_then(|()| w.sync()).map_err(io_err)),
            Mode::Read(_) => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncSeek for SnapshotData {
    fn start_seek(mut self: Pin<&mut Self>, to: SeekFrom) -> std::io::Result<()> {
        let me = &mut *self;
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => me.len.checked_add_signed(d),
            SeekFrom::Current(d) => me.pos.checked_add_signed(d),
        };
        match (target, &me.mode) {
            (Some(t), Mode::Read(_)) if t <= me.len => {
                me.pos = t;
                Ok(())
            }
            (Some(t), Mode::Write(_)) if t == me.len => Ok(()),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("snapshot {}: seek to {to:?} outside the file", me.path.display()),
            )),
        }
    }
    fn poll_complete(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<u64>> {
        Poll::Ready(Ok(self.pos))
    }
}
