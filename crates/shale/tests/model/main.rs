//! The randomized model tests: a Shale database driven by random operations and checked after
//! each step against a `BTreeMap` model (one test binary; each former `tests/<name>.rs` is a
//! module here). Run one group with e.g. `cargo test -p shale --test model model_cf::`.

mod model_common;

mod model;
mod model_cf;
mod model_ext;
mod model_ingest;
mod uint64_comparator;
