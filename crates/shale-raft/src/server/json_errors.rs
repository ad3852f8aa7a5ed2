//! hyper answers a request it cannot parse (a malformed request line or header, an unknown HTTP
//! version, a URI or head too large) by itself, before any handler runs, with an empty body:
//! `HTTP/1.1 400 Bad Request`, `414 URI Too Long`, `431 Request Header Fields Too Large`.
//! hyper 1 has no hook for those answers, so this socket wrapper rewrites them on their way out
//! into the service's documented error form, a JSON body `{"error": "..."}`.
//!
//! Every answer of the service's own handlers with a 4xx or 5xx status carries a JSON body, so
//! an error answer whose head says `content-length: 0` is one of hyper's and nothing else is
//! touched. The rewritten answer keeps hyper's status and `connection: close`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub(crate) struct JsonErrors<S> {
    inner: S,
    /// A rewritten answer being written: its bytes, how many are written, and the length of
    /// hyper's answer it replaces (reported to hyper once all of it is written).
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<S> JsonErrors<S> {
    pub(crate) fn new(inner: S) -> Self {
        JsonErrors { inner, pending: None }
    }
}

/// The JSON-bodied replacement of `buf` when `buf` is (exactly) one of hyper's empty error
/// answers; `None` for anything else.
pub(crate) fn rewrite(buf: &[u8]) -> Option<Vec<u8>> {
    let head = std::str::from_utf8(buf).ok()?;
    let head = head.strip_suffix("\r\n\r\n")?;
    if head.contains("\r\n\r\n") {
        return None;
    }
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status = status_line.strip_prefix("HTTP/1.1 ")?;
    let code: u16 = status.get(..3)?.parse().ok()?;
    if !(400..600).contains(&code) {
        return None;
    }
    let mut empty = false;
    let mut kept = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':')?;
        if name.eq_ignore_ascii_case("content-length") {
            if value.trim() != "0" {
                return None;
            }
            empty = true;
        } else if !name.eq_ignore_ascii_case("content-type") {
            kept.push(line);
        }
    }
    if !empty {
        return None;
    }
    let reason = status.get(4..).unwrap_or("").trim();
    let body = serde_json::json!({ "error": format!("malformed request: {code} {reason}") }).to_string();
    let mut out = format!("{status_line}\r\ncontent-type: application/json\r\n");
    for line in kept {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    Some(out.into_bytes())
}

impl<S: AsyncWrite + Unpin> JsonErrors<S> {
    /// Write what remains of a rewritten answer; Ready(Ok(n)) with the length of the answer it
    /// replaced once all of it is written.
    fn drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((bytes, done, replaced)) = self.pending.as_mut() {
            if *done == bytes.len() {
                let n = *replaced;
                self.pending = None;
                return Poll::Ready(Ok(n));
            }
            match Pin::new(&mut self.inner).poll_write(cx, &bytes[*done..]) {
                Poll::Ready(Ok(0)) => {
                    self.pending = None;
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => *done += n,
                Poll::Ready(Err(e)) => {
                    self.pending = None;
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(0))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonErrors<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonErrors<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.pending.is_none() {
            match rewrite(buf) {
                Some(bytes) => self.pending = Some((bytes, 0, buf.len())),
                None => return Pin::new(&mut self.inner).poll_write(cx, buf),
            }
        }
        self.drive(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.pending.is_none() {
            // hyper's error answer is a head alone, so it arrives as one non-empty slice.
            let mut nonempty = bufs.iter().filter(|b| !b.is_empty());
            if let (Some(only), None) = (nonempty.next(), nonempty.next()) {
                if let Some(bytes) = rewrite(only) {
                    self.pending = Some((bytes, 0, only.len()));
                }
            }
            if self.pending.is_none() {
                return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
            }
        }
        self.drive(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_empty_error_answers_are_rewritten() {
        let canned = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Sat, 28 Nov 2026 20:25:17 GMT\r\n\r\n";
        let out = String::from_utf8(rewrite(canned).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{head}"
        );
        assert!(head.contains("\r\nconnection: close"), "{head}");
        assert!(head.contains("\r\ncontent-type: application/json"), "{head}");
        assert!(head.contains(&format!("\r\ncontent-length: {}", body.len())), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"], "malformed request: 431 Request Header Fields Too Large");
        // The service's own answers, successes, and partial writes pass untouched.
        let ours =
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"error\":1}";
        assert!(rewrite(ours).is_none());
        assert!(rewrite(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(rewrite(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n").is_none());
        assert!(rewrite(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nx\r\n\r\n").is_none());
    }

    #[tokio::test]
    async fn a_rewritten_answer_is_written_whole_through_a_narrow_pipe() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (a, mut b) = tokio::io::duplex(7);
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            b.read_to_end(&mut out).await.unwrap();
            out
        });
        let mut w = JsonErrors::new(a);
        let canned = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        w.write_all(canned).await.unwrap();
        w.shutdown().await.unwrap();
        drop(w);
        let out = reader.await.unwrap();
        assert_eq!(out, rewrite(canned).unwrap());
    }
}
