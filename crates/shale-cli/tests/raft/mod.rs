//! A cluster of `shale serve` child processes on loopback for the Raft tests, and a tiny
//! blocking HTTP client. Every wait is bounded; the processes are killed when the cluster drops.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// POST (or GET when `body` is None) and return the status and the body.
pub fn http(addr: &str, path: &str, body: Option<&[u8]>, headers: &[(&str, &str)]) -> Result<(u16, String), String> {
    let sa = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut s = TcpStream::connect_timeout(&sa, Duration::from_secs(2)).map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let method = if body.is_some() { "POST" } else { "GET" };
    let b = body.unwrap_or(b"");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        b.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    s.write_all(b).map_err(|e| e.to_string())?;
    read_answer(addr, path, s)
}

/// Send only the head of a POST declaring a `len`-byte body, and read the answer.
pub fn http_head_only(addr: &str, path: &str, len: usize, headers: &[(&str, &str)]) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut req = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {len}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    read_answer(addr, path, s)
}

fn read_answer(addr: &str, path: &str, mut s: TcpStream) -> Result<(u16, String), String> {
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| format!("{addr}{path}: {e}"))?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no HTTP answer: {text:?}"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("bad status line: {head:?}"))?;
    Ok((status, body.to_string()))
}

pub fn post(addr: &str, path: &str, body: &str) -> Result<(u16, String), String> {
    http(addr, path, Some(body.as_bytes()), &[])
}

pub fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// Poll `f` every 100 ms until it returns Some, for at most `secs` seconds.
pub fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out after {secs} s waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub struct Node {
    pub id: u64,
    pub addr: String,
    pub dir: PathBuf,
    child: Option<Child>,
}

pub struct Cluster {
    pub nodes: Vec<Node>,
    pub extra: Vec<String>,
    _tmp: tempfile::TempDir,
}

impl Cluster {
    /// `n` nodes (ids 1..=n), started; `extra` flags for every node.
    pub fn start(n: usize, extra: &[&str]) -> Cluster {
        let tmp = tempfile::TempDir::new().unwrap();
        let nodes = (1..=n as u64)
            .map(|id| Node {
                id,
                addr: format!("127.0.0.1:{}", free_port()),
                dir: tmp.path().join(format!("n{id}")),
                child: None,
            })
            .collect();
        let mut c = Cluster {
            nodes,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            _tmp: tmp,
        };
        for i in 0..n {
            c.spawn(i);
        }
        c
    }

    /// The stderr of node `i` (all its runs).
    pub fn log(&self, i: usize) -> PathBuf {
        self._tmp.path().join(format!("n{}.log", self.nodes[i].id))
    }

    pub fn logs(&self) -> String {
        (0..self.nodes.len())
            .map(|i| {
                format!(
                    "--- node {}:\n{}",
                    i + 1,
                    std::fs::read_to_string(self.log(i)).unwrap_or_default()
                )
            })
            .collect()
    }

    pub fn addr(&self, i: usize) -> &str {
        &self.nodes[i].addr
    }

    pub fn spawn(&mut self, i: usize) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log(i))
            .unwrap();
        let n = &mut self.nodes[i];
        let child = Command::new(env!("CARGO_BIN_EXE_shale"))
            .arg("serve")
            .arg(format!("--id={}", n.id))
            .arg(format!("--addr={}", n.addr))
            .arg(format!("--db={}", n.dir.display()))
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn shale serve");
        n.child = Some(child);
        let addr = n.addr.clone();
        wait_for(&format!("node {} to listen", i + 1), 20, || {
            TcpStream::connect(addr.as_str()).ok().map(|_| ())
        });
    }

    /// The process id of node `i` while it runs.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.nodes[i].child.as_ref().map(|c| c.id())
    }

    /// SIGKILL: no chance to flush or close anything.
    pub fn kill9(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    pub fn metrics(&self, i: usize) -> Option<Value> {
        let (s, b) = http(self.addr(i), "/metrics", None, &[]).ok()?;
        (s == 200).then(|| json(&b))
    }

    /// Init on node 1, every other node a learner, then all voters.
    pub fn form(&self) {
        let (s, b) = post(self.addr(0), "/init", "").unwrap();
        assert_eq!(s, 200, "{b}");
        for n in &self.nodes[1..] {
            let body = format!(r#"{{"id":{},"addr":"{}"}}"#, n.id, n.addr);
            let (s, b) = post(self.addr(0), "/add-learner", &body).unwrap();
            assert_eq!(s, 200, "{b}");
        }
        let ids: Vec<String> = self.nodes.iter().map(|n| n.id.to_string()).collect();
        let (s, b) = post(self.addr(0), "/change-membership", &format!("[{}]", ids.join(","))).unwrap();
        assert_eq!(s, 200, "{b}");
    }

    /// The index of the leader among `among`: a node that says it leads, in the highest term
    /// any of them knows (a deposed leader may not have heard of the new term yet).
    pub fn leader(&self, among: &[usize]) -> usize {
        wait_for("a leader", 30, || {
            let ms: Vec<(usize, serde_json::Value)> =
                among.iter().filter_map(|&i| Some((i, self.metrics(i)?))).collect();
            let top = ms.iter().filter_map(|(_, m)| m["current_term"].as_u64()).max()?;
            ms.iter()
                .find(|(_, m)| m["state"] == "Leader" && m["current_term"].as_u64() == Some(top))
                .map(|(i, _)| *i)
        })
    }

    pub fn write(&self, i: usize, key: &str, value: &str) -> Result<(u16, String), String> {
        post(
            self.addr(i),
            "/write",
            &format!(r#"{{"Set":{{"key":"{key}","value":"{value}"}}}}"#),
        )
    }

    pub fn read(&self, i: usize, path: &str, key: &str) -> Option<String> {
        let (s, b) = post(self.addr(i), path, &format!(r#"{{"key":"{key}"}}"#)).ok()?;
        if s != 200 {
            return None;
        }
        json(&b)["value"].as_str().map(str::to_string)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill9(i);
        }
    }
}
