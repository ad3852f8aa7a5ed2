//! A small HTTP/1.1 client on hyper: one kept-alive connection to one address, reconnected when
//! it breaks. The peers' Raft RPCs, the forwarding of client requests to the leader and the load
//! generator use it.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Headers every request of this crate may carry.
pub const AUTH_HEADER: &str = "authorization";
pub const CLUSTER_HEADER: &str = "x-shale-cluster";
pub const FORWARDED_HEADER: &str = "x-shale-forwarded";
/// The node a Raft RPC is meant for: a node with another id refuses it.
pub const NODE_HEADER: &str = "x-shale-node";

/// A connection to `addr` (host:port).
pub struct HttpClient {
    addr: String,
    token: Option<String>,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// Whether the last request was handed to the connection (it may have reached the other
    /// side) — false when it failed before (no connection, a connection not ready).
    sent: bool,
}

impl HttpClient {
    pub fn new(addr: &str, token: Option<String>) -> HttpClient {
        HttpClient {
            addr: addr.to_string(),
            token,
            sender: None,
            sent: false,
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Whether the last request may have reached the other side: false only when it certainly
    /// did not (it failed before it was handed to a connection).
    pub fn last_request_sent(&self) -> bool {
        self.sent
    }

    async fn connect(&mut self, timeout: Duration) -> Result<&mut SendRequest<Full<Bytes>>, String> {
        if self.sender.as_ref().is_some_and(|s| !s.is_closed()) {
            return Ok(self.sender.as_mut().expect("checked"));
        }
        let stream = tokio::time::timeout(timeout, TcpStream::connect(&self.addr))
            .await
            .map_err(|_| format!("connect to {}: timed out", self.addr))?
            .map_err(|e| format!("connect to {}: {e}", self.addr))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake with {}: {e}", self.addr))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(self.sender.insert(sender))
    }

    /// POST `body` to `path` with the given extra headers; the status and the whole answer.
    pub async fn post(
        &mut self,
        path: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<(StatusCode, Bytes), String> {
        self.request(Method::POST, path, body, headers, timeout).await
    }

    /// GET `path` with the given extra headers; the status and the whole answer.
    pub async fn get(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<(StatusCode, Bytes), String> {
        self.request(Method::GET, path, Vec::new(), headers, timeout).await
    }

    async fn request(
        &mut self,
        method: Method,
        path: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<(StatusCode, Bytes), String> {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.addr)
            .header("content-type", "application/json");
        if let Some(t) = &self.token {
            req = req.header(AUTH_HEADER, format!("Bearer {t}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| format!("request: {e}"))?;
        self.sent = false;
        let r = tokio::time::timeout(timeout, self.send(req, timeout)).await;
        let r = r.unwrap_or_else(|_| Err(format!("{}{path}: timed out after {timeout:?}", self.addr)));
        if r.is_err() {
            self.sender = None;
        }
        r
    }

    async fn send(&mut self, req: Request<Full<Bytes>>, timeout: Duration) -> Result<(StatusCode, Bytes), String> {
        let addr = self.addr.clone();
        let path = req.uri().path().to_string();
        let sender = self.connect(timeout).await?;
        sender.ready().await.map_err(|e| format!("{addr}: {e}"))?;
        self.sent = true;
        let resp = self
            .sender
            .as_mut()
            .expect("connected")
            .send_request(req)
            .await
            .map_err(|e| format!("{addr}{path}: {e}"))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{addr}{path}: reading the answer: {e}"))?
            .to_bytes();
        Ok((status, body))
    }
}
