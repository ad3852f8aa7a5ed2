//! Opens table files on demand and bounds how many stay open.
//!
//! With `max_open_files = -1` (the default, as in RocksDB) an opened table is pinned in its
//! `FileMeta` for the file's lifetime, so lookups take no lock. Otherwise tables live in a small
//! LRU map bounded by `max_open_files`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering as AtOrd};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem};
use crate::key::InternalKeyComparator;
use crate::lsm::filename::table_name;
use crate::lsm::version::FileMeta;
use crate::options::Options;
use crate::table::any::{AnyTable, FormatReadOptions};
use crate::table::cache::BlockCache;
use crate::table::reader_options::TableReaderOptions;

pub(crate) struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    icmp: InternalKeyComparator,
    block_cache: Option<Arc<BlockCache>>,
    use_filter: bool,
    paranoid: bool,
    cache_index_and_filter_blocks: bool,
    pin_l0: bool,
    high_priority: bool,
    pin_top_level: bool,
    mmap: bool,
    fopts: FormatReadOptions,
    /// The family's prefix extractor and whole-key switch (what table filters are asked); the
    /// extractor follows `set_options`.
    filter_contents: Mutex<crate::table::block_based::prefix_filter::FilterContents>,
    capacity: Option<usize>,
    lru: Mutex<Lru>,
    /// This open's part of the block cache keys (see [`next_cache_prefix`]).
    cache_prefix: u64,
    stats: crate::statistics::Stats,
}

#[derive(Default)]
struct Lru {
    map: HashMap<u64, (AnyTable, u64)>,
    tick: u64,
}

/// Block cache keys are `(cache_id, offset)` with `cache_id` a table's file number in the low 40
/// bits and, above them, a number of its own for every open of a DB: DBs sharing one block cache
/// (`Cache::new_lru_cache`) never read each other's blocks.
fn next_cache_prefix() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, AtOrd::Relaxed) << 40
}

impl TableCache {
    pub(crate) fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        icmp: InternalKeyComparator,
        block_cache: Option<Arc<BlockCache>>,
        opts: &Options,
    ) -> TableCache {
        let max_open_files = opts.max_open_files;
        let capacity = if max_open_files < 0 {
            None
        } else {
            Some((max_open_files as usize).saturating_sub(10).max(16))
        };
        TableCache {
            dir,
            fs,
            icmp,
            block_cache,
            use_filter: opts.bloom_bits_per_key > 0.0,
            paranoid: opts.paranoid_checks,
            cache_index_and_filter_blocks: opts.cache_index_and_filter_blocks,
            pin_l0: opts.cache_index_and_filter_blocks && opts.pin_l0_filter_and_index_blocks_in_cache,
            high_priority: opts.index_layout.cache_index_and_filter_blocks_with_high_priority,
            pin_top_level: opts.index_layout.pin_top_level_index_and_filter,
            mmap: opts.allow_mmap_reads,
            filter_contents: Mutex::new(opts.filter_contents()),
            fopts: FormatReadOptions {
                plain: match &opts.table_factory {
                    crate::options::TableFactory::Plain(p) => p.clone(),
                    _ => Default::default(),
                },
                prefix_extractor: opts.prefix_extractor.clone(),
            },
            capacity,
            lru: Mutex::new(Lru::default()),
            cache_prefix: next_cache_prefix(),
            stats: opts.statistics.clone(),
        }
    }

    /// Tables opened from now on are read with `p` (`set_options`); tables already open keep
    /// the extractor they were opened with, and each prefix probe checks the extractor's name.
    pub(crate) fn set_prefix_extractor(&self, p: Option<Arc<dyn crate::slice_transform::PrefixExtractor>>) {
        self.filter_contents.lock().prefix_extractor = p;
    }

    pub(crate) fn open_table(
        &self,
        number: u64,
        expected_size: u64,
        level0: bool,
        largest_seqno: u64,
    ) -> Result<AnyTable> {
        let path = table_name(&self.dir, number);
        let opened = if self.mmap {
            self.fs.open_random_mmap(&path)
        } else {
            self.fs.open_random(&path)
        };
        let file = opened.map_err(|e| match e {
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
        let timer = crate::perf_context::PerfTimer::start();
        let t = AnyTable::open(
            file,
            name_of(&path),
            size,
            TableReaderOptions {
                icmp: self.icmp.clone(),
                block_cache: self.block_cache.clone(),
                cache_id: self.cache_prefix | number,
                use_filter: self.use_filter,
                verify_checksums: self.paranoid,
                cache_index_and_filter_blocks: self.cache_index_and_filter_blocks,
                pin_index_and_filter_in_cache: self.pin_l0 && level0,
                cache_index_and_filter_blocks_with_high_priority: self.high_priority,
                pin_top_level_index_and_filter: self.pin_top_level,
                largest_seqno: Some(largest_seqno),
                stats: self.stats.clone(),
                filter_contents: self.filter_contents.lock().clone(),
            },
            &self.fopts,
        );
        timer.stop(crate::perf_context::field::FIND_TABLE_NANOS);
        crate::statistics::tick(
            &self.stats,
            if t.is_ok() {
                crate::statistics::Ticker::NoFileOpens
            } else {
                crate::statistics::Ticker::NoFileErrors
            },
            1,
        );
        t
    }

    /// The table of a live file, opening it if needed.
    pub(crate) fn get(&self, f: &FileMeta) -> Result<AnyTable> {
        let cap = match self.capacity {
            None => {
                if let Some(t) = f.table().get() {
                    return Ok(t.clone());
                }
                let t = self.open_table(f.number(), f.meta.file_size, f.level0, f.meta.largest_seqno)?;
                let _ = f.table().set(t.clone());
                return Ok(f.table().get().cloned().unwrap_or(t));
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
        let t = self.open_table(f.number(), f.meta.file_size, f.level0, f.meta.largest_seqno)?;
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

    /// The table of a live file if it is open (does not open it).
    pub(crate) fn peek(&self, f: &FileMeta) -> Option<AnyTable> {
        match self.capacity {
            None => f.table().get().cloned(),
            Some(_) => self.lru.lock().map.get(&f.number()).map(|e| e.0.clone()),
        }
    }

    pub(crate) fn evict(&self, number: u64) {
        self.lru.lock().map.remove(&number);
    }
}
