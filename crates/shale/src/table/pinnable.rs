//! Values handed out without copying: [`DBPinnableSlice`] (the `rocksdb` crate's type of the
//! same name, RocksDB's `PinnableSlice`) and the crate-internal plumbing that lets one lookup
//! path produce either a copied `Vec<u8>` (`DB::get`) or a pinned slice (`DB::get_pinned`).
//!
//! A point lookup finds its value in one of a few places: a memtable's arena, a block-based
//! table's data block, a plain table's file bytes (often the file's memory mapping) or a cuckoo
//! table's buffer. Each of these is owned by something behind an `Arc`, never moves and is
//! never written again once the value is visible. A pinned slice keeps a clone of that `Arc`
//! next to a pointer to the value, so the bytes stay valid for as long as the slice lives —
//! after the memtable is flushed, the file compacted away and deleted (a mapping outlives the
//! unlink), or the DB dropped. Values without such a home (merge results, blocks read past
//! the cache) are copied into a buffer the slice owns.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::memtable::MemTable;
use crate::table::block::Block;

/// Where a value found by a lookup lives (borrowed from the lookup's sources).
#[derive(Clone, Copy)]
pub(crate) enum Home<'a> {
    /// Nowhere stable: the value is copied if it has to outlive the lookup.
    None,
    Mem(&'a Arc<MemTable>),
    Block(&'a Arc<Block>),
    /// A table file held whole in memory (a plain or cuckoo table).
    Table(&'a dyn TableHome),
}

/// A table that owns the memory its values are read from (plain and cuckoo tables hold their
/// whole file); pinning a value keeps the table alive.
pub(crate) trait TableHome: Send + Sync {
    /// A new reference that keeps the table alive.
    fn keep(&self) -> Arc<dyn Send + Sync>;
}

impl<T: Send + Sync + 'static> TableHome for Arc<T> {
    fn keep(&self) -> Arc<dyn Send + Sync> {
        self.clone()
    }
}

/// A value found by a lookup: its bytes and, when known, the owner that keeps them alive.
#[derive(Clone, Copy)]
pub(crate) struct Val<'a> {
    bytes: &'a [u8],
    home: Home<'a>,
}

impl<'a> Val<'a> {
    /// A value without a stable home (turned into an owned buffer when kept).
    #[inline]
    pub(crate) fn unpinned(bytes: &'a [u8]) -> Val<'a> {
        Val {
            bytes,
            home: Home::None,
        }
    }

    /// A value living inside `home`.
    ///
    /// # Safety
    /// `bytes` must lie in memory owned by the object `home` points to (through its `Arc`),
    /// which neither moves, is freed nor is written while that object is alive.
    #[inline]
    pub(crate) unsafe fn pinned(bytes: &'a [u8], home: Home<'a>) -> Val<'a> {
        Val { bytes, home }
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The part `r` of the value, in the same home (a column of an entity).
    #[inline]
    pub(crate) fn sub(self, r: std::ops::Range<usize>) -> Val<'a> {
        Val {
            bytes: &self.bytes[r],
            home: self.home,
        }
    }

    /// The value in the form the caller wants (copied or pinned).
    #[inline]
    pub(crate) fn out<V: ValueOut>(self) -> V {
        V::from_val(self)
    }
}

impl Deref for Val<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

/// What a lookup returns a found value as: `Vec<u8>` copies it, [`DBPinnableSlice`] pins it
/// where it lives. Generic so that `get` pays for no reference counting.
pub(crate) trait ValueOut: Sized {
    fn from_val(v: Val<'_>) -> Self;
    fn from_vec(v: Vec<u8>) -> Self;
    /// The value's length (for the statistics' bytes read).
    fn out_len(&self) -> usize;
}

impl ValueOut for Vec<u8> {
    #[inline]
    fn from_val(v: Val<'_>) -> Self {
        v.bytes.to_vec()
    }
    #[inline]
    fn from_vec(v: Vec<u8>) -> Self {
        v
    }
    #[inline]
    fn out_len(&self) -> usize {
        self.len()
    }
}

impl ValueOut for DBPinnableSlice {
    #[inline]
    fn from_val(v: Val<'_>) -> Self {
        let keep = match v.home {
            Home::None => return DBPinnableSlice::owned(v.bytes.to_vec()),
            Home::Mem(m) => Keep::Mem(m.clone()),
            Home::Block(b) => Keep::Block(b.clone()),
            Home::Table(t) => Keep::Table(t.keep()),
        };
        DBPinnableSlice {
            repr: Repr::Pinned {
                ptr: v.bytes.as_ptr(),
                len: v.bytes.len(),
                _keep: keep,
            },
        }
    }
    #[inline]
    fn from_vec(v: Vec<u8>) -> Self {
        DBPinnableSlice::owned(v)
    }
    #[inline]
    fn out_len(&self) -> usize {
        AsRef::<[u8]>::as_ref(self).len()
    }
}

/// The owner a pinned value lives in (only held, never read).
enum Keep {
    Mem(#[allow(dead_code)] Arc<MemTable>),
    Block(#[allow(dead_code)] Arc<Block>),
    Table(#[allow(dead_code)] Arc<dyn Send + Sync>),
}

// The owners are shared between threads already; only the raw pointer below keeps the
// compiler from deriving `Send`/`Sync` for the slice. Checked here, so that the `unsafe impl`s
// below cannot hide an owner that is not thread-safe.
const _: () = {
    fn thread_safe<T: Send + Sync>() {}
    #[allow(dead_code)]
    fn owners_are_thread_safe() {
        thread_safe::<Keep>();
    }
};

enum Repr {
    Owned(Vec<u8>),
    Pinned { ptr: *const u8, len: usize, _keep: Keep },
}

/// A value read by [`DB::get_pinned`](crate::DB::get_pinned): dereferences to `[u8]` without
/// having been copied out of the memtable, block cache or table file it was found in.
///
/// It keeps what it points into alive by itself (the memtable, the cached block, the table
/// file's mapping or buffer), so it stays valid after that memtable is flushed, the file is
/// compacted away and deleted, and the DB is dropped. Holding it also holds that memory: a
/// whole memtable or block for one value, as RocksDB's `PinnableSlice` does (and, for a table
/// file read through `mmap` that has since been deleted, its disk space until the mapping
/// goes), so keep it only as long as needed (or copy with `to_vec`). Values without such a home — merge results, values
/// from blocks read without filling the block cache — are held in a buffer of its own.
pub struct DBPinnableSlice {
    repr: Repr,
}

// SAFETY: a pinned slice is a read-only view of bytes that never change while `_keep` (an `Arc`
// of a `Send + Sync` owner) is held; sending or sharing it is like sending or sharing `&[u8]`
// plus that `Arc`.
unsafe impl Send for DBPinnableSlice {}
// SAFETY: as above; every method takes `&self` and only reads.
unsafe impl Sync for DBPinnableSlice {}

impl DBPinnableSlice {
    fn owned(v: Vec<u8>) -> DBPinnableSlice {
        DBPinnableSlice { repr: Repr::Owned(v) }
    }

    /// Whether the value points into its source (false: it was copied into a buffer it owns).
    pub fn is_pinned(&self) -> bool {
        matches!(self.repr, Repr::Pinned { .. })
    }
}

impl Deref for DBPinnableSlice {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.repr {
            Repr::Owned(v) => v,
            // SAFETY: `ptr..ptr+len` was a live `&[u8]` inside the owner `_keep` holds, which
            // keeps it at its address and unchanged (the contract of `Val::pinned`).
            Repr::Pinned { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

impl AsRef<[u8]> for DBPinnableSlice {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// Equal when the values are (pinned or not).
impl PartialEq for DBPinnableSlice {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for DBPinnableSlice {}

impl PartialEq<[u8]> for DBPinnableSlice {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<u8>> for DBPinnableSlice {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl PartialEq<&[u8]> for DBPinnableSlice {
    fn eq(&self, other: &&[u8]) -> bool {
        **self == **other
    }
}

impl fmt::Debug for DBPinnableSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DBPinnableSlice")
            .field("pinned", &self.is_pinned())
            .field("value", &&**self)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpinned_values_are_copied() {
        let o = DBPinnableSlice::owned(b"abc".to_vec());
        assert!(!o.is_pinned());
        assert_eq!(&*o, b"abc");
        let data: &[u8] = b"xyz";
        // Home::None copies.
        let v: DBPinnableSlice = Val::unpinned(data).out();
        assert!(!v.is_pinned());
        assert_eq!(v, data);
        // A Vec output always copies.
        let v: Vec<u8> = Val::unpinned(data).out();
        assert_eq!(v, data);
    }

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn pinnable_slice_is_send_and_sync() {
        assert_send_sync::<DBPinnableSlice>();
    }
}
