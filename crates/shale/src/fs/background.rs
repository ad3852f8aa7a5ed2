//! A [`WritableFile`] whose system calls run on a writer thread: appends are gathered into
//! large chunks, and a full chunk is handed to the thread, which appends it to the wrapped file
//! (and passes on cache hints) while the caller goes on producing the next bytes. A bulk load
//! (`SstFileWriter`) spends about as much time in the kernel (page-cache writes, writeback) as
//! building blocks; on two cores the two now overlap. docs/ingest.md, "Writing external files".
//!
//! Order and failures: the thread applies the commands in the order they were given. The first
//! failure of the wrapped file is kept and returned by every later call (fail-stop: nothing
//! more is written). `flush` and `sync` wait for everything before them. The thread starts with
//! the first full chunk, so a small file is written by the caller itself, with no thread.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::file_system::WritableFile;
use crate::error::{Error, Result};

/// Bytes gathered before they are handed to the writer thread.
const CHUNK: usize = 1 << 20;
/// Chunks queued for the thread at most (beyond the one it writes).
const QUEUED: usize = 2;

enum Cmd {
    Write(Vec<u8>),
    Invalidate,
    Flush(SyncSender<Result<()>>),
    Sync(SyncSender<Result<()>>),
}

struct Worker {
    tx: Option<SyncSender<Cmd>>,
    /// Emptied chunk buffers coming back for reuse.
    free: Receiver<Vec<u8>>,
    handle: Option<JoinHandle<()>>,
}

/// See the module comment.
pub(crate) struct BackgroundWritable {
    /// The wrapped file, until the thread takes it.
    inner: Option<Box<dyn WritableFile>>,
    buf: Vec<u8>,
    size: u64,
    worker: Option<Worker>,
    /// The thread's first failure.
    error: Arc<Mutex<Option<Error>>>,
}

impl BackgroundWritable {
    pub(crate) fn new(inner: Box<dyn WritableFile>) -> BackgroundWritable {
        BackgroundWritable {
            inner: Some(inner),
            buf: Vec::new(),
            size: 0,
            worker: None,
            error: Arc::new(Mutex::new(None)),
        }
    }

    fn check(&self) -> Result<()> {
        match &*self.error.lock().unwrap() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Start the writer thread (it takes the wrapped file); false if no thread could start.
    fn start(&mut self) -> bool {
        let Some(mut file) = self.inner.take() else {
            return self.worker.is_some();
        };
        let (tx, rx) = sync_channel::<Cmd>(QUEUED);
        let (free_tx, free) = sync_channel::<Vec<u8>>(QUEUED + 2);
        let error = self.error.clone();
        let spawned = std::thread::Builder::new()
            .name("shale-file-writer".into())
            .spawn(move || {
                let fail = |e: Error| {
                    error.lock().unwrap().get_or_insert(e);
                };
                let failed = || error.lock().unwrap().is_some();
                for cmd in rx {
                    match cmd {
                        Cmd::Write(mut b) => {
                            if !failed() {
                                if let Err(e) = file.append(&b) {
                                    fail(e);
                                }
                            }
                            b.clear();
                            let _ = free_tx.try_send(b);
                        }
                        Cmd::Invalidate => {
                            if !failed() {
                                if let Err(e) = file.invalidate_cache() {
                                    fail(e);
                                }
                            }
                        }
                        Cmd::Flush(reply) | Cmd::Sync(reply) if failed() => {
                            let _ = reply.send(Err(error.lock().unwrap().clone().unwrap()));
                        }
                        Cmd::Flush(reply) => {
                            let r = file.flush();
                            if let Err(e) = &r {
                                fail(e.clone());
                            }
                            let _ = reply.send(r);
                        }
                        Cmd::Sync(reply) => {
                            let r = file.sync();
                            if let Err(e) = &r {
                                fail(e.clone());
                            }
                            let _ = reply.send(r);
                        }
                    }
                }
                // Dropping the file here flushes what it still buffers (unless it failed).
            });
        match spawned {
            Ok(handle) => {
                self.worker = Some(Worker {
                    tx: Some(tx),
                    free,
                    handle: Some(handle),
                });
                true
            }
            Err(_) => {
                // No thread (the file went with the closure): the write fails.
                let e = Error::io(
                    "shale-file-writer",
                    std::io::Error::other("cannot start a writer thread"),
                );
                self.error.lock().unwrap().get_or_insert(e);
                false
            }
        }
    }

    /// Send a command to the thread; a thread that is gone has failed.
    fn send(&mut self, cmd: Cmd) -> Result<()> {
        let w = self.worker.as_ref().expect("the writer thread is running");
        if w.tx.as_ref().is_some_and(|tx| tx.send(cmd).is_ok()) {
            return Ok(());
        }
        self.check()?;
        Err(Error::io(
            "shale-file-writer",
            std::io::Error::other("the writer thread stopped"),
        ))
    }

    /// Hand the gathered bytes to the thread (starting it if needed).
    fn hand_over(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.worker.is_none() && !self.start() {
            return self.check();
        }
        let next = self
            .worker
            .as_ref()
            .and_then(|w| w.free.try_recv().ok())
            .unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.buf, next);
        self.send(Cmd::Write(full))
    }

    /// Run `flush` or `sync` after everything before it, and wait for its outcome.
    fn barrier(&mut self, sync: bool) -> Result<()> {
        self.check()?;
        if let Some(f) = self.inner.as_mut() {
            // No thread yet: write directly.
            if !self.buf.is_empty() {
                f.append(&self.buf)?;
                self.buf.clear();
            }
            return if sync { f.sync() } else { f.flush() };
        }
        self.hand_over()?;
        let (tx, rx) = sync_channel(1);
        self.send(if sync { Cmd::Sync(tx) } else { Cmd::Flush(tx) })?;
        rx.recv().unwrap_or_else(|_| {
            self.check()?;
            Err(Error::io(
                "shale-file-writer",
                std::io::Error::other("the writer thread stopped"),
            ))
        })
    }
}

impl WritableFile for BackgroundWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.check()?;
        self.size += data.len() as u64;
        if self.buf.capacity() == 0 {
            self.buf.reserve(CHUNK);
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.hand_over()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.barrier(false)
    }
    fn sync(&mut self) -> Result<()> {
        self.barrier(true)
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn invalidate_cache(&mut self) -> Result<()> {
        self.check()?;
        match self.inner.as_mut() {
            Some(f) => f.invalidate_cache(),
            None => self.send(Cmd::Invalidate),
        }
    }
}

impl Drop for BackgroundWritable {
    fn drop(&mut self) {
        if let Some(mut w) = self.worker.take() {
            if !self.buf.is_empty() && self.check().is_ok() {
                let b = std::mem::take(&mut self.buf);
                if let Some(tx) = &w.tx {
                    let _ = tx.send(Cmd::Write(b));
                }
            }
            w.tx = None;
            if let Some(h) = w.handle.take() {
                let _ = h.join();
            }
        } else if !self.buf.is_empty() && self.check().is_ok() {
            if let Some(f) = self.inner.as_mut() {
                let _ = f.append(&self.buf);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fs::fault::{FaultFs, FaultKind};
    use crate::fs::file_system::FileSystem;
    use crate::fs::mem::MemFs;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    /// Bytes cross the thread in order (several chunks, odd-sized appends), `sync` makes them
    /// durable, a small file never starts the thread, and dropping without `sync` still writes
    /// everything to the wrapped file (as the wrapped file's own drop does).
    #[test]
    fn bytes_arrive_in_order_and_sync_makes_them_durable() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let want = pattern(3 * CHUNK + 12_345);
        for (name, len) in [("big", want.len()), ("small", 1000)] {
            let p = Path::new("/d").join(name);
            let mut w = BackgroundWritable::new(fs.new_writable(&p).unwrap());
            for piece in want[..len].chunks(4093) {
                w.append(piece).unwrap();
                w.invalidate_cache().unwrap();
            }
            assert_eq!(w.size(), len as u64);
            assert_eq!(w.worker.is_some(), len >= CHUNK, "{name}");
            w.sync().unwrap();
            drop(w);
            fs.sync_dir(Path::new("/d")).unwrap();
            fs.power_loss();
            assert_eq!(fs.read_all(&p).unwrap(), &want[..len], "{name}");
        }
        let p = Path::new("/d/unsynced");
        let mut w = BackgroundWritable::new(fs.new_writable(p).unwrap());
        w.append(&want).unwrap();
        drop(w);
        assert_eq!(fs.read_all(p).unwrap(), want);
    }

    /// A failure on the thread is returned by the next calls (fail-stop), and `sync` never
    /// reports success after a failed append.
    #[test]
    fn a_failed_append_on_the_thread_fails_the_later_calls() {
        let mem = MemFs::new();
        mem.create_dir_all(Path::new("/d")).unwrap();
        let faults = FaultFs::new(Arc::new(mem.clone()));
        let mut w = BackgroundWritable::new(faults.new_writable(Path::new("/d/f")).unwrap());
        w.append(&pattern(CHUNK)).unwrap(); // the thread starts and writes this chunk
        w.flush().unwrap();
        faults.inject(FaultKind::WriteEio, None);
        w.append(&pattern(CHUNK)).unwrap(); // handed over; fails on the thread
        assert!(w.sync().is_err());
        faults.clear();
        assert!(w.append(b"x").is_err(), "a write after the failure was accepted");
        assert!(w.sync().is_err());
    }
}
