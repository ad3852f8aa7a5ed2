//! Opens table files on demand and bounds how many stay open.
//!
//! With `max_open_files = -1` (the default, as in RocksDB) an opened table is pinned in its
//! `FileMeta` for the file's lifetime, so lookups take no lock. Otherwise tables live in a small
//! LRU map bounded by `max_open_files`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use super::filename::table_name;
use super::version::FileMeta;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem};
use crate::key::InternalKeyComparator;
use crate::table::{Table, TableReaderOptions};

pub(crate) struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    icmp: InternalKeyComparator,
    block_cache: Option<Arc<BlockCache>>,
    use_filter: bool,
    paranoid: bool,
    capacity: Option<usize>,
    lru: Mutex<Lru>,
}

#[derive(Default)]
struct Lru {
    map: HashMap<u64, (Arc<Table>, u64)>,
    tick: u64,
}

impl TableCache {
    pub(crate) fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        icmp: InternalKeyComparator,
        block_cache: Option<Arc<BlockCache>>,
        use_filter: bool,
        max_open_files: i32,
        paranoid: bool,
    ) -> TableCache {
        let capacity = if max_open_files < 0 { None } else { Some((max_open_files as usize).saturating_sub(10).max(16)) };
        TableCache { dir, fs, icmp, block_cache, use_filter, paranoid, capacity, lru: Mutex::new(Lru::default()) }
    }

    pub(crate) fn open_table(&self, number: u64, expected_size: u64) -> Result<Arc<Table>> {
        let path = table_name(&self.dir, number);
        let file = self.fs.open_random(&path).map_err(|e| match e {
            Error::Io { file, source } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::corruption(file, None, "table file referenced by the MANIFEST is missing")
            }
            e => e,
        })?;
        let size = file.size();
        if size != expected_size {
            return Err(Error::corruption(
                name_of(&path),
                None,
                format!("table file size is {size} but the MANIFEST records {expected_size}"),
            ));
        }
        let t = Table::open(
            file,
            name_of(&path),
            size,
            TableReaderOptions {
                icmp: self.icmp.clone(),
                block_cache: self.block_cache.clone(),
                cache_id: number,
                use_filter: self.use_filter,
                verify_checksums: self.paranoid,
            },
        )?;
        Ok(t)
    }

    /// The table of a live file, opening it if needed.
    pub(crate) fn get(&self, f: &FileMeta) -> Result<Arc<Table>> {
        let cap = match self.capacity {
            None => {
                if let Some(t) = f.table.get() {
                    return Ok(t.clone());
                }
                let t = self.open_table(f.number(), f.meta.file_size)?;
                let _ = f.table.set(t.clone());
                return Ok(f.table.get().cloned().unwrap_or(t));
            }
            Some(c) => c,
        };
        {
            let mut lru = self.lru.lock();
            lru.tick += 1;
            let tick = lru.tick;
            if let Some(e) = lru.map.get_mut(&f.number()) {
                e.1 = tick;
                return Ok(e.0.clone());
            }
        }
        let t = self.open_table(f.number(), f.meta.file_size)?;
        let mut lru = self.lru.lock();
        lru.tick += 1;
        let tick = lru.tick;
        lru.map.insert(f.number(), (t.clone(), tick));
        if lru.map.len() > cap {
            if let Some((&victim, _)) = lru.map.iter().min_by_key(|(_, (_, t))| *t) {
                lru.map.remove(&victim);
            }
        }
        Ok(t)
    }

    pub(crate) fn evict(&self, number: u64) {
        self.lru.lock().map.remove(&number);
    }

    pub(crate) fn open_count(&self) -> usize {
        self.lru.lock().map.len()
    }
}
