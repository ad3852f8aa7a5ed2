//! Compaction filters: keep / remove / change through compactions, never for
//! versions a snapshot can see, never in flushes, per family, factories told whether a
//! compaction is manual or full, and a randomized model where the filter runs at compaction.
#![allow(clippy::field_reassign_with_default)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::Rng;
use shale::compaction_filter::CompactionFilter;
use shale::compaction_filter::Decision;
use shale::compaction_filter_factory::CompactionFilterContext;
use shale::compaction_filter_factory::CompactionFilterFactory;
use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{ColumnFamilyDescriptor, Options, DB};

fn mem_opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_env(Arc::new(fs.clone()));
    o
}

/// Remove keys starting with "rm", change those starting with "ch", keep the others.
fn by_prefix(_level: u32, key: &[u8], _value: &[u8]) -> Decision {
    if key.starts_with(b"rm") {
        Decision::Remove
    } else if key.starts_with(b"ch") {
        Decision::Change(b"changed")
    } else {
        Decision::Keep
    }
}

type Seen = Arc<Mutex<Vec<(Vec<u8>, Vec<u8>)>>>;

/// `by_prefix`, recording every (key, value) it is shown.
fn recording(o: &mut Options) -> Seen {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    o.set_compaction_filter("recording", move |level, k: &[u8], v: &[u8]| {
        s.lock().unwrap().push((k.to_vec(), v.to_vec()));
        by_prefix(level, k, v)
    });
    seen
}

fn newest_options(fs: &MemFs) -> String {
    let names = fs.list(Path::new("/db")).unwrap();
    let newest = names.iter().filter(|n| n.starts_with("OPTIONS-")).max().unwrap();
    String::from_utf8(fs.read_all(&Path::new("/db").join(newest)).unwrap()).unwrap()
}

#[test]
fn remove_change_and_keep_through_compact_range_not_in_flushes() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    let seen = recording(&mut o);
    let db = DB::open(&o, "/db").unwrap();
    for k in ["rm1", "rm2", "ch1", "keep1", "keep2"] {
        db.put(k, format!("v-{k}")).unwrap();
    }
    db.flush().unwrap();
    assert!(seen.lock().unwrap().is_empty(), "a flush ran the filter");
    assert_eq!(db.get("rm1").unwrap(), Some(b"v-rm1".to_vec()));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    // Every key was shown (some twice: with a filter, `compact_range` also rewrites the last
    // level, as RocksDB's default `bottommost_level_compaction`).
    let shown: std::collections::BTreeSet<Vec<u8>> = seen.lock().unwrap().iter().map(|x| x.0.clone()).collect();
    assert_eq!(shown.len(), 5);
    assert_eq!(db.get("rm1").unwrap(), None);
    assert_eq!(db.get("rm2").unwrap(), None);
    assert_eq!(db.get("ch1").unwrap(), Some(b"changed".to_vec()));
    assert_eq!(db.get("keep1").unwrap(), Some(b"v-keep1".to_vec()));
    let keys: Vec<Vec<u8>> = db
        .iterator(shale::IteratorMode::Start)
        .map(|x| x.unwrap().0.to_vec())
        .collect();
    assert_eq!(keys, vec![b"ch1".to_vec(), b"keep1".to_vec(), b"keep2".to_vec()]);
    drop(db);
    // The decisions are in the files: they survive a reopen without the filter.
    let db = DB::open(&mem_opts(&fs), "/db").unwrap();
    assert_eq!(db.get("rm1").unwrap(), None);
    assert_eq!(db.get("ch1").unwrap(), Some(b"changed".to_vec()));
}

#[test]
fn snapshots_protect_the_versions_they_see() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    let seen = recording(&mut o);
    let db = DB::open(&o, "/db").unwrap();
    db.put("rm", "v1").unwrap();
    db.put("ch", "v1").unwrap();
    let snap = db.snapshot();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    // The newest versions are the snapshot's: untouched, not even shown to the filter.
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock().unwrap());
    assert_eq!(db.get("rm").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(db.get("ch").unwrap(), Some(b"v1".to_vec()));
    db.put("rm", "v2").unwrap();
    db.put("ch", "v2").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    // The newer versions are filtered; the snapshot still reads its own.
    let shown = seen.lock().unwrap().clone();
    assert!(shown.contains(&(b"rm".to_vec(), b"v2".to_vec())), "{shown:?}");
    assert!(shown.iter().all(|(_, v)| v != b"v1"), "{shown:?}");
    assert_eq!(db.get("rm").unwrap(), None);
    assert_eq!(db.get("ch").unwrap(), Some(b"changed".to_vec()));
    assert_eq!(snap.get("rm").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(snap.get("ch").unwrap(), Some(b"v1".to_vec()));
    drop(snap);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get("rm").unwrap(), None);
    assert_eq!(db.get("ch").unwrap(), Some(b"changed".to_vec()));
}

#[test]
fn the_filter_never_sees_deleted_values_or_merge_operands() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_merge_operator_associative("concat", |_, existing: Option<&[u8]>, ops: &shale::MergeOperands| {
        let mut v = existing.map(|e| e.to_vec()).unwrap_or_default();
        for op in ops {
            v.extend_from_slice(op);
        }
        Some(v)
    });
    let seen = recording(&mut o);
    let db = DB::open(&o, "/db").unwrap();
    for k in ["d1", "d2", "r1", "r2", "s1", "m1", "live"] {
        db.put(k, "old").unwrap();
    }
    db.flush().unwrap();
    db.delete("d1").unwrap();
    db.delete("d2").unwrap();
    db.delete_range("r1", "r3").unwrap();
    db.single_delete("s1").unwrap();
    db.merge("m1", "+op").unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(&(b"live".to_vec(), b"old".to_vec())), "{seen:?}");
    for (k, v) in &seen {
        // Deleted keys are never shown; the merged key only with its merged value (written as
        // a Put by the first pass, rewritten by the last-level pass).
        assert!(
            k == b"live" || (k == b"m1" && v == b"old+op"),
            "the filter saw {k:?} = {v:?}"
        );
    }
    assert_eq!(db.get("m1").unwrap(), Some(b"old+op".to_vec()));
    assert_eq!(db.get("d1").unwrap(), None);
}

#[test]
fn filters_are_per_family_and_named_in_the_options_file() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let mut filtered = Options::default();
    filtered.set_compaction_filter("PrefixFilter", by_prefix);
    let db = DB::open_cf_descriptors(&o, "/db", vec![ColumnFamilyDescriptor::new("f", filtered)]).unwrap();
    let f = db.cf_handle("f").unwrap();
    for k in ["rm1", "ch1", "keep"] {
        db.put(k, "v").unwrap();
        db.put_cf(&f, k, "v").unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.compact_range_cf(&f, None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get("rm1").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get("ch1").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get_cf(&f, "rm1").unwrap(), None);
    assert_eq!(db.get_cf(&f, "ch1").unwrap(), Some(b"changed".to_vec()));
    assert_eq!(db.get_cf(&f, "keep").unwrap(), Some(b"v".to_vec()));
    let text = newest_options(&fs);
    let section = |name: &str| -> Vec<String> {
        let head = format!("[CFOptions \"{name}\"]");
        let start = text.find(&head).unwrap() + head.len();
        let rest = &text[start..];
        let end = rest.find("\n[").unwrap_or(rest.len());
        rest[..end].lines().map(|l| l.trim().to_string()).collect()
    };
    assert!(
        section("f").contains(&"compaction_filter=PrefixFilter".to_string()),
        "{text}"
    );
    assert!(
        section("f").contains(&"compaction_filter_factory=nullptr".to_string()),
        "{text}"
    );
    assert!(
        section("default").contains(&"compaction_filter=nullptr".to_string()),
        "{text}"
    );
}

struct Recorder {
    contexts: Arc<Mutex<Vec<CompactionFilterContext>>>,
}

struct DropAll;

impl CompactionFilter for DropAll {
    fn filter(&mut self, _level: u32, _key: &[u8], _value: &[u8]) -> Decision {
        Decision::Remove
    }
    fn name(&self) -> &str {
        "DropAll"
    }
}

impl CompactionFilterFactory for Recorder {
    type Filter = DropAll;
    fn create(&mut self, context: CompactionFilterContext) -> DropAll {
        self.contexts.lock().unwrap().push(context);
        DropAll
    }
    fn name(&self) -> &str {
        "RecorderFactory"
    }
}

#[test]
fn a_factory_is_told_manual_and_full() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    let contexts: Arc<Mutex<Vec<CompactionFilterContext>>> = Arc::default();
    o.set_compaction_filter_factory(Recorder {
        contexts: contexts.clone(),
    });
    o.set_level_zero_file_num_compaction_trigger(2);
    let db = DB::open(&o, "/db").unwrap();
    assert!(newest_options(&fs).contains("compaction_filter_factory=RecorderFactory"));
    // Automatic: two L0 files, nothing else: a full, automatic compaction.
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    db.put("b", "1").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    let auto = CompactionFilterContext {
        is_full_compaction: true,
        is_manual_compaction: false,
    };
    assert_eq!(*contexts.lock().unwrap(), vec![auto]);
    assert_eq!(db.get("a").unwrap(), None);
    contexts.lock().unwrap().clear();
    // Manual over everything: full. Keep one file at the bottom ("m") outside the next range.
    db.put("m", "1").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let got = contexts.lock().unwrap().clone();
    assert!(!got.is_empty());
    assert!(got.iter().all(|c| c.is_manual_compaction), "{got:?}");
    assert!(got.iter().all(|c| c.is_full_compaction), "{got:?}");
}

#[test]
fn a_partial_manual_compaction_is_not_full() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    let contexts: Arc<Mutex<Vec<CompactionFilterContext>>> = Arc::default();
    o.set_compaction_filter_factory(Recorder {
        contexts: contexts.clone(),
    });
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, "/db").unwrap();
    db.put("a", "1").unwrap();
    let snap = db.snapshot(); // keeps "a" from being removed
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    drop(snap);
    contexts.lock().unwrap().clear();
    db.put("z", "1").unwrap();
    db.flush().unwrap();
    db.compact_range(Some(b"z".as_ref()), Some(b"z".as_ref())).unwrap();
    let got = contexts.lock().unwrap().clone();
    assert!(!got.is_empty());
    assert!(
        got.iter().all(|c| c.is_manual_compaction && !c.is_full_compaction),
        "{got:?}"
    );
    assert_eq!(db.get("z").unwrap(), None);
}

#[test]
fn a_panicking_filter_is_an_error() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_compaction_filter("boom", |_, k: &[u8], _: &[u8]| {
        if k == b"bad" {
            panic!("filter exploded");
        }
        Decision::Keep
    });
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, "/db").unwrap();
    db.put("bad", "v").unwrap();
    db.put("ok", "v").unwrap();
    db.flush().unwrap();
    let e = db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap_err();
    assert!(e.is_panic() && e.to_string().contains("filter exploded"), "{e}");
    assert_eq!(db.get("bad").unwrap(), Some(b"v".to_vec()));
}

type View = BTreeMap<Vec<u8>, Vec<u8>>;

/// The filter of the model: deterministic in the value, idempotent.
fn model_filter(_level: u32, _key: &[u8], value: &[u8]) -> Decision {
    match value.last() {
        Some(b'0') => Decision::Remove,
        Some(b'1') => Decision::Change(b"rewritten"),
        _ => Decision::Keep,
    }
}

/// Writes, deletes, snapshots and manual compactions against a model where the filter runs on
/// each key whose newest write is newer than every live snapshot, at each compaction.
#[test]
fn model_with_filter_applied_at_compaction() {
    for seed in 0..4u64 {
        let fs = MemFs::new();
        let mut o = mem_opts(&fs);
        o.set_compaction_filter("model", model_filter);
        o.set_disable_auto_compactions(true);
        o.set_write_buffer_size(4 << 10);
        let db = DB::open(&o, "/db").unwrap();
        let mut rng = Rng::new(seed);
        // key -> (value, write number)
        let mut model: BTreeMap<Vec<u8>, (Vec<u8>, u64)> = BTreeMap::new();
        // (snapshot, op number when taken, what it saw)
        let mut snaps: Vec<(shale::Snapshot, u64, View)> = Vec::new();
        let mut n = 0u64;
        for _ in 0..600 {
            n += 1;
            let key = format!("k{:02}", rng.below(40)).into_bytes();
            match rng.below(20) {
                0..=10 => {
                    let v = format!("v{}", rng.below(1000)).into_bytes();
                    db.put(&key, &v).unwrap();
                    model.insert(key, (v, n));
                }
                11..=13 => {
                    db.delete(&key).unwrap();
                    model.remove(&key);
                }
                14 => db.flush().unwrap(),
                15 => {
                    let view = model.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect();
                    snaps.push((db.snapshot(), n, view));
                }
                16 if !snaps.is_empty() => {
                    let i = rng.below(snaps.len() as u64) as usize;
                    snaps.remove(i);
                }
                17 => {
                    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
                    let newest_snap = snaps.iter().map(|s| s.1).max().unwrap_or(0);
                    let mut next = BTreeMap::new();
                    for (k, (v, w)) in std::mem::take(&mut model) {
                        if w <= newest_snap {
                            next.insert(k, (v, w));
                            continue;
                        }
                        match model_filter(0, &k, &v) {
                            Decision::Keep => {
                                next.insert(k, (v, w));
                            }
                            Decision::Change(nv) => {
                                next.insert(k, (nv.to_vec(), w));
                            }
                            Decision::Remove => {}
                        }
                    }
                    model = next;
                }
                _ => {
                    let got = db.get(&key).unwrap();
                    assert_eq!(got, model.get(&key).map(|x| x.0.clone()), "seed {seed} key {key:?}");
                }
            }
        }
        let all: Vec<(Vec<u8>, Vec<u8>)> = db
            .iterator(shale::IteratorMode::Start)
            .map(|x| {
                let (k, v) = x.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect();
        assert_eq!(all, want, "seed {seed}");
        for (s, _, view) in &snaps {
            for (k, v) in view {
                assert_eq!(s.get(k).unwrap().as_ref(), Some(v), "seed {seed}: snapshot changed");
            }
        }
    }
}

/// `CompactionDecision` is the enum itself at the root, so its variants can be imported and
/// matched on, and a `Change` takes a byte-string literal as the `rocksdb` crate's does.
#[test]
fn compaction_decision_variants_import_and_match() {
    use shale::CompactionDecision::{self, *};
    fn by_first_byte(_level: u32, key: &[u8], _value: &[u8]) -> CompactionDecision {
        match key.first() {
            Some(&b'_') => Remove,
            Some(&b'%') => Change(b"hidden"),
            _ => Keep,
        }
    }
    assert!(matches!(by_first_byte(0, b"%a", b""), Change(v) if v == b"hidden"));
    assert_eq!(by_first_byte(0, b"_a", b""), Remove);

    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_compaction_filter("by_first_byte", by_first_byte);
    let db = DB::open(&o, "/db").unwrap();
    for k in ["plain", "_gone", "%secret"] {
        db.put(k, "v").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get("plain").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get("_gone").unwrap(), None);
    assert_eq!(db.get("%secret").unwrap(), Some(b"hidden".to_vec()));
}
