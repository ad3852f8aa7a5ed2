//! `Options::load_latest` (the `rocksdb` crate's call, RocksDB's `LoadLatestOptions`): the
//! options and families a database's newest OPTIONS file records, to open it with.

use std::path::Path;

use crate::engine::ColumnFamilyDescriptor;
use crate::env::Env;
use crate::error::Result;
use crate::options::{Options, TableFactory};
use crate::table::cache::Cache;

impl Options {
    /// The DB options and the column families (each with its options) that the newest OPTIONS
    /// file of the database at `path` records, read through `env`'s file system; every
    /// block-based family gets `cache` as its block cache, and every options value gets
    /// `env`. Shale reads the options it has from the file (the table factory and its
    /// options, the comparator, merge operator and prefix extractor when built in, the
    /// compaction style and its options, the DB options listed in `docs/formats.md`) and
    /// leaves the others at their defaults, whatever `ignore_unknown_options` says: RocksDB's
    /// files name many options Shale has no counterpart for. NotFound if there is no OPTIONS
    /// file; Corruption naming the file and offset for a line or value that does not parse.
    pub fn load_latest<P: AsRef<Path>>(
        path: P,
        env: Env,
        ignore_unknown_options: bool,
        cache: Cache,
    ) -> Result<(Options, Vec<ColumnFamilyDescriptor>)> {
        let _ = ignore_unknown_options;
        let (mut db, families) = crate::options::file::load_latest(&env.fs, path.as_ref())?;
        let fit = |o: &mut Options| {
            o.set_env(&env);
            if matches!(o.table_factory, TableFactory::BlockBased) {
                let mut bbo = o.get_block_based_options();
                bbo.set_block_cache(&cache);
                o.set_block_based_table_factory(&bbo);
            }
        };
        fit(&mut db);
        let cfs = families
            .into_iter()
            .map(|(name, mut o)| {
                fit(&mut o);
                ColumnFamilyDescriptor::new(name, o)
            })
            .collect();
        Ok((db, cfs))
    }
}
