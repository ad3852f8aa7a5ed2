//! `shale serve-bench`: start clusters of `shale serve` nodes (child processes of this binary)
//! on loopback and measure acknowledged writes per second and their latency percentiles.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use shale_raft::post_blocking;

const HELP: &str = "usage: shale serve-bench [--nodes=1,3,5] [--connections=1,8,64] [--seconds=10]
                         [--value_size=1024] [--dir=DIR]

For each node count, starts that many `shale serve` nodes on 127.0.0.1 (data under --dir, default
a new directory in /tmp, removed at the end), forms the cluster, and for each connection count
writes new keys with --value_size-byte values to the leader for --seconds. Prints one line per
run: acknowledged writes/s and the p50/p99 latency of the acknowledged writes. Stops by itself.
";

struct Opts {
    nodes: Vec<usize>,
    connections: Vec<usize>,
    seconds: u64,
    value_size: usize,
    dir: Option<PathBuf>,
}

fn list(name: &str, v: &str) -> Result<Vec<usize>, String> {
    v.split(',')
        .map(|s| match s.trim().parse() {
            Ok(0) | Err(_) => Err(format!("--{name}: bad number '{s}'")),
            Ok(n) => Ok(n),
        })
        .collect()
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        nodes: vec![1, 3, 5],
        connections: vec![1, 8, 64],
        seconds: 10,
        value_size: 1024,
        dir: None,
    };
    for a in args {
        let a = a.trim_start_matches('-');
        let (name, v) = a.split_once('=').ok_or_else(|| format!("flag --{a} needs a value"))?;
        match name {
            "nodes" => o.nodes = list(name, v)?,
            "connections" => o.connections = list(name, v)?,
            "seconds" => o.seconds = v.parse().map_err(|_| format!("--seconds: bad number '{v}'"))?,
            "value_size" => o.value_size = v.parse().map_err(|_| format!("--value_size: bad number '{v}'"))?,
            "dir" => o.dir = Some(PathBuf::from(v)),
            _ => return Err(format!("unknown flag --{name}")),
        }
    }
    if o.seconds == 0 || o.seconds > 600 {
        return Err("--seconds must be 1..600".into());
    }
    Ok(o)
}

/// Child processes killed when dropped.
struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn post(addr: &str, path: &str, body: &str) -> Result<String, String> {
    let (s, b) = post_blocking(addr, path, body.as_bytes(), None, Duration::from_secs(30))?;
    let b = String::from_utf8_lossy(&b).into_owned();
    if s != 200 {
        return Err(format!("{addr}{path}: {s} {b}"));
    }
    Ok(b)
}

fn start_cluster(n: usize, dir: &Path) -> Result<(Nodes, String), String> {
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let mut addrs = Vec::new();
    let mut nodes = Nodes(Vec::new());
    for id in 1..=n {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("free port: {e}"))?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(&exe)
            .arg("serve")
            .arg(format!("--id={id}"))
            .arg(format!("--addr={addr}"))
            .arg(format!("--db={}", dir.join(format!("n{id}")).display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting node {id}: {e}"))?;
        nodes.0.push(child);
        addrs.push(addr);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while addrs.iter().any(|a| std::net::TcpStream::connect(a).is_err()) {
        if Instant::now() > deadline {
            return Err("nodes did not start listening in 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    post(&addrs[0], "/init", "")?;
    for (i, a) in addrs.iter().enumerate().skip(1) {
        post(
            &addrs[0],
            "/add-learner",
            &format!(r#"{{"id":{},"addr":"{a}"}}"#, i + 1),
        )?;
    }
    let ids: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    post(&addrs[0], "/change-membership", &format!("[{}]", ids.join(",")))?;
    Ok((nodes, addrs[0].clone()))
}

fn run(o: &Opts) -> Result<(), String> {
    let own_tmp = o.dir.is_none();
    let base = match &o.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("shale-serve-bench-{}", std::process::id())),
    };
    for &n in &o.nodes {
        let dir = base.join(format!("nodes{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        let (nodes, leader) = start_cluster(n, &dir)?;
        for &c in &o.connections {
            let r = shale_raft::run_write_load(&leader, None, c, Duration::from_secs(o.seconds), o.value_size)?;
            println!(
                "nodes={n} connections={c} value_size={} seconds={:.1} writes={} writes/s={:.0} p50_us={} p99_us={} errors={}",
                o.value_size,
                r.secs,
                r.ok,
                r.ok as f64 / r.secs,
                r.p50_us,
                r.p99_us,
                r.errors
            );
        }
        drop(nodes);
        let _ = std::fs::remove_dir_all(&dir);
    }
    if own_tmp {
        let _ = std::fs::remove_dir_all(&base);
    }
    Ok(())
}

pub fn main(args: &[String]) -> i32 {
    crate::flags::command_main("shale serve-bench", args, HELP, parse, |o| run(&o))
}
