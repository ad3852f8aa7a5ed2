//! Secondary instances: `open_as_secondary`, `open_cf_as_secondary`,
//! `try_catch_up_with_primary` (the engine side is `engine/secondary.rs`).

use std::path::Path;

use super::db::DB;
use crate::engine::column_family::ColumnFamilyDescriptor;
use crate::engine::secondary;
use crate::error::Result;
use crate::options::Options;

impl DB {
    /// Open the database at `primary_path`, which another process (the primary) may be
    /// writing, as a secondary instance: a read-only view that takes no lock and keeps its own
    /// files (its LOG) in `secondary_path`, created if missing. The view is the primary's state
    /// at the open (its MANIFEST and WALs); [`try_catch_up_with_primary`](Self::try_catch_up_with_primary)
    /// moves it forward. Writes, flushes and compactions give NotSupported. As RocksDB's
    /// `DB::OpenAsSecondary`; with `max_open_files = -1` (the default) every table is opened at
    /// once, so tables the primary deletes later stay readable.
    pub fn open_as_secondary(
        opts: &Options,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
    ) -> Result<DB> {
        secondary::open(opts, primary_path.as_ref(), secondary_path.as_ref(), &[]).map(|inner| DB { inner })
    }

    /// [`open_as_secondary`](Self::open_as_secondary) with the families named `cfs` (a subset
    /// of the primary's; `default` is always opened), each with `opts`.
    pub fn open_cf_as_secondary<N: AsRef<str>, I: IntoIterator<Item = N>>(
        opts: &Options,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        cfs: I,
    ) -> Result<DB> {
        let descs: Vec<ColumnFamilyDescriptor> = cfs
            .into_iter()
            .map(|n| ColumnFamilyDescriptor::new(n.as_ref(), opts.clone()))
            .collect();
        secondary::open(opts, primary_path.as_ref(), secondary_path.as_ref(), &descs).map(|inner| DB { inner })
    }

    /// [`open_cf_as_secondary`](Self::open_cf_as_secondary) with each family's own options.
    pub fn open_cf_descriptors_as_secondary<I: IntoIterator<Item = ColumnFamilyDescriptor>>(
        opts: &Options,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        cfs: I,
    ) -> Result<DB> {
        let descs: Vec<ColumnFamilyDescriptor> = cfs.into_iter().collect();
        secondary::open(opts, primary_path.as_ref(), secondary_path.as_ref(), &descs).map(|inner| DB { inner })
    }

    /// Bring a secondary instance up to date with its primary: what the primary's MANIFEST
    /// and live WALs gained since the last catch-up is read (a new MANIFEST, after a switch,
    /// from its start; a record the primary is still appending is left for the next
    /// catch-up), only tables new to the version are opened, and reads started afterwards see
    /// the primary's state as of then, including writes still only in its WAL.
    /// Reads, iterators and snapshots taken before keep their view. NotSupported on a DB not
    /// opened as a secondary; Busy if the primary's MANIFEST kept changing under every one of
    /// several attempts; NotSupported if the primary dropped one of the open families.
    pub fn try_catch_up_with_primary(&self) -> Result<()> {
        secondary::catch_up(&self.inner)
    }
}
