//! The `shale` Python module: Shale in rocksdict's style (`Rdict`, `Options`, `WriteBatch`,
//! `Snapshot`, `RdictIter`, ...).
//!
//! Keys and values are `bytes` in raw mode; otherwise any Python object, encoded as rocksdict
//! encodes them (a type byte, then the bytes of a `bytes`, `str`, `int`, `float` or `bool`, or a
//! pickle of anything else; see `encoding`). The GIL is released around every call into the engine
//! that may do I/O.
//!
//! One file a concern: `rdict` (the database), `options`, `write_batch`, `column_family`,
//! `iterators`, `snapshot`, `checkpoint`, `external_files` (table files to ingest), `styles`
//! (compaction styles), `prefix` (prefix extractors); beneath them `encoding` (keys and values),
//! `errors` (the exception classes), `handle` (the open database they share) and `locks`.

mod block_based;
mod checkpoint;
mod column_family;
mod comparator;
mod db_options;
mod encoding;
mod enums;
mod errors;
mod external_files;
mod handle;
mod iterators;
mod locks;
mod maintenance;
mod options;
mod prefix;
mod rdict;
mod snapshot;
mod styles;
mod tables;
mod write_batch;

use pyo3::prelude::*;

use checkpoint::Checkpoint;
use column_family::ColumnFamily;
use external_files::{IngestExternalFileOptions, SstFileWriter};
use iterators::{RdictColumns, RdictEntities, RdictItems, RdictIter, RdictKeys, RdictValues, RdictView};
use options::{DBCompressionType, Options, ReadOptions, WriteOptions};
use rdict::{AccessType, Rdict};
use snapshot::Snapshot;
use write_batch::WriteBatch;

#[pymodule]
#[pyo3(name = "shale")]
fn shale_py(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Rdict>()?;
    m.add_class::<RdictIter>()?;
    m.add_class::<RdictView>()?;
    m.add_class::<RdictKeys>()?;
    m.add_class::<RdictValues>()?;
    m.add_class::<RdictItems>()?;
    m.add_class::<RdictColumns>()?;
    m.add_class::<RdictEntities>()?;
    m.add_class::<Options>()?;
    m.add_class::<ReadOptions>()?;
    m.add_class::<WriteOptions>()?;
    m.add_class::<WriteBatch>()?;
    m.add_class::<Snapshot>()?;
    m.add_class::<DBCompressionType>()?;
    m.add_class::<ColumnFamily>()?;
    m.add_class::<AccessType>()?;
    m.add_class::<SstFileWriter>()?;
    m.add_class::<IngestExternalFileOptions>()?;
    m.add_class::<Checkpoint>()?;
    styles::register(m)?;
    prefix::register(m)?;
    tables::register(m)?;
    block_based::register(m)?;
    db_options::register(m)?;
    maintenance::register(m)?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
