//! Compaction policy, as pure functions of a version: level targets and scores, the leveled,
//! universal and FIFO pickers, and where compaction outputs are cut. No I/O, no running DB:
//! each is tested with made-up versions.

pub(crate) mod fifo;
pub(crate) mod level_targets;
pub(crate) mod output_cut;
pub(crate) mod picker;
pub(crate) mod universal;
