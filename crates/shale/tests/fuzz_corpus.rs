//! Replays the committed fuzz seed corpus (`fuzz/corpus/`) through the fuzz targets' decoders,
//! plus cheap deterministic mutations of each seed (bit flips, truncations, splices), so the
//! decoders are exercised in every CI run without libFuzzer. Needs `--features fuzzing`:
//! `cargo test -p shale --features fuzzing --test fuzz_corpus`.
#![cfg(feature = "fuzzing")]

use std::path::Path;

use shale::fuzzing;

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no seeds in {}", dir.display());
    v
}

/// Each seed and up to `n` mutants of it.
fn mutants(seed: &[u8], n: usize) -> Vec<Vec<u8>> {
    let mut out = vec![seed.to_vec()];
    let len = seed.len();
    if len == 0 {
        return out;
    }
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ len as u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..n {
        let mut d = seed.to_vec();
        match i % 4 {
            0 => {
                let p = rnd() as usize % len;
                d[p] ^= 1 << (rnd() % 8);
            }
            1 => d.truncate(rnd() as usize % len),
            2 => {
                let p = rnd() as usize % len;
                d[p] = rnd() as u8;
                let q = rnd() as usize % len;
                d[q] = 0xff;
            }
            _ => {
                let a = rnd() as usize % len;
                let b = rnd() as usize % len;
                let (a, b) = (a.min(b), a.max(b));
                let chunk = d[a..b].to_vec();
                d.extend_from_slice(&chunk);
            }
        }
        out.push(d);
    }
    out
}

fn run(target: &str, n: usize, f: impl Fn(&[u8])) {
    let mut cases = 0;
    for s in seeds(target) {
        for m in mutants(&s, n) {
            f(&m);
            cases += 1;
        }
    }
    eprintln!("{target}: {cases} inputs");
}

#[test]
fn wide_columns_corpus() {
    run("wide_columns", 400, |d| {
        let _ = fuzzing::wide_columns_decode(d);
    });
    for s in seeds("wide_columns") {
        fuzzing::wide_columns_decode(&s).unwrap();
    }
}

#[test]
fn blob_read_corpus() {
    run("blob_read", 400, |d| {
        let _ = fuzzing::blob_read(d);
    });
    // the seeds are RocksDB's blob files with an index to their record: the value reads
    for s in seeds("blob_read") {
        assert!(fuzzing::blob_read(&s).unwrap() > 0);
    }
}

#[test]
fn block_decode_corpus() {
    run("block_decode", 300, |d| {
        let (sel, b) = d.split_first().map(|(s, b)| (*s, b)).unwrap_or((0, d));
        let _ = fuzzing::block_decode(b, sel);
    });
}

#[test]
fn table_reader_corpus() {
    run("table_reader", 150, |d| {
        let _ = fuzzing::table_read(d);
    });
}

#[test]
fn cuckoo_reader_corpus() {
    run("cuckoo_reader", 400, |d| {
        let _ = fuzzing::cuckoo_table_read(d);
    });
}

#[test]
fn plain_reader_corpus() {
    run("plain_reader", 400, |d| {
        let _ = fuzzing::plain_table_read(d);
    });
}

#[test]
fn wal_replay_corpus() {
    run("wal_replay", 60, |d| {
        let (mode, w) = d.split_first().map(|(s, b)| (*s, b)).unwrap_or((0, d));
        let _ = fuzzing::wal_replay(w, mode);
    });
}

#[test]
fn write_batch_and_version_edit_corpus() {
    run("write_batch", 200, |d| {
        let _ = fuzzing::write_batch_decode(d);
    });
    run("version_edit", 200, |d| {
        let _ = fuzzing::version_edit_decode(d);
    });
    run("manifest_replay", 200, |d| {
        let _ = fuzzing::manifest_replay(d);
    });
}

/// Records whose length fields claim keys or values of 4 GiB or more (or just under, where the
/// memtable's internal key would not fit): every one is an error, never a panic or a huge
/// allocation.
#[test]
fn write_batch_with_huge_lengths() {
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let lens = [
        u32::MAX as u64,
        u32::MAX as u64 - 8,
        u32::MAX as u64 - 7,
        1 << 32,
        u64::MAX,
    ];
    for tag in [0x00u8, 0x01, 0x02, 0x07, 0x0F] {
        for &klen in &lens {
            for &vlen in &[0u64, 3, u32::MAX as u64] {
                let mut d = Vec::new();
                d.extend_from_slice(&1u64.to_le_bytes());
                d.extend_from_slice(&1u32.to_le_bytes());
                d.push(tag);
                varint(klen, &mut d);
                d.extend_from_slice(b"abc");
                varint(vlen, &mut d);
                d.extend_from_slice(b"xyz");
                assert!(
                    fuzzing::write_batch_decode(&d).is_err(),
                    "tag {tag:#x} key length {klen} value length {vlen} decoded"
                );
                let mut wal = Vec::new();
                wal.push(2u8);
                let mut framed = Vec::new();
                let crc = 0u32.to_le_bytes();
                framed.extend_from_slice(&crc);
                framed.extend_from_slice(&(d.len() as u16).to_le_bytes());
                framed.push(1);
                framed.extend_from_slice(&d);
                wal.extend_from_slice(&framed);
                let _ = fuzzing::wal_replay(&wal[1..], wal[0]);
            }
        }
    }
}

#[test]
fn seeds_decode_cleanly() {
    // The unmutated seeds are valid files: they must decode without error.
    for s in seeds("table_reader") {
        fuzzing::table_read(&s).unwrap();
    }
    for s in seeds("cuckoo_reader") {
        fuzzing::cuckoo_table_read(&s).unwrap();
    }
    for s in seeds("plain_reader") {
        assert!(
            fuzzing::plain_table_read(&s).unwrap() > 0,
            "the plain seed reads no entry"
        );
    }
    for s in seeds("write_batch") {
        fuzzing::write_batch_decode(&s).unwrap();
    }
    for s in seeds("version_edit") {
        fuzzing::version_edit_decode(&s).unwrap();
    }
    for s in seeds("manifest_replay") {
        assert!(fuzzing::manifest_replay(&s).unwrap() > 0);
    }
    for s in seeds("wal_replay") {
        assert!(fuzzing::wal_replay(&s[1..], s[0]).unwrap() > 0);
    }
}
