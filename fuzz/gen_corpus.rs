//! Writes the seed corpus (`fuzz/corpus/<target>/`) from databases Shale builds on MemFs:
//! tables of each format_version and compression, WAL and MANIFEST files and their records,
//! blocks, and db_model programs. Run: `cargo run --manifest-path fuzz/Cargo.toml --bin gen_corpus`.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{BlockBasedOptions, DBCompressionType, Options, WriteBatch, DB};

fn put(dir: &Path, target: &str, name: &str, data: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(name), data).unwrap();
}

fn main() {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/corpus").into()),
    );
    let comps = [
        DBCompressionType::None,
        DBCompressionType::Snappy,
        DBCompressionType::Lz4,
        DBCompressionType::Zstd,
    ];
    for fv in 2..=6u32 {
        let fs = MemFs::new();
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(fs.clone()));
        let mut table = BlockBasedOptions::default();
        table.set_format_version(fv as i32);
        table.set_block_size(256);
        o.set_block_based_table_factory(&table);
        o.set_compression_type(comps[fv as usize % 4]);
        o.set_custom_merge_operator(shale::merge_operator::merge_operator_by_name("uint64add").unwrap());
        let db = DB::open(&o, "/db").unwrap();
        for i in 0..40u32 {
            db.put(
                format!("key{i:04}"),
                format!("value{i}-{}", "x".repeat((i % 5) as usize * 7)),
            )
            .unwrap();
        }
        db.delete("key0003").unwrap();
        db.delete_range("key0010", "key0014").unwrap();
        db.merge("cnt", 7u64.to_le_bytes()).unwrap();
        db.flush().unwrap();
        let mut b = WriteBatch::new();
        b.put("a", "1");
        b.delete("b");
        b.single_delete("c");
        b.delete_range("d", "e");
        b.merge("cnt", 1u64.to_le_bytes());
        b.put_log_data("blob");
        db.write(b).unwrap();
        drop(db);
        let dir = Path::new("/db");
        for name in fs.list(dir).unwrap() {
            let data = fs.read_all(&dir.join(&name)).unwrap();
            if name.ends_with(".sst") {
                put(&out, "table_reader", &format!("fv{fv}.sst"), &data);
            } else if name.ends_with(".log") && !data.is_empty() {
                for mode in 0..4u8 {
                    let mut d = vec![mode];
                    d.extend_from_slice(&data);
                    put(&out, "wal_replay", &format!("fv{fv}-mode{mode}.log"), &d);
                }
                for (i, rec) in shale::fuzzing::log_records(&data).iter().enumerate() {
                    put(&out, "write_batch", &format!("fv{fv}-{i}.wb"), rec);
                }
            } else if name.starts_with("MANIFEST") {
                put(&out, "manifest_replay", &format!("fv{fv}.manifest"), &data);
                for (i, rec) in shale::fuzzing::log_records(&data).iter().enumerate() {
                    put(&out, "version_edit", &format!("fv{fv}-{i}.edit"), rec);
                }
            }
        }
    }
    // Blocks: internal-key data blocks and bytewise blocks with several restart intervals.
    for ri in [1usize, 4, 16] {
        let mut kvs = Vec::new();
        for i in 0..30u64 {
            let mut k = format!("key{i:04}").into_bytes();
            k.extend_from_slice(&((100 - i) << 8 | 1).to_le_bytes());
            kvs.push((k, format!("v{i}").into_bytes()));
        }
        let mut d = vec![ri as u8];
        d.extend(shale::fuzzing::build_block(&kvs, ri));
        put(&out, "block_decode", &format!("data-ri{ri}"), &d);
    }
    // db_model programs.
    let mut prog = vec![3u8];
    for i in 0..60u8 {
        prog.extend_from_slice(&[i % 10, i.wrapping_mul(7), i.wrapping_mul(13)]);
    }
    put(&out, "db_model", "mixed", &prog);
    put(
        &out,
        "db_model",
        "puts-flush-reopen",
        &[
            1, 0, 1, 5, 0, 2, 6, 6, 0, 0, 8, 0, 0, 9, 1, 0, 4, 0, 9, 7, 0, 60, 9, 2, 0,
        ],
    );
    println!("corpus written to {}", out.display());
}
