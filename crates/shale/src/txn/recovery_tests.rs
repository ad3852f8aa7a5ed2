//! Two-phase commit through a `TransactionDB`: prepared sections left in the WAL by a crash,
//! recovered and resolved at the next open.

use std::path::Path;
use std::sync::Arc;

use crate::error::Error;
use crate::fs::{FileSystem, MemFs};
use crate::log::{DBRecoveryMode, Reader, Writer};
use crate::options::{Options, WriteOptions};
use crate::txn::pessimistic::{TransactionDB, TransactionDBOptions};

/// A DB whose only WAL holds a plain put and one prepared transaction (`k` -> `v`, named
/// `t`), left by a crash; returns the WAL's path and its records.
fn crashed_with_prepared(fs: &MemFs, o: &Options) -> (std::path::PathBuf, Vec<Vec<u8>>) {
    let db: TransactionDB = TransactionDB::open(o, &TransactionDBOptions::default(), "/db").unwrap();
    db.put(b"plain", b"p").unwrap();
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    let t = db.transaction_opt(&wo, &Default::default());
    t.set_name(b"t").unwrap();
    t.put(b"k", b"v").unwrap();
    t.prepare().unwrap();
    std::mem::forget(t);
    std::mem::forget(db);
    fs.process_crash();
    let mut logs: Vec<String> = fs.list(Path::new("/db")).unwrap();
    logs.retain(|n| n.ends_with(".log"));
    logs.sort();
    let path = Path::new("/db").join(logs.last().unwrap());
    let data = fs.read_all(&path).unwrap();
    let mut r = Reader::new(data, "wal", 0, DBRecoveryMode::AbsoluteConsistency);
    let mut recs = Vec::new();
    while let Some(rec) = r.read_record().unwrap() {
        recs.push(rec.to_vec());
    }
    (path, recs)
}

fn rewrite(fs: &MemFs, path: &Path, recs: &[Vec<u8>]) {
    let mut w = Writer::new(fs.new_writable(path).unwrap());
    for r in recs {
        w.add_record(r).unwrap();
    }
    w.sync().unwrap();
}

/// Sections of other write policies and malformed sections are refused with a clear error
/// naming the WAL (never a panic, never applied).
#[test]
fn other_policies_and_malformed_sections_are_errors() {
    let fs = MemFs::new();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    let (path, recs) = crashed_with_prepared(&fs, &o);
    let prep = recs.iter().position(|r| r.get(12) == Some(&0x09)).unwrap();
    let open = || <TransactionDB>::open(&o, &TransactionDBOptions::default(), "/db").map(|_| ());
    let mut cases: Vec<(Vec<u8>, &str)> = Vec::new();
    for (tag, want) in [(0x12u8, "WRITE_PREPARED"), (0x13, "WRITE_UNPREPARED")] {
        let mut r = recs[prep].clone();
        r[12] = tag;
        cases.push((r, want));
    }
    // No end marker: cut the record before it (the count still matches its records).
    let mut r = recs[prep].clone();
    let end = r.iter().rposition(|&b| b == 0x0A).unwrap();
    r.truncate(end);
    cases.push((r, "no END_PREPARE_XID"));
    // An end marker without a begin.
    let mut r = recs[prep].clone();
    r[12] = 0x0D;
    cases.push((r, "without BEGIN_PREPARE_XID"));
    // A section inside a section.
    let mut r = recs[prep].clone();
    r.insert(13, 0x09);
    cases.push((r, "inside another"));
    for (bad, want) in cases {
        let mut all = recs.clone();
        all[prep] = bad;
        rewrite(&fs, &path, &all);
        let e = open().unwrap_err();
        assert!(e.to_string().contains(want), "{want}: {e}");
        assert!(e.to_string().contains(".log"), "the WAL is named: {e}");
        if want.starts_with("WRITE_") {
            assert!(matches!(e, Error::NotSupported(_)), "{e:?}");
        } else {
            assert!(matches!(e, Error::Corruption { .. }), "{e:?}");
        }
    }
    // The original WAL still recovers the transaction.
    rewrite(&fs, &path, &recs);
    let db: TransactionDB = TransactionDB::open(&o, &TransactionDBOptions::default(), "/db").unwrap();
    let ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1);
    ts[0].commit().unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}
