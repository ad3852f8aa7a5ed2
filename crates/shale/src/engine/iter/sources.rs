//! The internal iterator over everything a `SuperVersion` holds: memtables, L0 files one by
//! one, and one level iterator per deeper level, merged.

use std::sync::Arc;

use super::level::LevelIterator;
use super::merging::MergingIterator;
use super::prefix::{PrefixGate, PrefixSeek, Source};
use crate::engine::column_family::ColumnFamilyData;
use crate::engine::column_family::SuperVersion;
use crate::iterator::InternalIterator;

/// Build the merged internal iterator over a SuperVersion; with `prefix`, the user's seeks
/// skip the sources whose blooms rule the seek key's prefix out (`prefix.rs`).
pub(crate) fn internal_iterator(
    db: &Arc<ColumnFamilyData>,
    sv: &SuperVersion,
    verify: bool,
    fill: bool,
    prefix: Option<&Arc<PrefixSeek>>,
) -> MergingIterator {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for m in std::iter::once(&sv.mem).chain(&sv.imm) {
        match prefix {
            Some(p) if m.bloom().is_some() => {
                children.push(Box::new(PrefixGate::new(m.iter(), Source::Mem(m.clone()), p.clone())))
            }
            _ => children.push(Box::new(m.iter())),
        }
    }
    for f in &sv.version.files[0] {
        match (db.table_cache.get(f), prefix) {
            (Ok(t), Some(p)) => children.push(Box::new(PrefixGate::new(
                t.iter(verify, fill),
                Source::Table(t),
                p.clone(),
            ))),
            (Ok(t), None) => children.push(Box::new(t.iter(verify, fill))),
            (Err(e), _) => children.push(Box::new(crate::iterator::EmptyIterator(Some(e)))),
        }
    }
    for level in 1..sv.version.num_levels() {
        if !sv.version.files[level].is_empty() {
            children.push(Box::new(LevelIterator::new(
                db.clone(),
                sv.version.files[level].clone(),
                verify,
                fill,
                prefix.cloned(),
            )));
        }
    }
    let mut it = MergingIterator::new(db.icmp.clone(), children);
    it.set_memtable_children(1 + sv.imm.len());
    it
}
