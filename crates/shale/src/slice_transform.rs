//! Prefix extractors (RocksDB's `SliceTransform`): map a user key to the prefix that hash-based
//! structures (the PlainTable index and bloom) group keys by.
//!
//! [`SliceTransform`] is the `rocksdb` crate's handle that `Options::set_prefix_extractor` takes:
//! a built-in (`create_fixed_prefix`, `create_capped_prefix`, `create_noop`) or a pair of
//! functions (`create`). Code that needs state implements [`PrefixExtractor`] and wraps it with
//! `SliceTransform::from` an `Arc<dyn PrefixExtractor>`.
//!
//! The built-ins carry RocksDB's names, which are recorded in each table's
//! `rocksdb.prefix.extractor.name` property and checked when the table is opened; an extractor
//! made with `create` records the name it was given.

use std::sync::Arc;

/// Maps a user key to its prefix. Implementations must be deterministic and thread-safe.
///
/// `transform` should return a leading slice of the key. A slice that is not one (a suffix, say)
/// still works as the key's prefix for blooms, prefix seeks and the PlainTable hash index, but
/// the PlainTable's prefix key encoding then shares no bytes between keys.
pub trait PrefixExtractor: Send + Sync {
    /// The name stored in table properties (e.g. `rocksdb.FixedPrefix.8`); tables built with one
    /// extractor are only opened (in prefix mode) with an extractor of the same name.
    fn name(&self) -> &str;
    /// The prefix of `key`. Must return a prefix of `key` (a leading slice) and never panic,
    /// also for keys outside the domain.
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8];
    /// Whether `key` has a meaningful prefix under this transform.
    fn in_domain(&self, key: &[u8]) -> bool;
}

/// A prefix extractor to give `Options::set_prefix_extractor` (the `rocksdb` crate's
/// `SliceTransform`); cheap to clone, as it shares one extractor.
#[derive(Clone)]
pub struct SliceTransform {
    inner: Arc<dyn PrefixExtractor>,
}

/// The transform function of [`SliceTransform::create`]: the prefix of a key, a slice of it.
pub type TransformFn = fn(&[u8]) -> &[u8];
/// The domain function of [`SliceTransform::create`]: whether a key has a prefix at all.
pub type InDomainFn = fn(&[u8]) -> bool;

struct FnTransform {
    name: String,
    transform: TransformFn,
    in_domain: Option<InDomainFn>,
}

impl PrefixExtractor for FnTransform {
    fn name(&self) -> &str {
        &self.name
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        (self.transform)(key)
    }
    fn in_domain(&self, key: &[u8]) -> bool {
        self.in_domain.is_none_or(|f| f(key))
    }
}

impl SliceTransform {
    /// An extractor from functions: `transform_fn` gives a key's prefix, `in_domain_fn` says
    /// which keys have one (all keys when None). `name` is recorded in table properties and the
    /// OPTIONS file; tables written under one name are read in prefix mode only under the same
    /// name. A name that is empty, holds a nul byte or a control character makes `DB::open`
    /// fail with InvalidArgument. A panic in either function fails the operation that called it.
    pub fn create(
        name: impl crate::properties::CStrLike,
        transform_fn: TransformFn,
        in_domain_fn: Option<InDomainFn>,
    ) -> SliceTransform {
        let name = name
            .into_c_string()
            .ok()
            .and_then(|c| c.into_string().ok())
            .unwrap_or_default();
        SliceTransform {
            inner: Arc::new(FnTransform {
                name,
                transform: transform_fn,
                in_domain: in_domain_fn,
            }),
        }
    }

    /// The first `len` bytes of each key (`rocksdb.FixedPrefix.<len>`); shorter keys are out of
    /// the domain.
    pub fn create_fixed_prefix(len: usize) -> SliceTransform {
        SliceTransform::from(new_fixed_prefix_transform(len))
    }

    /// At most the first `len` bytes of each key (`rocksdb.CappedPrefix.<len>`); every key is in
    /// the domain.
    pub fn create_capped_prefix(len: usize) -> SliceTransform {
        SliceTransform::from(new_capped_prefix_transform(len))
    }

    /// The whole key is its prefix (`rocksdb.Noop`).
    pub fn create_noop() -> SliceTransform {
        SliceTransform::from(new_noop_transform())
    }

    /// The extractor this handle shares.
    pub fn extractor(&self) -> &Arc<dyn PrefixExtractor> {
        &self.inner
    }

    /// The name recorded for this extractor.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The shared extractor, for `Options`.
    pub(crate) fn into_extractor(self) -> Arc<dyn PrefixExtractor> {
        self.inner
    }
}

impl From<Arc<dyn PrefixExtractor>> for SliceTransform {
    fn from(inner: Arc<dyn PrefixExtractor>) -> SliceTransform {
        SliceTransform { inner }
    }
}

impl std::fmt::Debug for SliceTransform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SliceTransform({})", self.name())
    }
}

/// Why an extractor's name cannot be recorded in an OPTIONS file or table properties: empty, or
/// holding a control character. None when it can.
pub(crate) fn bad_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty (or was not valid UTF-8 without nul bytes)")
    } else if name.chars().any(char::is_control) {
        Some("holds a control character")
    } else {
        None
    }
}

impl std::fmt::Debug for dyn PrefixExtractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrefixExtractor({})", self.name())
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

impl PrefixExtractor for FixedPrefixTransform {
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

impl PrefixExtractor for CappedPrefixTransform {
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

impl PrefixExtractor for NoopTransform {
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
pub fn new_fixed_prefix_transform(len: usize) -> Arc<dyn PrefixExtractor> {
    Arc::new(FixedPrefixTransform::new(len))
}

/// RocksDB's `NewCappedPrefixTransform(cap)`.
pub fn new_capped_prefix_transform(cap: usize) -> Arc<dyn PrefixExtractor> {
    Arc::new(CappedPrefixTransform::new(cap))
}

/// RocksDB's `NewNoopTransform()`.
pub fn new_noop_transform() -> Arc<dyn PrefixExtractor> {
    Arc::new(NoopTransform)
}

/// A built-in extractor from the name RocksDB records for it (`rocksdb.FixedPrefix.<n>`,
/// `rocksdb.CappedPrefix.<n>`, `rocksdb.Noop`), as in the `rocksdb.prefix.extractor.name` table
/// property or an OPTIONS file; None for any other name (and for `nullptr` or an empty one).
pub fn slice_transform_from_name(name: &str) -> Option<Arc<dyn PrefixExtractor>> {
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
    fn function_extractors_keep_their_name_and_functions() {
        fn first_two(k: &[u8]) -> &[u8] {
            &k[..k.len().min(2)]
        }
        fn long_enough(k: &[u8]) -> bool {
            k.len() >= 2
        }
        let t = SliceTransform::create("first_two", first_two, Some(long_enough));
        assert_eq!(t.name(), "first_two");
        assert_eq!(t.extractor().transform(b"abc"), b"ab");
        assert!(t.extractor().in_domain(b"ab"));
        assert!(!t.extractor().in_domain(b"a"));
        let all = SliceTransform::create(c"all", first_two, None);
        assert!(all.extractor().in_domain(b""));
        assert_eq!(all.name(), "all");
        // A name that cannot be a C string is empty, and refused at open.
        let bad = SliceTransform::create("a\0b", first_two, None);
        assert_eq!(bad.name(), "");
        assert!(bad_name(bad.name()).is_some());
        assert!(bad_name("x\ny").is_some());
        assert!(bad_name("test slice transform").is_none());
    }

    #[test]
    fn builtin_handles_carry_rocksdb_names() {
        assert_eq!(SliceTransform::create_fixed_prefix(3).name(), "rocksdb.FixedPrefix.3");
        assert_eq!(SliceTransform::create_capped_prefix(5).name(), "rocksdb.CappedPrefix.5");
        assert_eq!(SliceTransform::create_noop().name(), "rocksdb.Noop");
        assert_eq!(
            format!("{:?}", SliceTransform::create_noop()),
            "SliceTransform(rocksdb.Noop)"
        );
    }

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
