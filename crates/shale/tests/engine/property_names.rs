//! The `properties` module's names read the values RocksDB gives them, whichever argument type
//! carries the name (constant, owned name, `&str`, `&String`, `&CStr`).

use crate::common::{dir, mem_opts};

use shale::fs::testing::MemFs;
use shale::{properties, Options, DB};

fn mem_db() -> DB {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_disable_auto_compactions(true);
    DB::open(&o, dir()).unwrap()
}

#[test]
fn every_name_type_reads_the_same_property() {
    let db = mem_db();
    let by_const = db.property_value(properties::STATS).unwrap().unwrap();
    assert!(by_const.contains("Stats"), "{by_const}");
    let owned = properties::STATS.to_owned();
    assert!(db.property_value(&owned).unwrap().unwrap().contains("Stats"));
    let text: String = owned.into_string();
    assert!(db.property_value(&text).unwrap().unwrap().contains("Stats"));
    assert!(db.property_value(c"rocksdb.stats").unwrap().unwrap().contains("Stats"));
    assert!(db.property_value("rocksdb.stats").unwrap().unwrap().contains("Stats"));
    assert_eq!(db.property_value("rocksdb.no-such-property").unwrap(), None);
    assert!(db.property_value("rocksdb.st\0ats").unwrap_err().is_invalid_argument());
}

#[test]
fn counters_follow_writes_deletes_and_flushes() {
    let db = mem_db();
    assert_eq!(
        db.property_int_value(properties::ESTIMATE_LIVE_DATA_SIZE).unwrap(),
        Some(0)
    );
    assert_eq!(db.property_int_value(properties::ESTIMATE_NUM_KEYS).unwrap(), Some(0));
    for i in 0..10 {
        db.put(format!("k{i}"), "v").unwrap();
    }
    db.delete("k0").unwrap();
    assert_eq!(
        db.property_int_value(properties::NUM_ENTRIES_ACTIVE_MEM_TABLE).unwrap(),
        Some(11)
    );
    assert_eq!(
        db.property_int_value(properties::NUM_DELETES_ACTIVE_MEM_TABLE).unwrap(),
        Some(1)
    );
    assert_eq!(
        db.property_int_value(properties::NUM_ENTRIES_IMM_MEM_TABLES).unwrap(),
        Some(0)
    );
    db.flush().unwrap();
    assert_eq!(
        db.property_int_value(properties::num_files_at_level(0)).unwrap(),
        Some(1)
    );
    assert_eq!(
        db.property_int_value(properties::NUM_DELETES_ACTIVE_MEM_TABLE).unwrap(),
        Some(0)
    );
    let sst = db.property_int_value(properties::LIVE_SST_FILES_SIZE).unwrap().unwrap();
    assert!(sst > 0);
    assert_eq!(
        db.property_int_value(properties::ESTIMATE_LIVE_DATA_SIZE).unwrap(),
        Some(sst)
    );
}

#[test]
fn live_data_size_leaves_out_files_covered_below() {
    let db = mem_db();
    for round in 0..2 {
        for i in 0..20 {
            db.put(format!("k{i:02}"), format!("value {round}")).unwrap();
        }
        db.flush().unwrap();
    }
    // Compact the first into the last level, then write the same keys over it in L0.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let bottom = db.property_int_value(properties::LIVE_SST_FILES_SIZE).unwrap().unwrap();
    for i in 5..10 {
        db.put(format!("k{i:02}"), "newer").unwrap();
    }
    db.flush().unwrap();
    let all = db.property_int_value(properties::LIVE_SST_FILES_SIZE).unwrap().unwrap();
    assert!(all > bottom);
    assert_eq!(
        db.property_int_value(properties::ESTIMATE_LIVE_DATA_SIZE).unwrap(),
        Some(bottom)
    );
}

#[test]
fn family_properties_take_the_same_names() {
    let db = mem_db();
    db.create_cf("cf1", &Options::default()).unwrap();
    let cf = db.cf_handle("cf1").unwrap();
    db.put_cf(&cf, "a", "1").unwrap();
    assert!(db
        .property_value_cf(&cf, properties::STATS)
        .unwrap()
        .unwrap()
        .contains("Stats"));
    assert_eq!(
        db.property_int_value_cf(&cf, properties::ESTIMATE_NUM_KEYS).unwrap(),
        Some(1)
    );
    assert_eq!(db.property_int_value(properties::ESTIMATE_NUM_KEYS).unwrap(), Some(0));
}
