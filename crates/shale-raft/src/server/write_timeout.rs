//! A connection whose writes must make progress within a time limit: an answer the client does
//! not read (its receive window closed) fails the connection after `limit` without progress, so
//! the connection and its slot are released. hyper 1's HTTP/1 builder bounds reading a request
//! head (`header_read_timeout`) but not writing an answer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{sleep, Sleep};

pub(crate) struct WriteTimeout<S> {
    inner: S,
    limit: Duration,
    /// Armed while a write waits for the socket; reset whenever one makes progress.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteTimeout<S> {
    pub(crate) fn new(inner: S, limit: Duration) -> Self {
        WriteTimeout {
            inner,
            limit,
            deadline: None,
        }
    }

    /// After a write that is still pending: time out once `limit` passed since it began waiting.
    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let d = self.deadline.get_or_insert_with(|| Box::pin(sleep(limit)));
        match d.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing of the answer for {} ms", limit.as_millis()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed(&mut self) {
        self.deadline = None;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeout<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Pending => self.pending(cx),
            r => {
                self.progressed();
                r
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.pending(cx),
            r => {
                self.progressed();
                r
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Pending => self.pending(cx),
            r => {
                self.progressed();
                r
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_shutdown(cx) {
            Poll::Pending => self.pending(cx),
            r => {
                self.progressed();
                r
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A peer that never reads: the writer fails with TimedOut after the limit instead of
    /// waiting forever; a peer that reads lets it finish.
    #[tokio::test]
    async fn a_write_the_peer_never_reads_times_out() {
        // The other end is kept open and never read.
        let (a, _b) = tokio::io::duplex(1024);
        let mut w = WriteTimeout::new(a, Duration::from_millis(200));
        let started = tokio::time::Instant::now();
        let e = w.write_all(&vec![7u8; 1 << 20]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(started.elapsed() >= Duration::from_millis(200));
        let (a, mut b2) = tokio::io::duplex(1024);
        let mut w = WriteTimeout::new(a, Duration::from_millis(200));
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut b2, &mut out).await.unwrap();
            out.len()
        });
        w.write_all(&vec![7u8; 1 << 20]).await.unwrap();
        w.shutdown().await.unwrap();
        drop(w);
        assert_eq!(reader.await.unwrap(), 1 << 20);
    }
}
