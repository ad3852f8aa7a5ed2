//! Wide-column entities (RocksDB's `PutEntity` / `GetEntity`): a key whose value is a list of
//! named columns, stored with value type `0x16` in RocksDB's serialization (version 1):
//!
//! ```text
//! entity := varint32 version (1) | varint32 n | (lpslice name | varint32 value_len){n}
//!           | value{n}            (the values concatenated, in column order)
//! ```
//!
//! Columns are sorted by name (bytewise) and names are unique. The column with the empty name
//! ([`DEFAULT_WIDE_COLUMN_NAME`]) is the *default* column: a plain `get` of an entity returns
//! its value (an empty value if there is none), and a plain value reads back through
//! `get_entity` as one default column. See `docs/wide-columns.md`.

use crate::coding::{put_lpslice, put_varint32, Reader};
use crate::error::{Error, Result};

/// The name of the default (anonymous) column: the empty name, RocksDB's
/// `kDefaultWideColumnName`. A plain value is an entity with only this column.
pub const DEFAULT_WIDE_COLUMN_NAME: &[u8] = b"";

/// The serialization version written (RocksDB's `kCurrentVersion` before blob columns).
const VERSION: u32 = 1;

/// One column of an entity: its name and value, as returned by `DB::get_entity` and
/// `DBRawIterator::columns` (sorted by name; the default column has the empty name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WideColumn {
    /// The column's name (empty for the default column).
    pub name: Vec<u8>,
    /// The column's value.
    pub value: Vec<u8>,
}

impl WideColumn {
    /// A column named `name` holding `value`.
    pub fn new(name: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> WideColumn {
        WideColumn {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Encode `columns` (any order): sorted by name, as RocksDB's `PutEntity` stores them.
/// InvalidArgument when two columns share a name, or a name, a value or the count does not fit
/// in 32 bits.
pub(crate) fn serialize(columns: &[(&[u8], &[u8])]) -> Result<Vec<u8>> {
    let mut cols: Vec<(&[u8], &[u8])> = columns.to_vec();
    cols.sort_by(|a, b| a.0.cmp(b.0));
    if let Some(w) = cols.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Error::invalid(format!(
            "put_entity: duplicate wide column name {:?}",
            String::from_utf8_lossy(w[0].0)
        )));
    }
    serialize_sorted(&cols)
}

/// Encode columns already sorted by name with unique names.
pub(crate) fn serialize_sorted(cols: &[(&[u8], &[u8])]) -> Result<Vec<u8>> {
    let fits = |n: usize| u32::try_from(n).is_ok();
    if !fits(cols.len()) {
        return Err(Error::invalid("put_entity: too many wide columns"));
    }
    let mut total = 10;
    for (n, v) in cols {
        if !fits(n.len()) {
            return Err(Error::invalid("put_entity: wide column name too long (4 GiB or more)"));
        }
        if !fits(v.len()) {
            return Err(Error::invalid("put_entity: wide column value too long (4 GiB or more)"));
        }
        total += 10 + n.len() + v.len();
    }
    let mut out = Vec::with_capacity(total);
    put_varint32(&mut out, VERSION);
    put_varint32(&mut out, cols.len() as u32);
    for (n, v) in cols {
        put_lpslice(&mut out, n);
        put_varint32(&mut out, v.len() as u32);
    }
    for (_, v) in cols {
        out.extend_from_slice(v);
    }
    Ok(out)
}

/// The entity holding only the default column with `value` (how a plain value reads as an
/// entity).
pub(crate) fn single_default(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 8);
    put_varint32(&mut out, VERSION);
    put_varint32(&mut out, 1);
    put_lpslice(&mut out, DEFAULT_WIDE_COLUMN_NAME);
    put_varint32(&mut out, value.len() as u32);
    out.extend_from_slice(value);
    out
}

/// Decode an entity into its columns (borrowed from `input`). Corruption for bytes that are
/// not an entity (truncated, columns out of order or repeated, a value past the end);
/// NotSupported for a version this reader does not know (RocksDB 11's version 2 with blob
/// columns). Bytes after the last value are ignored, as RocksDB ignores them.
pub(crate) fn decode(input: &[u8]) -> Result<Vec<(&[u8], &[u8])>> {
    let bad = |what: &str| Error::corrupt(format!("wide-column entity: {what}"));
    let mut r = Reader::new(input);
    let version = r.varint32().ok_or_else(|| bad("cannot decode the version"))?;
    if version == 2 {
        return Err(Error::NotSupported(
            "wide-column entity of version 2 (blob columns, RocksDB 11) is not supported".into(),
        ));
    }
    if version > VERSION {
        return Err(bad(&format!("unknown version {version}")));
    }
    let n = r.varint32().ok_or_else(|| bad("cannot decode the column count"))?;
    // Each column takes at least two bytes of index: a count beyond that is corrupt, and
    // checking first keeps a bad count from reserving memory.
    if n as usize > r.remaining().len() / 2 {
        return Err(bad(&format!("column count {n} larger than the entity allows")));
    }
    let mut cols: Vec<(&[u8], &[u8])> = Vec::with_capacity(n as usize);
    let mut sizes: Vec<usize> = Vec::with_capacity(n as usize);
    for i in 0..n {
        let name = r
            .lpslice()
            .ok_or_else(|| bad(&format!("cannot decode the name of column {i}")))?;
        if cols.last().is_some_and(|(prev, _)| *prev >= name) {
            return Err(bad("columns out of order or repeated"));
        }
        let size = r
            .varint32()
            .ok_or_else(|| bad(&format!("cannot decode the value size of column {i}")))?;
        cols.push((name, &[]));
        sizes.push(size as usize);
    }
    let data = r.remaining();
    let mut pos = 0usize;
    for (c, size) in cols.iter_mut().zip(sizes) {
        let end = pos
            .checked_add(size)
            .filter(|&e| e <= data.len())
            .ok_or_else(|| bad("column value past the end of the entity"))?;
        c.1 = &data[pos..end];
        pos = end;
    }
    Ok(cols)
}

/// The value of the default column of an encoded entity: `Some(range in input)`, or `None`
/// when the entity has no default column (a plain read then returns an empty value).
pub(crate) fn default_range(input: &[u8]) -> Result<Option<std::ops::Range<usize>>> {
    let cols = decode(input)?;
    Ok(match cols.first() {
        Some((&[], v)) => {
            let start = v.as_ptr() as usize - input.as_ptr() as usize;
            Some(start..start + v.len())
        }
        _ => None,
    })
}

/// The entity `input` with its default column's value set to `value` (added first if it had
/// none): the result of a merge over an entity, which applies the operator to the default
/// column and keeps the others.
pub(crate) fn with_default(input: &[u8], value: &[u8]) -> Result<Vec<u8>> {
    let mut cols = decode(input)?;
    match cols.first_mut() {
        Some(c) if c.0.is_empty() => c.1 = value,
        _ => cols.insert(0, (DEFAULT_WIDE_COLUMN_NAME, value)),
    }
    serialize_sorted(&cols)
}

/// Owned columns of an encoded entity.
pub(crate) fn to_columns(input: &[u8]) -> Result<Vec<WideColumn>> {
    Ok(decode(input)?.into_iter().map(|(n, v)| WideColumn::new(n, v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entity written by RocksDB 9.8.4 (from its WAL): columns c1=v1, c2=v2.
    const ROCKSDB_C1_C2: &[u8] = b"\x01\x02\x02c1\x02\x02c2\x02v1v2";

    #[test]
    fn rocksdb_bytes_both_ways() {
        let cols: [(&[u8], &[u8]); 2] = [(b"c2", b"v2"), (b"c1", b"v1")];
        assert_eq!(serialize(&cols).unwrap(), ROCKSDB_C1_C2);
        assert_eq!(
            decode(ROCKSDB_C1_C2).unwrap(),
            vec![(&b"c1"[..], &b"v1"[..]), (&b"c2"[..], &b"v2"[..])]
        );
        assert_eq!(default_range(ROCKSDB_C1_C2).unwrap(), None);
    }

    #[test]
    fn default_column_first_and_round_trip() {
        let cols: [(&[u8], &[u8]); 3] = [(b"b", b"xyz"), (b"", b"dflt"), (b"a", b"")];
        let e = serialize(&cols).unwrap();
        let d = decode(&e).unwrap();
        assert_eq!(d[0], (&b""[..], &b"dflt"[..]));
        assert_eq!(d.len(), 3);
        assert_eq!(&e[default_range(&e).unwrap().unwrap()], b"dflt");
        assert_eq!(decode(&single_default(b"v")).unwrap(), vec![(&b""[..], &b"v"[..])]);
        let w = with_default(ROCKSDB_C1_C2, b"m").unwrap();
        assert_eq!(
            to_columns(&w).unwrap(),
            vec![
                WideColumn::new("", "m"),
                WideColumn::new("c1", "v1"),
                WideColumn::new("c2", "v2")
            ]
        );
        let w2 = with_default(&w, b"n").unwrap();
        assert_eq!(decode(&w2).unwrap()[0], (&b""[..], &b"n"[..]));
        assert_eq!(decode(&w2).unwrap().len(), 3);
        // No columns at all.
        let empty = serialize(&[]).unwrap();
        assert_eq!(empty, b"\x01\x00");
        assert!(decode(&empty).unwrap().is_empty());
    }

    #[test]
    fn duplicate_names_are_invalid_argument() {
        let cols: [(&[u8], &[u8]); 2] = [(b"a", b"1"), (b"a", b"2")];
        assert!(matches!(serialize(&cols), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn malformed_entities_are_errors() {
        let corrupt = |b: &[u8]| matches!(decode(b), Err(Error::Corruption { .. }));
        assert!(corrupt(b""));
        assert!(corrupt(b"\x01"));
        assert!(corrupt(b"\x03\x00"));
        assert!(corrupt(b"\x01\xff\xff\xff\xff\x0f"));
        assert!(corrupt(b"\x01\x01\x05ab"));
        assert!(corrupt(b"\x01\x01\x01a"));
        assert!(corrupt(b"\x01\x01\x01a\x05abc"));
        // Out of order and repeated names.
        assert!(corrupt(b"\x01\x02\x01b\x00\x01a\x00"));
        assert!(corrupt(b"\x01\x02\x01a\x00\x01a\x00"));
        assert!(matches!(decode(b"\x02\x00"), Err(Error::NotSupported(_))));
        // Every truncation of a valid entity fails cleanly.
        for i in 0..ROCKSDB_C1_C2.len() {
            assert!(decode(&ROCKSDB_C1_C2[..i]).is_err(), "prefix {i}");
        }
        // Trailing bytes are ignored, as RocksDB ignores them.
        let mut t = ROCKSDB_C1_C2.to_vec();
        t.push(0);
        assert_eq!(decode(&t).unwrap().len(), 2);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let len = (x % 24) as usize;
            let mut b = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push((x % 7) as u8);
            }
            if let Ok(cols) = decode(&b) {
                let enc = serialize_sorted(&cols).unwrap();
                assert_eq!(decode(&enc).unwrap(), cols);
            }
            x = x.wrapping_add(1);
        }
    }
}
