//! The info log: `LOG` in the DB directory, as RocksDB writes it (timestamped lines, the
//! options at open, flushes, compactions, stalls, background errors and `EVENT_LOG_v1` JSON
//! lines). The previous `LOG` is renamed to `LOG.old.<micros>` at open; the log rolls over at
//! `max_log_file_size`; `keep_log_file_num` bounds the number of LOG files kept.
//!
//! Everything goes through the DB's [`FileSystem`]. The log is never a reason for a DB
//! operation to fail: a failed write is counted (`shale.log-write-errors`) and dropped. It is
//! written only from open, flush, compaction, stall and error paths, never per write.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::fs::{FileSystem, WritableFile};

/// The least severe messages written to the LOG (the `rocksdb` crate's `LogLevel`, RocksDB's
/// `InfoLogLevel`; default `Info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum LogLevel {
    /// Everything, debugging detail included.
    Debug = 0,
    /// Normal operation: open, flushes, compactions, events (the default).
    #[default]
    Info,
    /// Conditions worth attention that the DB handled.
    Warn,
    /// Failures, such as background errors.
    Error,
    /// Fatal conditions (RocksDB's `FATAL_LEVEL`; Shale itself writes no message at this level).
    Fatal,
    /// Only the header lines (options, version); the most restrictive level.
    Header,
}

/// The LOG's options (RocksDB's `info_log_level`, `max_log_file_size`, `keep_log_file_num`,
/// `stats_dump_period_sec`).
#[derive(Debug, Clone)]
pub(crate) struct InfoLogOptions {
    pub level: LogLevel,
    /// Roll over to a new LOG past this many bytes (0: never).
    pub max_log_file_size: usize,
    /// LOG files kept, the current one included (RocksDB's default 1000).
    pub keep_log_file_num: usize,
    /// Dump `rocksdb.stats` into the LOG this often (0: never; RocksDB's default 600).
    pub stats_dump_period_sec: u32,
    /// RocksDB's `db_log_dir`: the directory of the LOG files (None: the DB's directory).
    /// There a DB's LOG is named after the DB's absolute path ([`log_file_name`]).
    pub db_log_dir: Option<PathBuf>,
}

impl Default for InfoLogOptions {
    fn default() -> Self {
        InfoLogOptions {
            level: LogLevel::Info,
            max_log_file_size: 0,
            keep_log_file_num: 1000,
            stats_dump_period_sec: 600,
            db_log_dir: None,
        }
    }
}

/// The info log of one open DB. A disabled one (read-only opens) writes nothing.
pub(crate) struct InfoLog {
    fs: Option<Arc<dyn FileSystem>>,
    dir: PathBuf,
    /// The current LOG's file name in `dir` (`LOG`, or `<path>_LOG` in a `db_log_dir`).
    name: String,
    opts: InfoLogOptions,
    file: Mutex<Option<Box<dyn WritableFile>>>,
    errors: AtomicU64,
    next_job: AtomicU64,
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// `YYYY/MM/DD-HH:MM:SS.uuuuuu` in local time, as RocksDB's `PosixLogger`.
fn timestamp(micros: u64) -> String {
    let secs = (micros / 1_000_000) as libc::time_t;
    // SAFETY: `localtime_r` writes only into `tm`, which is a plain C struct we own.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&secs, &mut tm);
        tm
    };
    format!(
        "{:04}/{:02}/{:02}-{:02}:{:02}:{:02}.{:06}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        micros % 1_000_000
    )
}

fn thread_id() -> u64 {
    // SAFETY: `pthread_self` has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

#[cfg(test)]
pub(crate) fn log_name(dir: &Path) -> PathBuf {
    dir.join("LOG")
}

/// The LOG's directory and file name for the DB at `db_dir`: `<db_dir>/LOG`, or with a
/// `db_log_dir`, `<db_log_dir>/<path>_LOG` where `<path>` is the DB's absolute path with every
/// character but ASCII letters, digits, `-`, `.` and `_` made `_` (a leading one dropped), as
/// RocksDB names it, so the LOGs of several DBs can share a directory.
pub(crate) fn log_file_name(db_dir: &Path, db_log_dir: Option<&Path>) -> (PathBuf, String) {
    let Some(log_dir) = db_log_dir.filter(|d| !d.as_os_str().is_empty()) else {
        return (db_dir.to_path_buf(), "LOG".to_string());
    };
    let abs = std::path::absolute(db_dir).unwrap_or_else(|_| db_dir.to_path_buf());
    let mut name = String::new();
    for (i, c) in abs.to_string_lossy().chars().enumerate() {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
            name.push(c);
        } else if i > 0 {
            name.push('_');
        }
    }
    // RocksDB flattens into a buffer of 260 bytes, the suffix included.
    name.truncate(255 - "_LOG".len());
    name.push_str("_LOG");
    (log_dir.to_path_buf(), name)
}

impl InfoLog {
    /// An info log that writes nothing.
    pub(crate) fn disabled() -> InfoLog {
        InfoLog {
            fs: None,
            dir: PathBuf::new(),
            name: "LOG".to_string(),
            opts: InfoLogOptions::default(),
            file: Mutex::new(None),
            errors: AtomicU64::new(0),
            next_job: AtomicU64::new(1),
        }
    }

    /// Rename an existing `LOG` to `LOG.old.<micros>`, remove the oldest beyond
    /// `keep_log_file_num`, and start a new `LOG` (failures are counted, not returned).
    pub(crate) fn open(fs: Arc<dyn FileSystem>, dir: &Path, opts: &InfoLogOptions) -> InfoLog {
        let (dir, name) = log_file_name(dir, opts.db_log_dir.as_deref());
        let errors = AtomicU64::new(u64::from(fs.create_dir_all(&dir).is_err()));
        let log = InfoLog {
            fs: Some(fs),
            dir,
            name,
            opts: opts.clone(),
            file: Mutex::new(None),
            errors,
            next_job: AtomicU64::new(1),
        };
        let mut f = log.file.lock();
        log.roll(&mut f);
        drop(f);
        log
    }

    /// LOG writes that failed since open.
    pub(crate) fn write_errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// A new job id for a flush or compaction (RocksDB's `next_job_id_`).
    pub(crate) fn next_job_id(&self) -> u64 {
        self.next_job.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn enabled(&self, level: LogLevel) -> bool {
        self.fs.is_some() && level >= self.opts.level
    }

    pub(crate) fn stats_dump_period_sec(&self) -> u32 {
        self.opts.stats_dump_period_sec
    }

    fn failed(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Move the current LOG aside (if any) and start a new one.
    fn roll(&self, f: &mut Option<Box<dyn WritableFile>>) {
        let Some(fs) = &self.fs else { return };
        if let Some(mut old) = f.take() {
            if old.flush().is_err() {
                self.failed();
            }
        }
        let cur = self.dir.join(&self.name);
        if fs.exists(&cur) {
            let mut micros = now_micros();
            let mut old = self.dir.join(format!("{}.old.{micros}", self.name));
            while fs.exists(&old) {
                micros += 1;
                old = self.dir.join(format!("{}.old.{micros}", self.name));
            }
            if fs.rename(&cur, &old).is_err() {
                self.failed();
            }
        }
        self.remove_old_logs(fs);
        match fs.new_writable(&cur) {
            Ok(w) => *f = Some(w),
            Err(_) => self.failed(),
        }
    }

    /// Keep `keep_log_file_num` LOG files, the new one included: remove the oldest `LOG.old.*`.
    fn remove_old_logs(&self, fs: &Arc<dyn FileSystem>) {
        let Ok(names) = fs.list(&self.dir) else {
            self.failed();
            return;
        };
        let mut old: Vec<(u64, String)> = names
            .into_iter()
            .filter_map(|n| {
                let micros = n.strip_prefix(self.name.as_str())?.strip_prefix(".old.")?;
                Some((micros.parse::<u64>().ok()?, n))
            })
            .collect();
        old.sort();
        let keep_old = self.opts.keep_log_file_num.max(1) - 1;
        if old.len() > keep_old {
            for (_, n) in &old[..old.len() - keep_old] {
                if fs.remove_file(&self.dir.join(n)).is_err() {
                    self.failed();
                }
            }
        }
    }

    /// Write one message (possibly several lines) at `level`.
    pub(crate) fn log(&self, level: LogLevel, msg: &str) {
        if !self.enabled(level) {
            return;
        }
        let mut line = String::with_capacity(msg.len() + 48);
        let _ = write!(line, "{} {:x} ", timestamp(now_micros()), thread_id());
        line.push_str(msg);
        line.push('\n');
        let mut f = self.file.lock();
        if self.opts.max_log_file_size > 0 {
            if let Some(w) = f.as_ref() {
                if w.size() > 0 && w.size() + line.len() as u64 > self.opts.max_log_file_size as u64 {
                    self.roll(&mut f);
                }
            }
        }
        match f.as_mut() {
            Some(w) => {
                if w.append(line.as_bytes()).and_then(|_| w.flush()).is_err() {
                    self.failed();
                }
            }
            None => self.failed(),
        }
    }

    pub(crate) fn info(&self, msg: &str) {
        self.log(LogLevel::Info, msg);
    }
    pub(crate) fn warn(&self, msg: &str) {
        self.log(LogLevel::Warn, msg);
    }
    pub(crate) fn error(&self, msg: &str) {
        self.log(LogLevel::Error, msg);
    }

    /// An `EVENT_LOG_v1 {...}` line (RocksDB's `EventLogger`).
    pub(crate) fn event(&self, e: EventJson) {
        if self.enabled(LogLevel::Info) {
            self.info(&format!("EVENT_LOG_v1 {}", e.finish()));
        }
    }
}

/// A JSON object as RocksDB's `JSONWriter` writes it (`{"time_micros": 1, "job": 2, ...}`),
/// starting with `time_micros`.
pub(crate) struct EventJson {
    s: String,
}

fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl EventJson {
    pub(crate) fn new() -> EventJson {
        EventJson {
            s: format!("{{\"time_micros\": {}", now_micros()),
        }
    }
    fn key(&mut self, k: &str) {
        self.s.push_str(", ");
        json_str(&mut self.s, k);
        self.s.push_str(": ");
    }
    pub(crate) fn num(mut self, k: &str, v: impl Into<i128>) -> Self {
        self.key(k);
        let _ = write!(self.s, "{}", v.into());
        self
    }
    pub(crate) fn float(mut self, k: &str, v: f64) -> Self {
        self.key(k);
        if v.is_finite() {
            let _ = write!(self.s, "{v}");
        } else {
            self.s.push('0');
        }
        self
    }
    pub(crate) fn str(mut self, k: &str, v: &str) -> Self {
        self.key(k);
        json_str(&mut self.s, v);
        self
    }
    pub(crate) fn nums(mut self, k: &str, v: impl IntoIterator<Item = u64>) -> Self {
        self.key(k);
        self.s.push('[');
        for (i, x) in v.into_iter().enumerate() {
            if i > 0 {
                self.s.push_str(", ");
            }
            let _ = write!(self.s, "{x}");
        }
        self.s.push(']');
        self
    }
    /// A nested object.
    pub(crate) fn obj(mut self, k: &str, v: EventJson) -> Self {
        self.key(k);
        // Drop the nested object's own "time_micros" (it has none in RocksDB's nesting).
        let body =
            v.s.split_once(", ")
                .map(|(_, rest)| rest.to_string())
                .unwrap_or_default();
        self.s.push('{');
        self.s.push_str(&body);
        self.s.push('}');
        self
    }
    pub(crate) fn finish(mut self) -> String {
        self.s.push('}');
        self.s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn lines(fs: &Arc<dyn FileSystem>, p: &Path) -> Vec<String> {
        String::from_utf8(fs.read_all(p).unwrap())
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    #[test]
    fn json_shape() {
        let e = EventJson::new()
            .num("job", 3u64)
            .str("event", "x\"y")
            .nums("lsm_state", [1, 0])
            .obj("table_properties", EventJson::new().num("data_size", 5u64))
            .finish();
        assert!(e.starts_with("{\"time_micros\": "));
        assert!(e.ends_with(
            ", \"job\": 3, \"event\": \"x\\\"y\", \"lsm_state\": [1, 0], \"table_properties\": {\"data_size\": 5}}"
        ));
    }

    #[test]
    fn rotation_rollover_and_keep() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let opts = InfoLogOptions {
            max_log_file_size: 200,
            keep_log_file_num: 3,
            ..Default::default()
        };
        let log = InfoLog::open(fs.clone(), dir, &opts);
        log.info("first");
        assert!(lines(&fs, &log_name(dir))[0].ends_with(" first"));
        for i in 0..20 {
            log.info(&format!("line {i} of some length to fill the log"));
        }
        let names = fs.list(dir).unwrap();
        let old = names.iter().filter(|n| n.starts_with("LOG.old.")).count();
        assert_eq!(old, 2, "{names:?}");
        assert!(fs.file_size(&log_name(dir)).unwrap() <= 200);
        assert!(lines(&fs, &log_name(dir))
            .last()
            .unwrap()
            .ends_with("line 19 of some length to fill the log"));
        assert_eq!(log.write_errors(), 0);
        // Debug messages are below the default level.
        log.log(LogLevel::Debug, "hidden");
        assert!(!lines(&fs, &log_name(dir)).iter().any(|l| l.ends_with("hidden")));
    }
}
