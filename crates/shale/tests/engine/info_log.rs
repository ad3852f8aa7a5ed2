//! The info log (`LOG`) as RocksDB writes it: header and options at open, flush and compaction
//! lines, `EVENT_LOG_v1` JSON lines with RocksDB's event and field names, stalls, rotation to
//! `LOG.old.<micros>` at open, roll-over at `max_log_file_size`, `keep_log_file_num`, the
//! periodic stats dump, and a LOG that cannot be written never failing the DB.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use shale::fs::testing::FaultFs;
use shale::fs::testing::FaultKind;
use shale::fs::FileSystem;
use shale::fs::PosixFs;
use shale::{DBCompactionStyle, DBCompressionType, LogLevel, Options, UniversalCompactOptions, DB};

/// A JSON value (enough of JSON for the event lines).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

impl Json {
    fn get(&self, k: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.get(k),
            _ => None,
        }
    }
    fn num(&self, k: &str) -> f64 {
        match self.get(k) {
            Some(Json::Num(n)) => *n,
            other => panic!("{k}: not a number: {other:?} in {self:?}"),
        }
    }
    fn str(&self, k: &str) -> &str {
        match self.get(k) {
            Some(Json::Str(s)) => s,
            other => panic!("{k}: not a string: {other:?} in {self:?}"),
        }
    }
}

/// A strict parser: the whole input must be one JSON value.
fn parse_json(s: &str) -> Result<Json, String> {
    struct P<'a> {
        b: &'a [u8],
        i: usize,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.b.len() && b" \t\r\n".contains(&self.b[self.i]) {
                self.i += 1;
            }
        }
        fn eat(&mut self, c: u8) -> Result<(), String> {
            self.ws();
            if self.b.get(self.i) == Some(&c) {
                self.i += 1;
                Ok(())
            } else {
                Err(format!("expected {:?} at {}", c as char, self.i))
            }
        }
        fn string(&mut self) -> Result<String, String> {
            self.eat(b'"')?;
            let mut out = String::new();
            loop {
                let c = *self.b.get(self.i).ok_or("unterminated string")?;
                self.i += 1;
                match c {
                    b'"' => return Ok(out),
                    b'\\' => {
                        let e = *self.b.get(self.i).ok_or("bad escape")?;
                        self.i += 1;
                        match e {
                            b'"' => out.push('"'),
                            b'\\' => out.push('\\'),
                            b'/' => out.push('/'),
                            b'n' => out.push('\n'),
                            b't' => out.push('\t'),
                            b'r' => out.push('\r'),
                            b'u' => {
                                let h = std::str::from_utf8(&self.b[self.i..self.i + 4]).map_err(|e| e.to_string())?;
                                let v = u32::from_str_radix(h, 16).map_err(|e| e.to_string())?;
                                out.push(char::from_u32(v).ok_or("bad \\u")?);
                                self.i += 4;
                            }
                            _ => return Err(format!("bad escape {:?}", e as char)),
                        }
                    }
                    c if c < 0x20 => return Err("control character in string".into()),
                    _ => {
                        // Copy the UTF-8 sequence.
                        let start = self.i - 1;
                        let mut end = self.i;
                        while end < self.b.len() && (self.b[end] & 0xc0) == 0x80 {
                            end += 1;
                        }
                        out.push_str(std::str::from_utf8(&self.b[start..end]).map_err(|e| e.to_string())?);
                        self.i = end;
                    }
                }
            }
        }
        fn value(&mut self) -> Result<Json, String> {
            self.ws();
            match self.b.get(self.i) {
                Some(b'{') => {
                    self.i += 1;
                    let mut m = BTreeMap::new();
                    self.ws();
                    if self.b.get(self.i) == Some(&b'}') {
                        self.i += 1;
                        return Ok(Json::Obj(m));
                    }
                    loop {
                        let k = self.string()?;
                        self.eat(b':')?;
                        let v = self.value()?;
                        if m.insert(k.clone(), v).is_some() {
                            return Err(format!("duplicate key {k}"));
                        }
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                return Ok(Json::Obj(m));
                            }
                            _ => return Err(format!("expected , or }} at {}", self.i)),
                        }
                    }
                }
                Some(b'[') => {
                    self.i += 1;
                    let mut v = Vec::new();
                    self.ws();
                    if self.b.get(self.i) == Some(&b']') {
                        self.i += 1;
                        return Ok(Json::Arr(v));
                    }
                    loop {
                        v.push(self.value()?);
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                return Ok(Json::Arr(v));
                            }
                            _ => return Err(format!("expected , or ] at {}", self.i)),
                        }
                    }
                }
                Some(b'"') => Ok(Json::Str(self.string()?)),
                Some(b't') if self.b[self.i..].starts_with(b"true") => {
                    self.i += 4;
                    Ok(Json::Bool(true))
                }
                Some(b'f') if self.b[self.i..].starts_with(b"false") => {
                    self.i += 5;
                    Ok(Json::Bool(false))
                }
                Some(b'n') if self.b[self.i..].starts_with(b"null") => {
                    self.i += 4;
                    Ok(Json::Null)
                }
                Some(_) => {
                    let start = self.i;
                    while self.i < self.b.len() && b"+-0123456789.eE".contains(&self.b[self.i]) {
                        self.i += 1;
                    }
                    let t = std::str::from_utf8(&self.b[start..self.i]).unwrap();
                    t.parse::<f64>()
                        .map(Json::Num)
                        .map_err(|_| format!("bad number {t:?} at {start}"))
                }
                None => Err("unexpected end".into()),
            }
        }
    }
    let mut p = P { b: s.as_bytes(), i: 0 };
    let v = p.value()?;
    p.ws();
    if p.i != p.b.len() {
        return Err(format!("trailing bytes at {}", p.i));
    }
    Ok(v)
}

fn read_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("LOG")).unwrap()
}

fn events(log: &str) -> Vec<Json> {
    log.lines()
        .filter_map(|l| l.split_once(" EVENT_LOG_v1 ").map(|(_, j)| j))
        .map(|j| parse_json(j).unwrap_or_else(|e| panic!("{e}: {j}")))
        .collect()
}

fn old_logs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("LOG.old."))
        .collect();
    v.sort();
    v
}

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o
}

#[test]
fn flushes_and_compactions_write_rocksdb_event_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_level_zero_file_num_compaction_trigger(3);
    let db = DB::open(&o, dir.path()).unwrap();
    for round in 0..3u32 {
        for i in 0..200u32 {
            db.put(format!("k{i:04}"), format!("v{round}-{i}")).unwrap();
        }
        db.delete(format!("k{:04}", round)).unwrap();
        db.flush().unwrap();
    }
    db.wait_for_compact(&Default::default()).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("shale.log-write-errors").unwrap(), Some(0));
    drop(db);

    let log = read_log(dir.path());
    // Each line starts with RocksDB's timestamp: YYYY/MM/DD-HH:MM:SS.uuuuuu
    let first = log.lines().next().unwrap();
    assert_eq!(&first[4..5], "/", "{first}");
    assert_eq!(&first[10..11], "-", "{first}");
    assert_eq!(&first[19..20], ".", "{first}");
    assert!(
        log.contains("Options.write_buffer_size: 67108864"),
        "options at open:\n{log}"
    );
    assert!(log.contains("Options.level0_file_num_compaction_trigger: 3"), "{log}");
    assert!(log.contains("Options.keep_log_file_num: 1000"), "{log}");
    assert!(log.contains("Options.info_log_level: INFO_LEVEL"), "{log}");
    assert!(log.contains("recovered from the MANIFEST"), "{log}");
    assert!(log.contains("Level-0 flush table #"), "{log}");
    assert!(log.contains("Compacted 3@0 + 0@"), "{log}");

    let ev = events(&log);
    let named = |n: &str| ev.iter().filter(|e| e.str("event") == n).collect::<Vec<_>>();
    for e in &ev {
        assert!(e.num("time_micros") > 1.0e15, "{e:?}");
        e.num("job");
    }
    let flushes = named("flush_finished");
    assert_eq!(flushes.len(), 3, "{log}");
    assert_eq!(named("flush_started").len(), 3);
    for f in &flushes {
        assert_eq!(f.str("output_compression"), "NoCompression");
        assert!(
            matches!(f.get("lsm_state"), Some(Json::Arr(a)) if a.len() == 7),
            "{f:?}"
        );
        f.num("immutable_memtables");
    }
    let created = named("table_file_creation");
    assert!(
        created.len() >= 4,
        "3 flushes and at least one compaction output: {log}"
    );
    for c in &created {
        assert_eq!(c.str("cf_name"), "default");
        assert!(c.num("file_number") > 0.0 && c.num("file_size") > 0.0);
        c.num("smallest_seqno");
        c.num("largest_seqno");
        let p = c.get("table_properties").expect("table_properties");
        assert!(p.num("num_entries") > 0.0 && p.num("data_size") > 0.0, "{p:?}");
        assert_eq!(p.str("comparator"), "leveldb.BytewiseComparator");
        assert_eq!(p.str("column_family_name"), "default");
        p.num("raw_key_size");
        p.num("num_deletions");
    }
    // Each flush wrote 200 entries: 199 values and the delete that hid the 200th put (the
    // put it covers in the same memtable is dropped).
    for c in &created[..3] {
        let p = c.get("table_properties").unwrap();
        assert_eq!(p.num("num_entries"), 200.0);
        assert_eq!(p.num("num_deletions"), 1.0);
    }
    let started = named("compaction_started");
    let finished = named("compaction_finished");
    assert!(!finished.is_empty() && started.len() == finished.len(), "{log}");
    let first_c = &finished[0];
    assert_eq!(first_c.num("num_input_records"), 600.0, "{first_c:?}");
    // The newest version of each of the 199 live keys (k0002 was deleted last); older
    // versions and the bottom-level delete are dropped.
    assert_eq!(first_c.num("num_output_records"), 199.0, "{first_c:?}");
    assert!(first_c.num("num_output_files") >= 1.0 && first_c.num("total_output_size") > 0.0);
    first_c.num("compaction_time_micros");
    first_c.num("output_level");
    first_c.str("output_compression");
    assert!(matches!(first_c.get("lsm_state"), Some(Json::Arr(_))));
    assert!(
        matches!(started[0].get("files_L0"), Some(Json::Arr(a)) if a.len() == 3),
        "{:?}",
        started[0]
    );
    assert_eq!(started[0].str("compaction_reason"), "LevelL0FilesNum");
    // The three L0 inputs were deleted after the compaction.
    let deleted: Vec<f64> = named("table_file_deletion")
        .iter()
        .map(|e| e.num("file_number"))
        .collect();
    for c in &created[..3] {
        assert!(deleted.contains(&c.num("file_number")), "{deleted:?} {log}");
    }
}

#[test]
fn log_rotates_at_open_and_keeps_keep_log_file_num() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_keep_log_file_num(3);
    drop(DB::open(&o, dir.path()).unwrap());
    assert!(old_logs(dir.path()).is_empty());
    let first = read_log(dir.path());
    drop(DB::open(&o, dir.path()).unwrap());
    let old = old_logs(dir.path());
    assert_eq!(old.len(), 1);
    assert_eq!(std::fs::read_to_string(dir.path().join(&old[0])).unwrap(), first);
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(2));
        drop(DB::open(&o, dir.path()).unwrap());
    }
    // The current LOG and the two newest old ones.
    let old = old_logs(dir.path());
    assert_eq!(old.len(), 2, "{old:?}");
    let micros: Vec<u64> = old.iter().map(|n| n["LOG.old.".len()..].parse().unwrap()).collect();
    assert!(micros[0] < micros[1]);
}

#[test]
fn log_rolls_over_at_max_log_file_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_max_log_file_size(8 << 10);
    o.set_keep_log_file_num(100);
    let db = DB::open(&o, dir.path()).unwrap();
    for round in 0..12u32 {
        for i in 0..50u32 {
            db.put(format!("k{i:04}"), format!("v{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    drop(db);
    let old = old_logs(dir.path());
    assert!(!old.is_empty(), "the LOG rolled over");
    // Every file but the first (the options dump is one message) stays within the limit, and
    // the events of all the flushes are in the files together.
    let mut all = String::new();
    for n in old.iter().skip(1).chain(std::iter::once(&"LOG".to_string())) {
        let len = std::fs::metadata(dir.path().join(n)).unwrap().len();
        assert!(len <= 8 << 10, "{n}: {len} bytes");
    }
    for n in old.iter().chain(std::iter::once(&"LOG".to_string())) {
        all.push_str(&std::fs::read_to_string(dir.path().join(n)).unwrap());
    }
    let ev = events(&all);
    assert_eq!(ev.iter().filter(|e| e.str("event") == "flush_finished").count(), 12);
}

#[test]
fn log_level_filters_messages() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_log_level(LogLevel::Warn);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put(b"a", b"b").unwrap();
    db.flush().unwrap();
    drop(db);
    let log = read_log(dir.path());
    // The header (options) is always written; info lines and events are not.
    assert!(log.contains("Options.write_buffer_size"));
    assert!(!log.contains("EVENT_LOG_v1") && !log.contains("flush table"), "{log}");
}

#[test]
fn stats_are_dumped_every_stats_dump_period_sec() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_stats_dump_period_sec(1);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put(b"a", b"b").unwrap();
    std::thread::sleep(Duration::from_millis(1400));
    let log = read_log(dir.path());
    assert!(log.contains("------- DUMPING STATS -------"), "{log}");
    assert!(log.contains("** Compaction Stats [default] **"), "{log}");
    let t = std::time::Instant::now();
    drop(db);
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "close waits for the stats thread"
    );
}

#[test]
fn write_stalls_are_logged() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_level_zero_slowdown_writes_trigger(2);
    o.set_level_zero_stop_writes_trigger(1000);
    o.set_level_zero_file_num_compaction_trigger(1000);
    let db = DB::open(&o, dir.path()).unwrap();
    for i in 0..2 {
        db.put(format!("k{i}"), b"v").unwrap();
        db.flush().unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    drop(db);
    let log = read_log(dir.path());
    assert!(
        log.contains("Stalling writes because we have 2 level-0 files rate "),
        "{log}"
    );
    assert!(log.contains("Write stall condition is normal again"), "{log}");
}

#[test]
fn a_log_that_cannot_be_written_never_fails_the_db() {
    let dir = tempfile::tempdir().unwrap();
    let fault = Arc::new(FaultFs::new(Arc::new(PosixFs)));
    fault.inject(FaultKind::WriteEio, Some("LOG"));
    let mut o = opts();
    o.set_env(fault.clone() as Arc<dyn FileSystem>);
    o.set_level_zero_file_num_compaction_trigger(2);
    let db = DB::open(&o, dir.path()).unwrap();
    for round in 0..3u32 {
        for i in 0..100u32 {
            db.put(format!("k{i:03}"), format!("v{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_compact(&Default::default()).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get(b"k007").unwrap().as_deref(), Some(&b"v2"[..]));
    let errors = db.property_int_value("shale.log-write-errors").unwrap().unwrap();
    assert!(errors > 0, "the failed LOG writes are counted");
    assert!(fault.injected() > 0);
    drop(db);
    fault.clear();
    let db = DB::open(&o, dir.path()).unwrap();
    assert_eq!(db.get(b"k099").unwrap().as_deref(), Some(&b"v2"[..]));
    assert_eq!(db.property_int_value("shale.log-write-errors").unwrap(), Some(0));
}

#[test]
fn json_parser_rejects_what_is_not_json() {
    assert!(parse_json("{\"a\": 1, \"b\": [1, 2], \"c\": {\"d\": \"x\\\"y\"}}").is_ok());
    for bad in [
        "{\"a\": 1,}",
        "{\"a\" 1}",
        "{\"a\": 1} x",
        "[1 2]",
        "{\"a\": \"\n\"}",
        "{\"a\": 1, \"a\": 2}",
    ] {
        assert!(parse_json(bad).is_err(), "{bad}");
    }
}

/// `set_db_options` starts the stats dumps of a DB opened without them.
#[test]
fn stats_dump_period_set_live_starts_the_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_stats_dump_period_sec(0);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put(b"a", b"b").unwrap();
    db.set_db_options(&[("stats_dump_period_sec", "1")]).unwrap();
    // Wait (up to a generous bound) for the first dump.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !read_log(dir.path()).contains("------- DUMPING STATS -------") {
        assert!(
            std::time::Instant::now() < deadline,
            "no stats dump after set_db_options"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Universal options for the ladder test: 7 levels, no compression (file sizes follow the
/// values), no size-amplification merge unless `amp` says so.
fn universal_opts(trigger: i32, amp: i32) -> Options {
    let mut o = opts();
    o.set_compaction_style(DBCompactionStyle::Universal);
    o.set_num_levels(7);
    o.set_compression_type(DBCompressionType::None);
    o.set_level_zero_file_num_compaction_trigger(trigger);
    let mut u = UniversalCompactOptions::default();
    u.set_max_size_amplification_percent(amp);
    o.set_universal_compaction_options(&u);
    o
}

/// Each of `files` flushes: `keys` new keys of 1 KB values, then whatever compaction follows.
fn flush_files(db: &DB, next: &mut u32, files: usize, keys: u32) {
    for _ in 0..files {
        for _ in 0..keys {
            db.put(format!("k{:05}", *next), vec![b'v'; 1024]).unwrap();
            *next += 1;
        }
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
    }
}

/// The live table numbers of each of the 7 levels.
fn files_by_level(db: &DB) -> Vec<Vec<u64>> {
    let mut out = vec![Vec::new(); 7];
    for f in db.live_files().unwrap() {
        let n = f.name.trim_start_matches('/').trim_end_matches(".sst").parse().unwrap();
        out[f.level as usize].push(n);
    }
    for l in &mut out {
        l.sort_unstable();
    }
    out
}

#[test]
fn compaction_started_lists_every_level_from_the_start_to_the_output_level() {
    // A universal ladder: runs at L6, L5, L4 and L3 (each pair of equal L0 files merges into
    // the level above the next older run, each pair smaller than the run below), then one L0
    // file and a size-amplification merge of all five runs into L6. RocksDB's
    // compaction_started event lists files_L0 .. files_L6: L1 and L2 empty, the middle runs
    // with their files.
    let dir = tempfile::tempdir().unwrap();
    let mut next = 0;
    let db = DB::open(&universal_opts(2, 1_000_000), dir.path()).unwrap();
    flush_files(&db, &mut next, 1, 40);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    flush_files(&db, &mut next, 2, 10);
    drop(db);
    // Each step opens with a trigger one above the runs already there, so the first flush of
    // a pair starts nothing (no size ratio against the larger run, no surplus of runs).
    let db = DB::open(&universal_opts(3, 1_000_000), dir.path()).unwrap();
    flush_files(&db, &mut next, 2, 3);
    drop(db);
    let db = DB::open(&universal_opts(4, 1_000_000), dir.path()).unwrap();
    flush_files(&db, &mut next, 2, 1);
    let before = files_by_level(&db);
    for (l, files) in before.iter().enumerate() {
        assert_eq!(files.is_empty(), l < 3, "level {l} of {before:?}");
    }
    drop(db);
    let db = DB::open(&universal_opts(5, 1), dir.path()).unwrap();
    flush_files(&db, &mut next, 1, 1);
    let after = files_by_level(&db);
    assert!(after[..6].iter().all(|l| l.is_empty()), "{after:?}");
    drop(db);

    let log = read_log(dir.path());
    let ev = events(&log);
    let flushed = ev
        .iter()
        .find(|e| e.str("event") == "flush_finished")
        .map(|e| e.num("job"))
        .expect("the last flush");
    let started: Vec<&Json> = ev
        .iter()
        .filter(|e| e.str("event") == "compaction_started" && e.num("job") > flushed)
        .collect();
    assert_eq!(started.len(), 1, "{log}");
    let e = started[0];
    assert_eq!(e.str("compaction_reason"), "UniversalSizeAmplification");
    let created: Vec<f64> = ev
        .iter()
        .filter(|e| e.str("event") == "table_file_creation")
        .map(|e| e.num("file_number"))
        .collect();
    let mut want = before;
    want[0] = vec![created[0] as u64];
    for (l, files) in want.iter().enumerate() {
        let got: Vec<u64> = match e.get(&format!("files_L{l}")) {
            Some(Json::Arr(a)) => a
                .iter()
                .map(|x| match x {
                    Json::Num(n) => *n as u64,
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("files_L{l}: {other:?} in {e:?}"),
        };
        let mut got = got;
        got.sort_unstable();
        assert_eq!(&got, files, "files_L{l} in {e:?}");
    }
    assert!(e.get("files_L7").is_none(), "{e:?}");
}
