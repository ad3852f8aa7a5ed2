//! The load generator behind `shale serve-bench`: connections that each write one key after
//! another for a fixed time, and the latencies of the acknowledged writes.

use std::time::{Duration, Instant};

use super::client::HttpClient;

/// What a load run measured.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Acknowledged writes (HTTP 200) and failed ones.
    pub ok: u64,
    pub errors: u64,
    pub secs: f64,
    /// Latency percentiles of the acknowledged writes, in microseconds.
    pub p50_us: u64,
    pub p99_us: u64,
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// One POST, waiting for the answer (at most `timeout`).
pub fn post_blocking(
    addr: &str,
    path: &str,
    body: &[u8],
    token: Option<String>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    rt.block_on(async {
        let mut c = HttpClient::new(addr, token);
        let (s, b) = c.post(path, body.to_vec(), &[], timeout).await?;
        Ok((s.as_u16(), b.to_vec()))
    })
}

/// `connections` clients write `value_size`-byte values to `addr` for `duration`, each key new.
pub fn run_write_load(
    addr: &str,
    token: Option<String>,
    connections: usize,
    duration: Duration,
    value_size: usize,
) -> Result<LoadReport, String> {
    let rt = runtime()?;
    let value = "x".repeat(value_size);
    let start = Instant::now();
    let end = start + duration;
    let results = rt.block_on(async {
        let mut tasks = Vec::new();
        for conn in 0..connections {
            let (addr, token, value) = (addr.to_string(), token.clone(), value.clone());
            tasks.push(tokio::spawn(async move {
                let mut c = HttpClient::new(&addr, token);
                let (mut lat, mut errors) = (Vec::new(), 0u64);
                let mut i = 0u64;
                while Instant::now() < end {
                    i += 1;
                    let body = format!(r#"{{"Set":{{"key":"c{conn}-{i}","value":"{value}"}}}}"#);
                    let t = Instant::now();
                    match c.post("/write", body.into_bytes(), &[], Duration::from_secs(10)).await {
                        Ok((s, _)) if s.is_success() => lat.push(t.elapsed().as_micros() as u64),
                        _ => errors += 1,
                    }
                }
                (lat, errors)
            }));
        }
        let mut all = Vec::new();
        let mut errors = 0;
        for t in tasks {
            let (l, e) = t.await.map_err(|e| format!("load task: {e}"))?;
            all.extend(l);
            errors += e;
        }
        Ok::<_, String>((all, errors))
    });
    let (mut lat, errors) = results?;
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
    };
    Ok(LoadReport {
        ok: lat.len() as u64,
        errors,
        secs,
        p50_us: pct(0.50).unwrap_or(0),
        p99_us: pct(0.99).unwrap_or(0),
    })
}
