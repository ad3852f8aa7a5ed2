//! Merge operators: read-modify-write done lazily by the engine (RocksDB's `MergeOperator`).
//!
//! A merge operand is written with [`DB::merge`](crate::DB::merge); reads, iterators, flush and
//! compaction combine the operands of a key with its base value (a Put, or nothing after a
//! deletion) through the configured operator. Two of RocksDB's built-ins are shipped under
//! RocksDB's names, so SST properties (`rocksdb.merge.operator`) and tools agree:
//! [`UInt64AddOperator`] (`uint64add`) and [`StringAppendOperator`] (`stringappend`).

use std::sync::Arc;

/// A merge operator. `operands` are always oldest first (as RocksDB's `operand_list`).
pub trait MergeOperator: Send + Sync {
    /// The name recorded in SST properties (`rocksdb.merge.operator`), RocksDB's `Name()`.
    fn name(&self) -> &str;
    /// Combine `existing` (None: no value, or deleted) with `operands`. None = corruption: the
    /// read fails.
    fn full_merge(&self, key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>>;
    /// Combine several operands into one (used by compaction when no base value is at hand).
    /// None = cannot (the operands are kept as they are).
    fn partial_merge(&self, _key: &[u8], _operands: &[&[u8]]) -> Option<Vec<u8>> {
        None
    }
}

/// The simple form of a merge operator whose operation is associative (RocksDB's
/// `AssociativeMergeOperator`): `merge(key, existing, value)` folds one operand at a time, and
/// the same function serves as the partial merge. Wrap it in [`Associative`] to use it.
pub trait AssociativeMergeOperator: Send + Sync {
    /// The name recorded in SST properties, as [`MergeOperator::name`].
    fn name(&self) -> &str;
    /// Combine `existing` (None if absent) with one operand. None = corruption.
    fn merge(&self, key: &[u8], existing: Option<&[u8]>, value: &[u8]) -> Option<Vec<u8>>;
}

/// Adapts an [`AssociativeMergeOperator`] to a [`MergeOperator`].
pub struct Associative<T>(pub T);

impl<T: AssociativeMergeOperator> MergeOperator for Associative<T> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn full_merge(&self, key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let mut acc: Option<Vec<u8>> = existing.map(|e| e.to_vec());
        for op in operands {
            acc = Some(self.0.merge(key, acc.as_deref(), op)?);
        }
        acc.or_else(|| Some(Vec::new()))
    }
    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let (first, rest) = operands.split_first()?;
        let mut acc = first.to_vec();
        for op in rest {
            acc = self.0.merge(key, Some(&acc), op)?;
        }
        Some(acc)
    }
}

/// RocksDB's `UInt64AddOperator` (nickname `uint64add`): values are fixed64 little-endian
/// counters; a value of the wrong size counts as 0, as in RocksDB.
#[derive(Debug, Clone, Copy, Default)]
pub struct UInt64AddOperator;

fn decode_u64(v: &[u8]) -> u64 {
    match <[u8; 8]>::try_from(v) {
        Ok(b) => u64::from_le_bytes(b),
        Err(_) => 0,
    }
}

impl AssociativeMergeOperator for UInt64AddOperator {
    fn name(&self) -> &str {
        "UInt64AddOperator"
    }
    fn merge(&self, _key: &[u8], existing: Option<&[u8]>, value: &[u8]) -> Option<Vec<u8>> {
        let orig = existing.map(decode_u64).unwrap_or(0);
        Some(orig.wrapping_add(decode_u64(value)).to_le_bytes().to_vec())
    }
}

/// RocksDB's `StringAppendOperator` (nickname `stringappend`): appends operands to the value
/// with a delimiter (default `,`).
#[derive(Debug, Clone)]
pub struct StringAppendOperator {
    /// The bytes put between the existing value and each appended operand.
    pub delimiter: Vec<u8>,
}

impl Default for StringAppendOperator {
    fn default() -> Self {
        StringAppendOperator {
            delimiter: b",".to_vec(),
        }
    }
}

impl StringAppendOperator {
    /// An operator joining operands with `delimiter`.
    pub fn new(delimiter: impl AsRef<[u8]>) -> Self {
        StringAppendOperator {
            delimiter: delimiter.as_ref().to_vec(),
        }
    }
}

impl AssociativeMergeOperator for StringAppendOperator {
    fn name(&self) -> &str {
        "StringAppendOperator"
    }
    fn merge(&self, _key: &[u8], existing: Option<&[u8]>, value: &[u8]) -> Option<Vec<u8>> {
        Some(match existing {
            None => value.to_vec(),
            Some(e) => {
                let mut v = Vec::with_capacity(e.len() + self.delimiter.len() + value.len());
                v.extend_from_slice(e);
                v.extend_from_slice(&self.delimiter);
                v.extend_from_slice(value);
                v
            }
        })
    }
}

/// A built-in operator by RocksDB's nickname or class name (`uint64add`/`UInt64AddOperator`,
/// `stringappend`/`StringAppendOperator` with delimiter `,`), or None.
pub fn merge_operator_by_name(name: &str) -> Option<Arc<dyn MergeOperator>> {
    match name {
        "uint64add" | "UInt64AddOperator" => Some(Arc::new(Associative(UInt64AddOperator))),
        "stringappend" | "StringAppendOperator" => Some(Arc::new(Associative(StringAppendOperator::default()))),
        _ => None,
    }
}

/// The operands of one merge, oldest first (the `rocksdb` crate's `MergeOperands`).
pub struct MergeOperands<'a> {
    pub(crate) ops: &'a [&'a [u8]],
}

impl<'a> MergeOperands<'a> {
    /// The number of operands.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    /// True if there are no operands.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    /// The operands, oldest first.
    pub fn iter(&self) -> MergeOperandsIter<'a> {
        MergeOperandsIter { ops: self.ops.iter() }
    }
}

impl<'a> IntoIterator for &MergeOperands<'a> {
    type Item = &'a [u8];
    type IntoIter = MergeOperandsIter<'a>;
    fn into_iter(self) -> MergeOperandsIter<'a> {
        self.iter()
    }
}

/// Iterator over [`MergeOperands`].
pub struct MergeOperandsIter<'a> {
    ops: std::slice::Iter<'a, &'a [u8]>,
}

impl<'a> Iterator for MergeOperandsIter<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        self.ops.next().copied()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ops.size_hint()
    }
}

/// A merge function as the `rocksdb` crate's `Options::set_merge_operator` takes it:
/// `(key, existing value, operands oldest first) -> new value`, `None` failing the merge
/// (reads and compactions then return a Corruption error, as RocksDB does). Implemented for
/// every such closure.
pub trait MergeFn: Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync + 'static {}

impl<F> MergeFn for F where F: Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync + 'static {}

/// Full merge with operands given newest first (as the engine collects them).
pub(crate) fn full_merge_newest_first(
    op: &dyn MergeOperator,
    key: &[u8],
    base: Option<&[u8]>,
    newest_first: &[Vec<u8>],
) -> crate::error::Result<Vec<u8>> {
    let ops: Vec<&[u8]> = newest_first.iter().rev().map(|v| v.as_slice()).collect();
    op.full_merge(key, base, &ops)
        .ok_or_else(|| crate::error::Error::corrupt(format!("Merge operator failed (operator {})", op.name())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint64add() {
        let op = merge_operator_by_name("uint64add").unwrap();
        assert_eq!(op.name(), "UInt64AddOperator");
        let one = 1u64.to_le_bytes();
        let five = 5u64.to_le_bytes();
        let r = op.full_merge(b"k", Some(&five), &[&one, &one]).unwrap();
        assert_eq!(r, 7u64.to_le_bytes());
        assert_eq!(op.full_merge(b"k", None, &[&one]).unwrap(), 1u64.to_le_bytes());
        assert_eq!(op.partial_merge(b"k", &[&one, &five]).unwrap(), 6u64.to_le_bytes());
        // a malformed value counts as zero
        assert_eq!(op.full_merge(b"k", Some(b"xyz"), &[&one]).unwrap(), 1u64.to_le_bytes());
    }

    #[test]
    fn stringappend() {
        let op = merge_operator_by_name("stringappend").unwrap();
        assert_eq!(op.name(), "StringAppendOperator");
        assert_eq!(op.full_merge(b"k", None, &[b"a", b"b"]).unwrap(), b"a,b");
        assert_eq!(op.full_merge(b"k", Some(b"x"), &[b"a"]).unwrap(), b"x,a");
        assert_eq!(op.partial_merge(b"k", &[b"a", b"b", b"c"]).unwrap(), b"a,b,c");
        let op = Associative(StringAppendOperator::new("--"));
        assert_eq!(op.full_merge(b"k", Some(b"x"), &[b"a"]).unwrap(), b"x--a");
    }
}
