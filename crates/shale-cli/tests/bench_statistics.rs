//! `shale bench --statistics` and `--perf_level`, as db_bench prints them: `STATISTICS:` and
//! RocksDB's `Statistics::ToString` text at the end, and each benchmark's `PERF_CONTEXT:`.

use std::collections::BTreeMap;
use std::process::{Command, Output};

fn shale(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run shale")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The `STATISTICS:` section: tickers (name -> count) and histograms (name -> the six numbers),
/// checked line by line against RocksDB's format and order.
fn parse_statistics(out: &str) -> (BTreeMap<String, u64>, BTreeMap<String, Vec<f64>>) {
    let mut lines = out.lines().skip_while(|l| *l != "STATISTICS:");
    assert_eq!(lines.next(), Some("STATISTICS:"), "{out}");
    let mut tickers = BTreeMap::new();
    for want in shale::statistics::Ticker::iter() {
        let l = lines.next().unwrap_or_default();
        let (name, n) = l
            .split_once(" COUNT : ")
            .unwrap_or_else(|| panic!("bad ticker line {l:?}"));
        assert_eq!(name, want.name());
        tickers.insert(name.to_string(), n.parse().unwrap());
    }
    let mut hists = BTreeMap::new();
    for want in shale::statistics::Histogram::iter() {
        let l = lines.next().unwrap_or_default();
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 19, "bad histogram line {l:?}");
        assert_eq!(f[0], want.name());
        let labels: Vec<&str> = f[1..].chunks(3).map(|c| c[0]).collect();
        assert_eq!(labels, ["P50", "P95", "P99", "P100", "COUNT", "SUM"], "{l}");
        let nums: Vec<f64> = f[1..].chunks(3).map(|c| c[2].parse().unwrap()).collect();
        hists.insert(f[0].to_string(), nums);
    }
    assert_eq!(lines.next(), Some(""), "db_bench ends the section with an empty line");
    (tickers, hists)
}

#[test]
fn bench_statistics_prints_rocksdbs_tickers_and_histograms() {
    let o = shale(&[
        "bench",
        "--benchmarks=fillseq,readrandom,readseq",
        "--num=2000",
        "--seed=42",
        "--statistics=1",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let (t, h) = parse_statistics(&out);
    assert_eq!(t["rocksdb.number.keys.written"], 2000);
    assert_eq!(t["rocksdb.number.keys.read"], 2000);
    assert_eq!(t["rocksdb.bytes.read"], 2000 * 100);
    assert!(t["rocksdb.bytes.written"] >= 2000 * 116);
    assert_eq!(t["rocksdb.memtable.hit"], 2000);
    assert_eq!(t["rocksdb.number.db.seek"], 1);
    assert_eq!(t["rocksdb.number.db.next.found"], 1999);
    assert_eq!(t["rocksdb.db.iter.bytes.read"], 2000 * 116);
    assert_eq!(h["rocksdb.db.get.micros"][4], 2000.0);
    assert_eq!(h["rocksdb.db.write.micros"][4], 2000.0);
    let bpr = &h["rocksdb.bytes.per.read"];
    assert_eq!(bpr, &[100.0, 100.0, 100.0, 100.0, 2000.0, 200000.0]);

    // without --statistics: no section
    let o = shale(&["bench", "--benchmarks=fillseq", "--num=100", "--seed=42"]);
    assert!(o.status.success());
    assert!(!stdout(&o).contains("STATISTICS:"));
}

#[test]
fn bench_perf_level_prints_each_benchmarks_perf_context() {
    let o = shale(&[
        "bench",
        "--benchmarks=fillseq,readrandom",
        "--num=1000",
        "--seed=42",
        "--perf_level=2",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("Perf Level: 2\n"), "{out}");
    let contexts: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("fillseq "))
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0].ends_with("PERF_CONTEXT:"))
        .map(|w| w[1])
        .collect();
    assert_eq!(contexts.len(), 2, "{out}");
    for c in &contexts {
        assert!(c.starts_with("user_key_comparison_count = "), "{c}");
        for pair in c.split(", ") {
            let (name, v) = pair.split_once(" = ").unwrap();
            assert!(
                !name.is_empty() && name.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'),
                "{name}"
            );
            v.parse::<u64>().unwrap();
        }
    }
    // readrandom: every get looked in one memtable and returned 100 bytes
    assert!(contexts[1].contains("get_read_bytes = 100000,"), "{}", contexts[1]);
    assert!(
        contexts[1].contains("get_from_memtable_count = 1000,"),
        "{}",
        contexts[1]
    );
    // counts only at level 2: no times
    assert!(contexts[0].contains("write_wal_time = 0,"), "{}", contexts[0]);

    let o = shale(&["bench", "--benchmarks=fillseq", "--num=100", "--seed=42"]);
    assert!(!stdout(&o).contains("PERF_CONTEXT"));
}
