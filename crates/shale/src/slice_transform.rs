//! Prefix extractors (RocksDB's `SliceTransform`): map a user key to the prefix that hash-based
//! structures (the PlainTable index and bloom) group keys by.
//!
//! The built-ins carry RocksDB's names, which are recorded in each table's
//! `rocksdb.prefix.extractor.name` property and checked when the table is opened.

use std::sync::Arc;

/// Maps a user key to its prefix. Implementations must be deterministic and thread-safe.
pub trait SliceTransform: Send + Sync {
    /// The name stored in table properties (e.g. `rocksdb.FixedPrefix.8`); tables built with one
    /// extractor are only opened (in prefix mode) with an extractor of the same name.
    fn name(&self) -> &str;
    /// The prefix of `key`. Must return a prefix of `key` (a leading slice) and never panic,
    /// also for keys outside the domain.
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8];
    /// Whether `key` has a meaningful prefix under this transform.
    fn in_domain(&self, key: &[u8]) -> bool;
}

impl std::fmt::Debug for dyn SliceTransform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SliceTransform({})", self.name())
    }
}

/// The first `len` bytes of a key (`rocksdb.FixedPrefix.<len>`). Keys shorter than `len` are out
/// of the domain; their "prefix" is the whole key, so nothing panics on them.
#[derive(Debug, Clone)]
pub struct FixedPrefixTransform {
    len: usize,
    name: String,
}

impl FixedPrefixTransform {
    /// The transform keeping the first `len` bytes of keys.
    pub fn new(len: usize) -> FixedPrefixTransform {
        FixedPrefixTransform {
            len,
            name: format!("rocksdb.FixedPrefix.{len}"),
        }
    }
}

impl SliceTransform for FixedPrefixTransform {
    fn name(&self) -> &str {
        &self.name
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        &key[..self.len.min(key.len())]
    }
    fn in_domain(&self, key: &[u8]) -> bool {
        key.len() >= self.len
    }
}

/// At most the first `cap` bytes of a key (`rocksdb.CappedPrefix.<cap>`); every key is in the
/// domain.
#[derive(Debug, Clone)]
pub struct CappedPrefixTransform {
    cap: usize,
    name: String,
}

impl CappedPrefixTransform {
    /// The transform keeping at most the first `cap` bytes of keys.
    pub fn new(cap: usize) -> CappedPrefixTransform {
        CappedPrefixTransform {
            cap,
            name: format!("rocksdb.CappedPrefix.{cap}"),
        }
    }
}

impl SliceTransform for CappedPrefixTransform {
    fn name(&self) -> &str {
        &self.name
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        &key[..self.cap.min(key.len())]
    }
    fn in_domain(&self, _key: &[u8]) -> bool {
        true
    }
}

/// The whole key is the prefix (`rocksdb.Noop`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopTransform;

impl SliceTransform for NoopTransform {
    fn name(&self) -> &str {
        "rocksdb.Noop"
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        key
    }
    fn in_domain(&self, _key: &[u8]) -> bool {
        true
    }
}

/// RocksDB's `NewFixedPrefixTransform(len)`.
pub fn new_fixed_prefix_transform(len: usize) -> Arc<dyn SliceTransform> {
    Arc::new(FixedPrefixTransform::new(len))
}

/// RocksDB's `NewCappedPrefixTransform(cap)`.
pub fn new_capped_prefix_transform(cap: usize) -> Arc<dyn SliceTransform> {
    Arc::new(CappedPrefixTransform::new(cap))
}

/// RocksDB's `NewNoopTransform()`.
pub fn new_noop_transform() -> Arc<dyn SliceTransform> {
    Arc::new(NoopTransform)
}

/// A built-in extractor from the name RocksDB records for it (`rocksdb.FixedPrefix.<n>`,
/// `rocksdb.CappedPrefix.<n>`, `rocksdb.Noop`), as in the `rocksdb.prefix.extractor.name` table
/// property or an OPTIONS file; None for any other name (and for `nullptr` or an empty one).
pub fn slice_transform_from_name(name: &str) -> Option<Arc<dyn SliceTransform>> {
    let num = |s: &str| -> Option<usize> {
        if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if name == "rocksdb.Noop" {
        return Some(new_noop_transform());
    }
    if let Some(n) = name.strip_prefix("rocksdb.FixedPrefix.") {
        return num(n).map(new_fixed_prefix_transform);
    }
    if let Some(n) = name.strip_prefix("rocksdb.CappedPrefix.") {
        return num(n).map(new_capped_prefix_transform);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transforms_by_name() {
        for n in ["rocksdb.FixedPrefix.8", "rocksdb.CappedPrefix.3", "rocksdb.Noop"] {
            assert_eq!(slice_transform_from_name(n).unwrap().name(), n);
        }
        assert_eq!(
            slice_transform_from_name("rocksdb.FixedPrefix.8")
                .unwrap()
                .transform(b"0123456789"),
            b"01234567"
        );
        for bad in [
            "",
            "nullptr",
            "rocksdb.FixedPrefix.",
            "rocksdb.FixedPrefix.-1",
            "rocksdb.FixedPrefix.99999999999",
            "x",
        ] {
            assert!(slice_transform_from_name(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn builtins_have_rocksdb_names_and_prefixes() {
        let f = FixedPrefixTransform::new(3);
        assert_eq!(f.name(), "rocksdb.FixedPrefix.3");
        assert_eq!(f.transform(b"abcdef"), b"abc");
        assert!(f.in_domain(b"abc"));
        assert!(!f.in_domain(b"ab"));
        // out of domain: whole key, no panic
        assert_eq!(f.transform(b"ab"), b"ab");

        let c = CappedPrefixTransform::new(4);
        assert_eq!(c.name(), "rocksdb.CappedPrefix.4");
        assert_eq!(c.transform(b"abcdef"), b"abcd");
        assert_eq!(c.transform(b"ab"), b"ab");
        assert!(c.in_domain(b""));

        let n = NoopTransform;
        assert_eq!(n.name(), "rocksdb.Noop");
        assert_eq!(n.transform(b"xyz"), b"xyz");
        assert_eq!(new_fixed_prefix_transform(8).name(), "rocksdb.FixedPrefix.8");
        assert_eq!(new_capped_prefix_transform(2).name(), "rocksdb.CappedPrefix.2");
        assert_eq!(new_noop_transform().name(), "rocksdb.Noop");
    }
}
