//! Regression tests for bugs found by `shale stress` (issue 6). Each test is named after the
//! bug it pins down; `docs/reliability.md` lists them.

use std::sync::Arc;

use shale::{MemFs, Options, WriteBatch, WriteOptions, DB};

fn mem_opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing = true;
    o.env = Arc::new(fs.clone());
    o
}

/// Found by `shale stress --seed=7 --disable_wal=-1` (a reopen lost keys): closing a DB dropped
/// the memtable holding writes made with `disable_wal`, where RocksDB flushes it at close.
#[test]
fn clean_close_keeps_writes_made_without_wal() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let wo = WriteOptions { sync: false, disable_wal: true };
    {
        let db = DB::open(&opts, "/db").unwrap();
        db.put_opt(b"a", b"1", &wo).unwrap();
        let mut b = WriteBatch::new();
        b.put(b"b", b"2");
        b.delete(b"a");
        b.put(b"c", b"3");
        db.write_opt(b, &wo).unwrap();
        db.put(b"d", b"4").unwrap();
    }
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"4"[..]));
    // And the data is durable, not only in the OS: it was flushed to a synced table.
    drop(db);
    fs.power_loss();
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
}
