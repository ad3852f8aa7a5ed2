//! End-to-end tests of the `shale` binary.

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

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One parsed result line.
struct ResultLine {
    name: String,
    n: u64,
    extra: String,
}

/// Strict parser for db_bench's result line, i.e. the C format
/// `"%-12s : %11.3f micros/op %ld ops/sec %.3f seconds %" PRIu64 " operations;%s%s\n"`
/// (the pattern `^[a-z0-9]+ *: +\d+\.\d{3} micros/op \d+ ops/sec \d+\.\d{3} seconds \d+ operations;.*$`
/// with the name padded to 12 and the micros/op field to 11 characters). No regex crate is
/// available offline, so the pattern is checked by hand.
fn parse_result_line(line: &str) -> Option<ResultLine> {
    let three_decimals = |s: &str| {
        s.split_once('.').is_some_and(|(a, b)| {
            !a.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.len() == 3
                && b.bytes().all(|c| c.is_ascii_digit())
        })
    };
    let (head, rest) = line.split_once(" : ")?;
    let name = head.trim_end();
    if head.len() < 12 || name.is_empty() || !name.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return None;
    }
    let (us, rest) = rest.split_once(" micros/op ")?;
    if us.len() < 11 || !three_decimals(us.trim_start()) {
        return None;
    }
    let (ops, rest) = rest.split_once(" ops/sec ")?;
    ops.parse::<u64>().ok()?;
    let (secs, rest) = rest.split_once(" seconds ")?;
    if !three_decimals(secs) {
        return None;
    }
    let (n, extra) = rest.split_once(" operations;")?;
    Some(ResultLine {
        name: name.to_string(),
        n: n.parse().ok()?,
        extra: extra.to_string(),
    })
}

#[test]
fn result_line_parser() {
    let r = parse_result_line(
        "fillrandom   :       8.262 micros/op 121038 ops/sec 8.262 seconds 1000000 operations;   13.4 MB/s",
    )
    .unwrap();
    assert_eq!(
        (r.name.as_str(), r.n, r.extra.as_str()),
        ("fillrandom", 1000000, "   13.4 MB/s")
    );
    assert!(parse_result_line("fillrandom : 8.262 micros/op 1 ops/sec 8.262 seconds 1 operations;").is_none());
    assert!(parse_result_line("fillrandom   :       8.26 micros/op 1 ops/sec 8.262 seconds 1 operations;").is_none());
}

#[test]
fn bench_fillseq_readrandom_output_format() {
    let o = shale(&["bench", "--benchmarks=fillseq,readrandom", "--num=2000", "--seed=42"]);
    let out = stdout(&o);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{}", stderr(&o));
    for l in [
        "Keys:       16 bytes each (+ 0 bytes user-defined timestamp)",
        "Values:     100 bytes each (50 bytes after compression)",
        "Entries:    2000",
        "RawSize:    0.2 MB (estimated)",
        "FileSize:   0.1 MB (estimated)",
        "Compression: Snappy",
        "------------------------------------------------",
    ] {
        assert!(out.lines().any(|x| x == l), "missing header line {l:?} in\n{out}");
    }
    let results: Vec<_> = out.lines().filter_map(parse_result_line).collect();
    assert_eq!(results.len(), 2, "{out}");
    assert_eq!(results[0].name, "fillseq");
    assert_eq!(results[0].n, 2000);
    assert!(results[0].extra.ends_with(" MB/s"), "{out}");
    assert_eq!(results[1].name, "readrandom");
    assert_eq!(results[1].n, 2000);
    // Every key in [0, num) was written, so every random read finds its key.
    assert!(results[1].extra.ends_with(" MB/s (2000 of 2000 found)"), "{out}");
    assert!(out.contains("DB path: ["));
    // The temporary DB is removed at exit.
    let path = out
        .lines()
        .find_map(|l| l.strip_prefix("DB path: ["))
        .unwrap()
        .trim_end_matches(']')
        .to_string();
    assert!(!std::path::Path::new(&path).exists(), "{path} left behind");
}

#[test]
fn bench_threads_histogram_and_more_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let o = shale(&[
        "bench",
        &db,
        "--benchmarks=fillrandom,overwrite,readseq,readreverse,seekrandom,readwhilewriting,deleteseq,deleterandom,flush,compact,stats",
        "--num=1000",
        "--threads=2",
        "--seek_nexts=2",
        "--histogram",
        "--batch_size=2",
        "--seed=7",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{}", stderr(&o));
    let names: Vec<String> = out.lines().filter_map(parse_result_line).map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "fillrandom",
            "overwrite",
            "readseq",
            "readreverse",
            "seekrandom",
            "readwhilewriting",
            "deleteseq",
            "deleterandom",
            "compact"
        ],
        "{out}"
    );
    let ops = |name: &str| -> u64 {
        out.lines()
            .filter_map(parse_result_line)
            .find(|c| c.name == name)
            .unwrap()
            .n
    };
    // Two threads each do --num ops (batches of 2).
    assert_eq!(ops("fillrandom"), 2000);
    assert_eq!(ops("seekrandom"), 2000);
    // Only the readers count in readwhilewriting (the writer is excluded from the merge).
    assert_eq!(ops("readwhilewriting"), 2000);
    assert!(out.contains("Microseconds per write:\nCount: "), "{out}");
    assert!(out.contains("Microseconds per seek:\nCount: "), "{out}");
    assert!(out.contains("Percentiles: P50: "), "{out}");
    // --db given: kept.
    assert!(dir.path().join("db").exists());
    // use_existing_db skips fill benchmarks.
    let o = shale(&[
        "bench",
        &db,
        "--use_existing_db",
        "--benchmarks=fillseq,readrandom",
        "--num=1000",
        "--seed=1",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("fillseq      : skipped (--use_existing_db is true)"),
        "{out}"
    );
}

#[test]
fn bench_rejects_unknown_flags_and_benchmarks() {
    let o = shale(&["bench", "--num=10", "--no_such_flag=1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("unknown command line flag 'no_such_flag'"),
        "{}",
        stderr(&o)
    );
    let o = shale(&["bench", "--num=ten"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("'num'"));
    let o = shale(&["bench", "--benchmarks=fillseq,frobnicate", "--num=10"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown benchmark 'frobnicate'"));
    let o = shale(&["bench", "--compression_type=brotli", "--num=10"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("compression_type"));
}

#[test]
fn ldb_put_then_get() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let o = shale(&["ldb", &db, "--create_if_missing", "put", "a", "b"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "OK\n");
    let o = shale(&["ldb", &db, "get", "a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "b\n");
    let o = shale(&["ldb", &db, "get", "0x61", "--hex"]);
    assert_eq!(stdout(&o), "0x62\n");
    let o = shale(&["ldb", &db, "scan"]);
    assert_eq!(stdout(&o), "a : b\n");
    let o = shale(&["ldb", &db, "get"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "Failed: <key> must be specified for the get command\n");
    let o = shale(&["ldb", "--db=/nonexistent/shale/db", "get", "a"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("Failed: "));
}

#[test]
fn sst_dump_and_tool_stubs() {
    let o = shale(&["sst_dump", "--file=/nonexistent.sst", "--command=scan"]);
    assert_eq!(o.status.code(), Some(1));
    let o = shale(&["sst_dump", "--bogus"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("Unrecognized argument '--bogus'"));
    let o = shale(&["ldb", "dump_wal", "--walfile=/nonexistent.log"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("Failed: "));
}

#[test]
fn bench_checksum_workloads() {
    let o = shale(&["bench", "--benchmarks=crc32c,xxhash,xxhash64,xxh3", "--block_size=256"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<ResultLine> = stdout(&o).lines().filter_map(parse_result_line).collect();
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["crc32c", "xxhash", "xxhash64", "xxh3"]);
    for l in &lines {
        // 5000 MiB in 256-byte ops, as db_bench
        assert_eq!(l.n, 5000 * 1048576 / 256, "{}", l.name);
        assert!(l.extra.ends_with("MB/s (256 per op)"), "{}", l.extra);
    }
}

#[test]
fn tools_on_a_real_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let dbf = format!("--db={}", db.display());
    let o = shale(&[
        "bench",
        "--benchmarks=fillseq,flush",
        "--num=2000",
        "--compression_type=none",
        &dbf,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = shale(&["ldb", &dbf, "put", "walkey", "walvalue"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // sst_dump verifies and scans every table of the directory
    let file = format!("--file={}", db.display());
    let o = shale(&["sst_dump", &file, "--command=verify", "--show_properties"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("The file is ok"), "{out}");
    assert!(out.contains("# entries: 2000"), "{out}");
    let o = shale(&["sst_dump", &file, "--command=scan", "--read_num=3", "--output_hex"]);
    let out = stdout(&o);
    assert_eq!(out.lines().filter(|l| l.contains(" seq:")).count(), 3, "{out}");
    assert!(out.contains("'00000000000000003030303030303030' seq:"), "{out}");
    // manifest_dump names the table; dump_wal shows the put still in the WAL
    let o = shale(&["ldb", &dbf, "manifest_dump"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("--- level 0 ---"), "{}", stdout(&o));
    let wal = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let o = shale(&["ldb", "dump_wal", &format!("--walfile={}", wal.display()), "--header"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("PUT(0) : 0x77616C6B6579"), "{}", stdout(&o));
    let o = shale(&["ldb", &dbf, "checkconsistency"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "OK\n");
}

fn ops_of(out: &str, name: &str) -> ResultLine {
    out.lines()
        .filter_map(parse_result_line)
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} result line in\n{out}"))
}

#[test]
fn bench_range_tombstones_are_counted_and_applied() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--benchmarks=fillrandom,readseq,readrandom",
            "--num=2000",
            "--seed=11",
        ];
        args.extend_from_slice(extra);
        let o = shale(&args);
        let out = stdout(&o);
        assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{}", stderr(&o));
        out
    };
    // At most --max_num_range_tombstones of them, one after every 10 writes.
    let out = run(&["--writes_per_range_tombstone=10", "--max_num_range_tombstones=5"]);
    let counts: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Number of range deletions"))
        .collect();
    assert_eq!(counts, ["Number of range deletions: 5"], "{out}");
    // db_bench prints it before the result line of the write benchmark.
    let at = out.find("Number of range deletions").unwrap();
    assert!(at < out.find("fillrandom   :").unwrap(), "{out}");
    assert_eq!(ops_of(&out, "fillrandom").n, 2000);

    // max_num_range_tombstones=0 (the default) means none, as in db_bench.
    let out = run(&["--writes_per_range_tombstone=10"]);
    assert!(!out.contains("Number of range deletions"), "{out}");

    // Wide tombstones late in the load delete keys: range tombstones and their expansion into
    // point deletes consume the same random numbers and leave the same keys.
    let wide = [
        "--writes_per_range_tombstone=100",
        "--max_num_range_tombstones=20",
        "--range_tombstone_width=40",
    ];
    let ranged = run(&wide);
    let mut w = wide.to_vec();
    w.push("--expand_range_tombstones");
    let expanded = run(&w);
    assert!(ranged.contains("Number of range deletions: 20\n"), "{ranged}");
    assert!(expanded.contains("Number of range deletions: 20\n"), "{expanded}");
    let plain = run(&[]);
    let (r, e, p) = (
        ops_of(&ranged, "readseq").n,
        ops_of(&expanded, "readseq").n,
        ops_of(&plain, "readseq").n,
    );
    assert_eq!(r, e, "range vs expanded:\n{ranged}\n{expanded}");
    assert!(r < p, "tombstones deleted nothing: {r} vs {p}");
    let found = |out: &str| {
        let x = ops_of(out, "readrandom").extra;
        x[x.find('(').unwrap_or_else(|| panic!("{out}"))..].to_string()
    };
    assert_eq!(found(&ranged), found(&expanded));
}

#[test]
fn bench_mergerandom_then_readrandom() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let o = shale(&[
        "bench",
        &db,
        "--benchmarks=mergerandom,readrandom,readrandommergerandom",
        "--merge_operator=uint64add",
        "--value_size=8",
        "--num=1000",
        "--seed=5",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{}", stderr(&o));
    let m = ops_of(&out, "mergerandom");
    assert_eq!(m.n, 1000);
    assert!(m.extra.ends_with(" MB/s ( updates:1000)"), "{out}");
    let r = ops_of(&out, "readrandom");
    assert_eq!(r.n, 1000);
    // ~1 - 1/e of the keys got merge operands; each is found.
    let found: u64 = r
        .extra
        .split_once('(')
        .and_then(|(_, x)| x.split_once(" of 1000 found)"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!((500..=800).contains(&found), "{out}");
    let rm = ops_of(&out, "readrandommergerandom");
    assert_eq!(rm.n, 1000);
    // "(reads:R merges:M total:1000 hits:H maxlength:8)", R + M == 1000, no MB/s.
    let x = rm.extra.trim();
    let field = |k: &str| -> u64 {
        x.split([' ', '(', ')'])
            .find_map(|f| f.strip_prefix(k))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{k} in {x}"))
    };
    assert!(x.starts_with("(reads:") && x.ends_with(')'), "{x}");
    assert_eq!(field("reads:") + field("merges:"), 1000, "{x}");
    assert_eq!(field("total:"), 1000, "{x}");
    assert!(field("hits:") > 0 && field("hits:") <= field("reads:"), "{x}");
    assert_eq!(field("maxlength:"), 8, "{x}");
    // About 70% merges by default (--mergereadpercent=70).
    assert!((600..=800).contains(&field("merges:")), "{x}");

    // Reopened with the operator, the merged keys are still there.
    let o = shale(&[
        "bench",
        &db,
        "--use_existing_db",
        "--benchmarks=readrandom",
        "--merge_operator=uint64add",
        "--num=1000",
        "--seed=5",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(!ops_of(&out, "readrandom").extra.contains("(0 of"), "{out}");
}

#[test]
fn bench_merge_benchmarks_need_a_merge_operator() {
    for name in ["mergerandom", "readrandommergerandom"] {
        let o = shale(&[
            "bench",
            &format!("--benchmarks=fillseq,{name},readrandom"),
            "--num=100",
            "--seed=3",
        ]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{out}");
        // As db_bench: earlier benchmarks run, then the skip line on stdout and exit 1.
        assert_eq!(ops_of(&out, "fillseq").n, 100);
        assert!(
            out.contains(&format!("{name:<12} : skipped (--merge_operator is unknown)\n")),
            "{out}"
        );
        assert!(!out.contains("readrandom   :"), "{out}");
    }
    let o = shale(&[
        "bench",
        "--benchmarks=mergerandom",
        "--merge_operator=bogus",
        "--num=10",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("invalid merge operator[bogus]: "), "{}", stderr(&o));
}

#[test]
fn bench_vector_memtable_and_uint64_comparator() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let o = shale(&[
        "bench",
        &db,
        "--benchmarks=fillseq,readrandom,flush,readseq",
        "--memtablerep=vector",
        "--use_uint64_comparator",
        "--key_size=8",
        "--num=3000",
        "--seed=3",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{}", stderr(&o));
    assert!(out.contains("Memtablerep: VectorRepFactory"), "{out}");
    assert!(out.contains("Keys:       8 bytes each"), "{out}");
    // fillseq's big-endian keys are out of order for the little-endian comparator; readrandom
    // (over the vector memtable, before the flush) finds every one, readseq (after it) sees all.
    assert!(
        ops_of(&out, "readrandom").extra.contains("(3000 of 3000 found)"),
        "{out}"
    );
    assert_eq!(ops_of(&out, "readseq").n, 3000, "{out}");
    // The DB records the comparator: reopening it with the default one fails.
    let o = shale(&["bench", &db, "--use_existing_db", "--benchmarks=readseq", "--num=10"]);
    assert!(!o.status.success());
    assert!(
        format!("{}{}", stdout(&o), stderr(&o)).contains("rocksdb.Uint64Comparator"),
        "{}",
        stderr(&o)
    );
    // db_bench's refusals
    let o = shale(&["bench", "--memtablerep=hash_skiplist", "--num=10"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--memtablerep"), "{}", stderr(&o));
    let o = shale(&["bench", "--use_uint64_comparator", "--num=10"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("Using Uint64 comparator but key size is not 8."));
}

/// A DB of 16-byte keys and 24-byte values written by the library with `o`: three flushed
/// tables, then a WAL tail. Returns the content.
fn write_formats_db(path: &std::path::Path, o: &shale::Options) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let mut o = o.clone();
    o.create_if_missing(true);
    o.set_disable_auto_compactions(true);
    let db = shale::DB::open(&o, path).unwrap();
    let mut m = std::collections::BTreeMap::new();
    for round in 0..3u32 {
        for i in (round * 100)..(round * 100 + 300) {
            let (k, v) = (format!("{:08}{:08}", i % 29, i), format!("value-{round}-{i:016}"));
            db.put(&k, &v).unwrap();
            m.insert(k.into_bytes(), v.into_bytes());
        }
        db.flush().unwrap();
    }
    let (k, v) = ("00000099wal-tail".to_string(), "w".repeat(24));
    db.put(&k, &v).unwrap();
    m.insert(k.into_bytes(), v.into_bytes());
    m
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// `shale ldb` opens DBs of plain tables (prefix-encoded, hashed by an 8-byte prefix) and of
/// cuckoo tables by loading their OPTIONS file (without it the prefix table cannot be read),
/// and `shale sst_dump` checks, scans and shows the properties of their files, picking the
/// format by magic number and rebuilding the prefix extractor from the table's property.
#[test]
fn tools_on_plain_and_cuckoo_databases() {
    let mut plain = shale::Options::default();
    plain.set_prefix_extractor(shale::slice_transform::new_fixed_prefix_transform(8));
    plain.set_plain_table_factory(&shale::PlainTableFactoryOptions {
        user_key_len: 16,
        encoding_type: shale::KeyEncodingType::Prefix,
        ..Default::default()
    });
    let mut cuckoo = shale::Options::default();
    cuckoo.set_cuckoo_table_factory(&shale::CuckooTableOptions::default());
    for (name, o, format, own_prop) in [
        (
            "plain",
            plain,
            "plain table",
            "rocksdb.prefix.extractor.name: rocksdb.FixedPrefix.8",
        ),
        ("cuckoo", cuckoo, "cuckoo table", "rocksdb.cuckoo.value.length: 24"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join(name);
        let m = write_formats_db(&db, &o);
        let dbf = format!("--db={}", db.display());

        // sst_dump over every table of the directory (before ldb opens the DB read-write
        // and its recovery flush starts a compaction)
        let file = format!("--file={}", db.display());
        let out = shale(&["sst_dump", &file, "--command=check", "--show_properties"]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let text = stdout(&out);
        let tables = text.matches("Process ").count();
        assert!(tables >= 3, "{name}: {text}");
        assert_eq!(
            text.matches(&format!("Sst file format: {format}")).count(),
            tables,
            "{text}"
        );
        assert_eq!(text.matches("The file is ok").count(), tables, "{text}");
        assert_eq!(text.matches(own_prop).count(), tables, "{name}: {text}");
        let entries: u64 = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("# entries: "))
            .map(|n| n.parse::<u64>().unwrap())
            .sum();
        let out = shale(&["sst_dump", &file, "--command=scan", "--output_hex"]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let text = stdout(&out);
        let scanned: Vec<&str> = text.lines().filter(|l| l.contains(" seq:")).collect();
        assert_eq!(scanned.len() as u64, entries, "{name}: every entry scanned");
        // the newest version of every flushed key is in some table
        for (k, v) in m.iter().filter(|(k, _)| !k.starts_with(b"00000099wal")) {
            let prefix = format!("'{}' seq:", hex(k));
            let suffix = format!(" => {}", hex(v));
            assert!(
                scanned.iter().any(|l| l.starts_with(&prefix) && l.ends_with(&suffix)),
                "{name}: {prefix} {suffix}"
            );
        }
        // --from/--to bound the scan (plain tables in prefix mode are read from the start)
        let (from, to) = ("0000000500000000", "0000000900000000");
        let out = shale(&[
            "sst_dump",
            &file,
            "--command=scan",
            &format!("--from={from}"),
            &format!("--to={to}"),
        ]);
        let bounded: Vec<String> = stdout(&out)
            .lines()
            .filter(|l| l.contains(" seq:"))
            .map(|l| l[1..17].to_string())
            .collect();
        let inside = scanned
            .iter()
            .map(|l| {
                String::from_utf8(
                    (0..16)
                        .map(|i| u8::from_str_radix(&l[1 + 2 * i..3 + 2 * i], 16).unwrap())
                        .collect(),
                )
                .unwrap()
            })
            .filter(|k| k.as_str() >= from && k.as_str() < to)
            .count();
        assert!(inside > 0);
        assert_eq!(bounded.len(), inside, "{name}: bounded scan");
        assert!(bounded.iter().all(|k| k.as_str() >= from && k.as_str() < to));
        // raw dumps are for block-based tables only: a clear refusal
        let out = shale(&["sst_dump", &file, "--command=raw"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains("block-based"), "{}", stderr(&out));

        // ldb scan and get see exactly the content
        let out = shale(&["ldb", &dbf, "scan", "--hex"]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let want: String = m
            .iter()
            .map(|(k, v)| format!("0x{} : 0x{}\n", hex(k), hex(v)))
            .collect();
        assert_eq!(stdout(&out), want, "{name}: ldb scan");
        let (k, v) = m.iter().nth(17).unwrap();
        let out = shale(&["ldb", &dbf, "get", "--hex", &format!("0x{}", hex(k))]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out), format!("0x{}\n", hex(v)), "{name}: ldb get");
        // ldb put writes through the DB's own factory; the value is read back
        let newv = "n".repeat(24);
        let out = shale(&["ldb", &dbf, "put", "00000003newkey00", &newv]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let out = shale(&["ldb", &dbf, "get", "00000003newkey00"]);
        assert_eq!(stdout(&out), format!("{newv}\n"), "{name}: ldb put then get");

        // without the OPTIONS file, ldb cannot know the plain tables' prefix extractor
        for e in std::fs::read_dir(&db).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let out = shale(&["ldb", &dbf, "get", "--hex", &format!("0x{}", hex(k))]);
        if name == "plain" {
            assert_eq!(out.status.code(), Some(1), "{name}: {}", stdout(&out));
            assert!(stderr(&out).contains("prefix_extractor"), "{}", stderr(&out));
        } else {
            assert_eq!(
                stdout(&out),
                format!("0x{}\n", hex(v)),
                "{name}: cuckoo needs no options"
            );
        }
    }
}

/// The magic numbers (last 8 bytes) of a database's table files.
fn sst_magics(dir: &std::path::Path) -> Vec<u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            u64::from_le_bytes(b[b.len() - 8..].try_into().unwrap())
        })
        .collect()
}

#[test]
fn bench_cuckoo_and_plain_tables_with_multireadrandom() {
    const CUCKOO_MAGIC: u64 = 0x926789d0c5f17873;
    // PlainTable files without an index in the file carry RocksDB's legacy plain magic.
    const PLAIN_MAGICS: [u64; 2] = [0x8242229663bf9564, 0x4f3418eb7a8f13b8];
    let plain = ["--use_plain_table=1", "--mmap_read=1", "--prefix_size=8"];
    for (flags, magics, prefix) in [
        (&["--use_cuckoo_table=1", "--mmap_read=1"][..], &[CUCKOO_MAGIC][..], 0),
        (&plain[..], &PLAIN_MAGICS[..], 8),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let db = format!("--db={}", path.display());
        // Loaded first (--batch_size would also batch fillseq's writes, as in db_bench).
        let mut args = vec!["bench", &db, "--benchmarks=fillseq,compact", "--num=3000", "--seed=1"];
        args.extend_from_slice(flags);
        let o = shale(&args);
        assert!(o.status.success(), "{flags:?}\n{}{}", stdout(&o), stderr(&o));
        let mut args = vec![
            "bench",
            &db,
            "--use_existing_db",
            "--benchmarks=readrandom,multireadrandom",
            "--num=3000",
            "--batch_size=7",
            "--seed=1",
        ];
        args.extend_from_slice(flags);
        let o = shale(&args);
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(o.status.success(), "{flags:?}\n{out}{err}");
        assert!(out.contains(&format!("Prefix:    {prefix} bytes\n")), "{out}");
        assert!(err.contains("entries_per_batch = 7"), "{err}");
        assert!(
            ops_of(&out, "readrandom").extra.contains("(3000 of 3000 found)"),
            "{out}"
        );
        // Batches of 7 up to --reads (db_bench's Duration): 428 batches, every key found.
        let m = ops_of(&out, "multireadrandom");
        assert_eq!(m.n, 2996, "{out}");
        assert!(m.extra.contains("(2996 of 2996 found)"), "{out}");
        let found = sst_magics(&path);
        assert!(
            !found.is_empty() && found.iter().all(|m| magics.contains(m)),
            "{flags:?}: {found:x?}"
        );
    }
    // As db_bench: cuckoo tables need --mmap_read, a plain table warns about the memtable.
    let o = shale(&["bench", "--use_cuckoo_table=1", "--num=10"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cuckoo table format requires mmap read to operate"));
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let o = shale(&[
        "bench",
        &db,
        "--use_plain_table=1",
        "--prefix_size=4",
        "--benchmarks=fillseq",
        "--num=10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("Warning: plain table is used with SkipListFactory"));
}

/// `shale ldb` on a DB with column families: `list_column_families`, `create_column_family`,
/// `drop_column_family` and `--column_family=NAME` on the data commands, in ldb 7.8's output;
/// the commands without `--column_family` keep working on `default` of such a DB.
#[test]
fn ldb_column_families() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = format!("--db={}", path.display());
    let ok = |args: &[&str]| {
        let o = shale(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let fail = |args: &[&str]| {
        let o = shale(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stdout(&o));
        stderr(&o)
    };
    assert_eq!(ok(&["ldb", &db, "--create_if_missing", "put", "a", "1"]), "OK\n");
    assert_eq!(
        ok(&["ldb", &db, "list_column_families"]),
        format!("Column families in {}: \n{{default}}\n", path.display())
    );
    assert_eq!(ok(&["ldb", &db, "create_column_family", "x"]), "OK\n");
    assert_eq!(ok(&["ldb", &db, "create_column_family", "y"]), "OK\n");
    assert_eq!(
        ok(&["ldb", &db, "list_column_families"]),
        format!("Column families in {}: \n{{default, x, y}}\n", path.display())
    );
    assert!(fail(&["ldb", &db, "create_column_family", "x"]).starts_with("Failed: Fail to create new column family: "));
    assert_eq!(
        fail(&["ldb", &db, "create_column_family"]),
        "Failed: new column family name must be specified\n"
    );
    // create/drop take --db alone, as ldb's
    assert_eq!(
        fail(&["ldb", &db, "create_column_family", "--hex", "z"]),
        "Invalid command-line flag hex\n"
    );

    // data commands on family x; the same keys in default stay apart
    let x = "--column_family=x";
    assert_eq!(ok(&["ldb", &db, x, "put", "a", "x1"]), "OK\n");
    assert_eq!(ok(&["ldb", &db, x, "--hex", "put", "0x6200", "0x00FF"]), "OK\n");
    assert_eq!(
        ok(&["ldb", &db, x, "batchput", "c", "x3", "d", "x4", "e", "x5"]),
        "OK\n"
    );
    assert_eq!(ok(&["ldb", &db, x, "deleterange", "d", "e"]), "OK\n");
    assert_eq!(ok(&["ldb", &db, x, "get", "a"]), "x1\n");
    assert_eq!(ok(&["ldb", &db, "get", "a"]), "1\n");
    assert_eq!(ok(&["ldb", &db, x, "--hex", "get", "0x6200"]), "0x00FF\n");
    assert_eq!(
        ok(&["ldb", &db, x, "scan", "--key_hex"]),
        "0x61 : x1\n0x6200 : \u{0}\u{FFFD}\n0x63 : x3\n0x65 : x5\n"
    );
    assert_eq!(
        ok(&["ldb", &db, x, "--hex", "scan", "--from=0x62", "--to=0x65"]),
        "0x6200 : 0x00FF\n0x63 : 0x7833\n"
    );
    assert_eq!(
        ok(&["ldb", &db, x, "dump", "--value_hex"]),
        "a ==> 0x7831\nb\u{0} ==> 0x00FF\nc ==> 0x7833\ne ==> 0x7835\nKeys in range: 4\n"
    );
    assert_eq!(ok(&["ldb", &db, "scan"]), "a : 1\n");
    assert_eq!(ok(&["ldb", &db, "dump"]), "a ==> 1\nKeys in range: 1\n");
    assert_eq!(ok(&["ldb", &db, "--column_family=y", "scan"]), "");
    let stats = ok(&["ldb", &db, x, "dump", "--stats"]);
    assert!(stats.contains("** Compaction Stats [x] **"), "{stats}");
    assert_eq!(ok(&["ldb", &db, x, "delete", "a"]), "OK\n");
    assert_eq!(fail(&["ldb", &db, x, "get", "a"]), "Failed: Get failed: NotFound: \n");
    assert_eq!(ok(&["ldb", &db, "get", "a"]), "1\n");
    assert_eq!(
        fail(&["ldb", &db, "--column_family=nope", "get", "a"]),
        "Failed: Non-existing column family nope\n"
    );
    assert_eq!(
        fail(&["ldb", &db, "--column_family=nope", "put", "a", "b"]),
        "Failed: Non-existing column family nope\n"
    );
    assert_eq!(ok(&["ldb", &db, "checkconsistency"]), "OK\n");
    // checkpoint: the copy lists the same families and reads the same; an existing
    // directory is refused.
    let ck = dir.path().join("ck").display().to_string();
    let ck_arg = format!("--checkpoint_dir={ck}");
    assert_eq!(ok(&["ldb", &db, "checkpoint", &ck_arg]), "OK\n");
    let ck_db = format!("--db={ck}");
    assert_eq!(ok(&["ldb", &ck_db, "get", "a"]), "1\n");
    let families = |d: &str| {
        ok(&["ldb", d, "list_column_families"])
            .split_once(':')
            .unwrap()
            .1
            .to_string()
    };
    assert_eq!(families(&ck_db), families(&db));
    assert!(fail(&["ldb", &db, "checkpoint", &ck_arg]).contains("already exists"));

    // drop
    assert_eq!(ok(&["ldb", &db, "drop_column_family", "y"]), "OK\n");
    assert_eq!(
        fail(&["ldb", &db, "drop_column_family", "y"]),
        "Failed: Column family: y doesn't exist in db.\n"
    );
    assert!(fail(&["ldb", &db, "drop_column_family", "default"]).starts_with("Failed: Fail to drop column family: "));
    assert_eq!(
        fail(&["ldb", &db, "drop_column_family"]),
        "Failed: The name of column family to drop must be specified\n"
    );
    assert_eq!(
        ok(&["ldb", &db, "list_column_families"]),
        format!("Column families in {}: \n{{default, x}}\n", path.display())
    );
    assert_eq!(ok(&["ldb", &db, x, "scan", "--no_value"]), "b\u{0}\nc\ne\n");
    // ldb 7.8 prints an unreadable DB on stderr and exits 0
    let o = shale(&["ldb", "--db=/nonexistent/shale/db", "list_column_families"]);
    assert!(o.status.success());
    assert!(
        stderr(&o).starts_with("Error in processing db /nonexistent/shale/db "),
        "{}",
        stderr(&o)
    );
}

/// Each family is opened with its own section of the OPTIONS file: a plain-table family (keys
/// hashed by an 8-byte prefix, which cannot be read as block-based or without the extractor)
/// next to block-based ones.
#[test]
fn ldb_reads_each_family_with_its_options() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut o = shale::Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let mut plain = shale::Options::default();
    plain.set_prefix_extractor(shale::slice_transform::new_fixed_prefix_transform(8));
    plain.set_plain_table_factory(&shale::PlainTableFactoryOptions {
        user_key_len: 16,
        encoding_type: shale::KeyEncodingType::Prefix,
        ..Default::default()
    });
    let mut zstd = shale::Options::default();
    zstd.set_compression_type(shale::DBCompressionType::Zstd);
    {
        let db = shale::DB::open_cf_descriptors(
            &o,
            &path,
            vec![
                shale::ColumnFamilyDescriptor::new("default", o.clone()),
                shale::ColumnFamilyDescriptor::new("plain", plain),
                shale::ColumnFamilyDescriptor::new("zstd", zstd),
            ],
        )
        .unwrap();
        let p = db.cf_handle("plain").unwrap();
        let z = db.cf_handle("zstd").unwrap();
        for i in 0..50u32 {
            db.put_cf(&p, format!("{:08}{:08}", i % 7, i), format!("p{i}")).unwrap();
            db.put_cf(&z, format!("z{i:03}"), format!("z{i}")).unwrap();
        }
        db.flush_cf(&p).unwrap();
        db.flush_cf(&z).unwrap();
        db.put_cf(&p, "00000003wal-tail", "in the WAL").unwrap();
    }
    let db = format!("--db={}", path.display());
    let o = shale(&["ldb", &db, "--column_family=plain", "scan"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 51, "{out}");
    assert!(out.contains("0000000300000010 : p10\n"), "{out}");
    assert!(out.contains("00000003wal-tail : in the WAL\n"), "{out}");
    let o = shale(&["ldb", &db, "--column_family=plain", "get", "0000000500000012"]);
    assert_eq!(stdout(&o), "p12\n", "{}", stderr(&o));
    let o = shale(&["ldb", &db, "--column_family=zstd", "dump", "--max_keys=2"]);
    assert_eq!(
        stdout(&o),
        "z000 ==> z0\nz001 ==> z1\nKeys in range: 2\n",
        "{}",
        stderr(&o)
    );
    // a read-write command opens every family with its options too
    let o = shale(&["ldb", &db, "--column_family=plain", "put", "0000000900000000", "new"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = shale(&["ldb", &db, "--column_family=plain", "get", "0000000900000000"]);
    assert_eq!(stdout(&o), "new\n", "{}", stderr(&o));
}

/// `shale bench --num_column_families=N` opens the DB with `default` and db_bench's
/// `column_family_name_%06d` families, writes key number `k` to family `k % N` only, and
/// readrandom looks each key up in that family (so it finds every one).
#[test]
fn bench_num_column_families_spreads_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let dbf = format!("--db={}", path.display());
    let o = shale(&[
        "bench",
        "--benchmarks=fillseq,readrandom,flush",
        "--num=300",
        "--num_column_families=3",
        "--writes_per_range_tombstone=0",
        "--seed=7",
        &dbf,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(ops_of(&out, "readrandom").extra.contains("(300 of 300 found)"), "{out}");
    let opts = shale::Options::default();
    let names = shale::DB::list_cf(&opts, &path).unwrap();
    assert_eq!(
        names,
        ["default", "column_family_name_000001", "column_family_name_000002"]
    );
    let db = shale::DB::open_cf(&opts, &path, &names).unwrap();
    let cfs: Vec<_> = names.iter().map(|n| db.cf_handle(n).unwrap()).collect();
    for (i, cf) in cfs.iter().enumerate() {
        // the flush benchmark flushed every family
        assert!(
            db.property_int_value_cf(cf, "rocksdb.num-files-at-level0")
                .unwrap()
                .unwrap_or(0)
                >= 1,
            "{}",
            names[i]
        );
        let keys: Vec<u64> = db
            .iterator_cf(cf, shale::IteratorMode::Start)
            .map(|r| {
                let (k, _) = r.unwrap();
                u64::from_be_bytes(k[..8].try_into().unwrap())
            })
            .collect();
        let want: Vec<u64> = (0..300u64).filter(|k| k % 3 == i as u64).collect();
        assert_eq!(keys, want, "{}", names[i]);
    }
    drop(cfs);
    drop(db);
    // reopening the existing DB with the same flag reads it again
    let o = shale(&[
        "bench",
        "--benchmarks=readrandom",
        "--num=300",
        "--num_column_families=3",
        "--use_existing_db",
        "--seed=9",
        &dbf,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        ops_of(&stdout(&o), "readrandom").extra.contains("(300 of 300 found)"),
        "{}",
        stdout(&o)
    );
}

/// `cmd` run with `input` on its standard input.
fn piped(cmd: &mut Command, input: &str) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// `shale ARGS` with `input` on its standard input.
fn shale_stdin(args: &[&str], input: &str) -> Output {
    piped(Command::new(env!("CARGO_BIN_EXE_shale")).args(args), input)
}

#[test]
fn ldb_write_and_ingest_extern_sst() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let (src, dst) = (format!("--db={}", p("src")), format!("--db={}", p("dst")));
    let sst = p("ext.sst");

    // Lines `key ==> value`; a line without the delimiter is counted and skipped.
    let o = shale_stdin(
        &["ldb", &src, "--create_if_missing", "write_extern_sst", &sst],
        "a ==> 1\nnot a pair\nb c ==> 2 ==> x\nd ==> 4\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("Warning: 1 bad lines ignored.\nexternal SST file written to {sst}\n")
    );
    assert_eq!(stdout(&o), "");
    let hex_sst = p("hex.sst");
    let o = shale_stdin(
        &["ldb", &src, "--hex", "write_extern_sst", &hex_sst],
        "0x65 ==> 0x00FF\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));

    // Ingest over a memtable holding `a`: the file's value wins.
    let o = shale(&["ldb", &dst, "--create_if_missing", "put", "a", "old"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = shale(&["ldb", &dst, "ingest_extern_sst", &sst]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "external SST files ingested\n");
    assert!(std::path::Path::new(&sst).exists(), "copied, not moved");
    let o = shale(&[
        "ldb",
        &dst,
        "ingest_extern_sst",
        &hex_sst,
        "--move_files",
        "--write_global_seqno=false",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !std::path::Path::new(&hex_sst).exists(),
        "--move_files removes the source"
    );
    let o = shale(&["ldb", &dst, "scan", "--value_hex"]);
    assert_eq!(stdout(&o), "a : 0x31\nb c : 0x32203D3D3E2078\nd : 0x34\ne : 0x00FF\n");

    // --column_family: the file goes into that family only.
    assert!(shale(&["ldb", &dst, "create_column_family", "fam"]).status.success());
    let fam_sst = p("fam.sst");
    let o = shale_stdin(&["ldb", &src, "write_extern_sst", &fam_sst], "f ==> in-fam\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = shale(&["ldb", &dst, "--column_family=fam", "ingest_extern_sst", &fam_sst]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&shale(&["ldb", &dst, "--column_family=fam", "scan"])),
        "f : in-fam\n"
    );
    assert_eq!(stdout(&shale(&["ldb", &dst, "get", "f"])), "");

    // Bad input: each a `Failed:` line and exit code 1, nothing half-written into the DB.
    let fails = |o: Output, want: &str| {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(want), "want {want:?} in {}", stderr(&o));
    };
    fails(
        shale_stdin(&["ldb", &src, "write_extern_sst", &p("u.sst")], "b ==> 1\na ==> 2\n"),
        "Failed: failed to write record to file: ",
    );
    fails(
        shale_stdin(&["ldb", &src, "write_extern_sst", &p("e.sst")], "no pairs\n"),
        "Failed: Failed to finish writing to file: ",
    );
    fails(
        shale_stdin(
            &["ldb", &src, "--hex", "write_extern_sst", &p("h.sst")],
            "0x61 ==> zz\n",
        ),
        "Failed: Invalid hex input",
    );
    fails(
        shale_stdin(&["ldb", &src, "write_extern_sst"], ""),
        "Failed: output SST file path must be specified",
    );
    fails(
        shale(&["ldb", &dst, "ingest_extern_sst"]),
        "Failed: input SST path must be specified",
    );
    fails(
        shale(&["ldb", &dst, "ingest_extern_sst", &p("nosuch.sst")]),
        "Failed: failed to ingest external SST: ",
    );
    fails(
        shale(&["ldb", &dst, "ingest_extern_sst", &sst, "--ingest_behind"]),
        "Failed: failed to ingest external SST: ",
    );
    fails(
        shale(&["ldb", &dst, "ingest_extern_sst", &sst, "--move_files=maybe"]),
        "Failed: Invalid value for boolean argument",
    );
    fails(
        shale(&["ldb", &dst, "ingest_extern_sst", &sst, "--bogus"]),
        "Invalid command-line flag bogus",
    );
    let o = shale(&["ldb", &dst, "get", "d"]);
    assert_eq!(stdout(&o), "4\n");
}

/// RocksDB's `ldb` on `PATH`, or `None` after a loud banner (a failure under
/// `SHALE_REQUIRE_ROCKSDB=1`).
fn rocksdb_ldb() -> Option<std::path::PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("ldb"))
        .find(|p| p.is_file());
    if found.is_none() {
        let msg = "RocksDB compatibility test needs RocksDB's `ldb` (Debian's rocksdb-tools)";
        if std::env::var("SHALE_REQUIRE_ROCKSDB").is_ok_and(|v| v == "1") {
            panic!("{msg} (SHALE_REQUIRE_ROCKSDB=1)");
        }
        eprintln!("\n*** SKIPPED: {msg}; install it or run .ci/run\n");
    }
    found
}

#[test]
fn ldb_extern_sst_files_cross_with_rocksdb_ldb() {
    let Some(ldb) = rocksdb_ldb() else { return };
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let input: String = (0..500).map(|i| format!("k{i:05} ==> v{i}\n")).collect();
    let ldb_stdin = |args: &[&str], input: &str| {
        let o = piped(Command::new(&ldb).args(args), input);
        assert!(o.status.success(), "ldb {args:?}: {}", stderr(&o));
        o
    };
    let want: String = (0..500).map(|i| format!("k{i:05} : v{i}\n")).collect();

    // RocksDB writes, Shale ingests.
    let (rsrc, rsst) = (format!("--db={}", p("rsrc")), p("rocksdb.sst"));
    ldb_stdin(&[&rsrc, "--create_if_missing", "write_extern_sst", &rsst], &input);
    let sdst = format!("--db={}", p("sdst"));
    assert!(shale(&["ldb", &sdst, "--create_if_missing", "put", "k00007", "old"])
        .status
        .success());
    let o = shale(&["ldb", &sdst, "ingest_extern_sst", &rsst]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&shale(&["ldb", &sdst, "scan"])), want);

    // Shale writes, RocksDB ingests.
    let (ssrc, ssst) = (format!("--db={}", p("ssrc")), p("shale.sst"));
    let o = shale_stdin(
        &["ldb", &ssrc, "--create_if_missing", "write_extern_sst", &ssst],
        &input,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rdst = format!("--db={}", p("rdst"));
    ldb_stdin(&[&rdst, "--create_if_missing", "put", "k00007", "old"], "");
    let o = ldb_stdin(&[&rdst, "ingest_extern_sst", &ssst], "");
    assert_eq!(stderr(&o), "external SST files ingested\n");
    let o = Command::new(&ldb).args([&rdst, "scan"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), want);
}

/// `randomtransaction` on both transaction DBs (several threads) and on a plain DB, with the
/// end-of-run check that every set sums to the same total.
#[test]
fn bench_randomtransaction_verifies_sums() {
    for mode in [
        &["--transaction_db=1", "--threads=3"][..],
        &[
            "--optimistic_transaction_db=1",
            "--threads=3",
            "--transaction_set_snapshot=1",
        ][..],
        &[
            "--transaction_db=1",
            "--transaction_set_snapshot=1",
            "--transaction_sets=4",
        ][..],
        &[][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let dbf = format!("--db={}", dir.path().join("db").display());
        let mut args = vec!["bench", "--benchmarks=fillrandom,randomtransaction", "--num=3000", &dbf];
        args.extend_from_slice(mode);
        let o = shale(&args);
        let out = stdout(&o);
        assert!(o.status.success(), "{mode:?}: {out}{}", stderr(&o));
        assert!(out.contains("randomtransaction :"), "{out}");
        assert!(out.contains("RandomTransactionVerify Success"), "{mode:?}: {out}");
        if mode.contains(&"--transaction_db=1") {
            // As db_bench, most pessimistic transactions were prepared (two-phase commit).
            let mut logs: Vec<_> = std::fs::read_dir(dir.path().join("db"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect();
            logs.sort();
            let wal = logs.last().expect("a WAL");
            let o = shale(&["ldb", "dump_wal", &format!("--walfile={}", wal.display())]);
            let dump = stdout(&o);
            assert!(
                dump.contains("BEGIN_PREPARE(false)") && dump.contains("COMMIT(0x"),
                "{dump}"
            );
        }
    }
    let o = shale(&[
        "bench",
        "--benchmarks=randomtransaction",
        "--transaction_sets=0",
        "--num=10",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("transaction_sets"), "{}", stderr(&o));
}

/// `ldb --secondary_path` reads a DB another process holds open for writing, as RocksDB's
/// ldb does, and refuses writes; RocksDB 7.8's ldb does the same on a live Shale DB, and
/// Shale's on a DB RocksDB's ldb wrote.
#[test]
fn ldb_secondary_path_reads_a_live_db_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("primary");
    let mut o = shale::Options::default();
    o.create_if_missing(true);
    let db = shale::DB::open(&o, &p).unwrap();
    db.put(b"flushed", b"1").unwrap();
    db.flush().unwrap();
    db.put(b"wal-only", b"2").unwrap();
    let dbarg = format!("--db={}", p.display());
    let sec = format!("--secondary_path={}", dir.path().join("sec").display());
    let o1 = shale(&["ldb", &dbarg, &sec, "scan"]);
    assert!(o1.status.success(), "{}", stderr(&o1));
    assert_eq!(stdout(&o1), "flushed : 1\nwal-only : 2\n");
    let o2 = shale(&["ldb", &dbarg, &sec, "put", "k", "v"]);
    assert!(!o2.status.success());
    assert!(stderr(&o2).starts_with("Failed: "), "{}", stderr(&o2));
    assert_eq!(db.get(b"k").unwrap(), None);
    let Some(ldb) = rocksdb_ldb() else { return };
    let sec2 = format!("--secondary_path={}", dir.path().join("sec2").display());
    let o3 = Command::new(&ldb).args([&dbarg, &sec2, "scan"]).output().unwrap();
    assert!(o3.status.success(), "{}", stderr(&o3));
    assert_eq!(stdout(&o3), "flushed : 1\nwal-only : 2\n");
    drop(db);
    // RocksDB writes (its data left in its WAL), Shale reads as a secondary.
    let r = format!("--db={}", dir.path().join("rocks").display());
    let o4 = Command::new(&ldb)
        .args([&r, "--create_if_missing", "put", "rk", "rv"])
        .output()
        .unwrap();
    assert!(o4.status.success(), "{}", stderr(&o4));
    let sec3 = format!("--secondary_path={}", dir.path().join("sec3").display());
    let o5 = shale(&["ldb", &r, &sec3, "get", "rk"]);
    assert!(o5.status.success(), "{}", stderr(&o5));
    assert_eq!(stdout(&o5), "rv\n");
}
