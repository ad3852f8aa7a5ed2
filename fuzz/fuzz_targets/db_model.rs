//! Model-based DB fuzzer: the input is a program of operations run against a DB on MemFs and a
//! BTreeMap model; every read (get, forward scan, bounded backward scan) must agree with the
//! model, through flushes, compactions and reopens. The first byte picks the format_version.
#![no_main]
use std::collections::BTreeMap;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use shale::fs::testing::MemFs;
use shale::{BlockBasedOptions, Options, ReadOptions, WriteBatch, DB};

fn key(b: u8) -> Vec<u8> {
    format!("k{:03}", b % 64).into_bytes()
}

fn check(db: &DB, m: &BTreeMap<Vec<u8>, Vec<u8>>, probe: u8) {
    let k = key(probe);
    assert_eq!(db.get(&k).unwrap().as_ref(), m.get(&k), "get {k:?}");
    let mut it = db.raw_iterator();
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.next();
    }
    it.status().unwrap();
    let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want, "forward scan");
    // A bounded backward scan.
    let (lo, hi) = (key(probe), key(probe.wrapping_add(9)));
    if lo < hi {
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(lo.clone());
        ro.set_iterate_upper_bound(hi.clone());
        let mut it = db.raw_iterator_opt(ro);
        it.seek_to_last();
        let mut got = Vec::new();
        while it.valid() {
            got.push(it.key().unwrap().to_vec());
            it.prev();
        }
        it.status().unwrap();
        let want: Vec<_> = m.range(lo..hi).rev().map(|(k, _)| k.clone()).collect();
        assert_eq!(got, want, "backward bounded scan");
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 4096 {
        return;
    }
    let fs = MemFs::new();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_env(Arc::new(fs.clone()));
    opts.set_write_buffer_size(4096);
    opts.set_level_zero_file_num_compaction_trigger(2);
    let mut table = BlockBasedOptions::default();
    table.set_block_size(256);
    table.set_format_version(2 + (data.first().copied().unwrap_or(0) % 5) as i32);
    opts.set_block_based_table_factory(&table);
    let mut db = Some(DB::open(&opts, "/db").unwrap());
    let mut m: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut i = 1;
    while i + 2 < data.len() {
        let (op, a, b) = (data[i], data[i + 1], data[i + 2]);
        i += 3;
        let d = db.as_ref().unwrap();
        match op % 10 {
            0..=2 => {
                let v = vec![b; (a as usize % 7) * 13];
                d.put(key(a), &v).unwrap();
                m.insert(key(a), v);
            }
            3 => {
                d.delete(key(a)).unwrap();
                m.remove(&key(a));
            }
            4 => {
                let (lo, hi) = (key(a), key(b));
                let r = d.delete_range(&lo, &hi);
                // begin > end is an invalid argument (as RocksDB); begin == end deletes nothing.
                assert_eq!(r.is_err(), lo > hi, "delete_range({lo:?}, {hi:?}): {r:?}");
                if lo < hi {
                    let doomed: Vec<_> = m.range(lo..hi).map(|(k, _)| k.clone()).collect();
                    for k in doomed {
                        m.remove(&k);
                    }
                }
            }
            5 => {
                let mut wb = WriteBatch::new();
                for j in 0..(b % 5) {
                    let k = key(a.wrapping_add(j * 3));
                    if j % 2 == 0 {
                        wb.put(&k, [j; 3]);
                        m.insert(k, vec![j; 3]);
                    } else {
                        wb.delete(&k);
                        m.remove(&k);
                    }
                }
                d.write(wb).unwrap();
            }
            6 => d.flush().unwrap(),
            7 => d.compact_range(Some(&key(a)), Some(&key(b))).unwrap(),
            8 => {
                // Clean close and reopen (the WAL, flushed tables and MANIFEST are replayed).
                drop(db.take());
                db = Some(DB::open(&opts, "/db").unwrap());
            }
            _ => check(d, &m, a),
        }
    }
    check(db.as_ref().unwrap(), &m, 0);
});
