//! The snapshot format: a small header (magic, the snapshot's meta, the list of SST files with
//! their lengths and checksums) followed by the SST files' bytes. See `docs/raft.md`.

use openraft::{BasicNode, SnapshotMeta};
use serde::{Deserialize, Serialize};
use shale::Error;
use xxhash_rust::xxh3::xxh3_64;

use crate::types::NodeId;

/// The first 8 bytes of every snapshot.
pub(crate) const MAGIC: &[u8; 8] = b"SHRSNAP1";
const VERSION: u32 = 1;
/// magic (8) + header length (4).
const PREFIX_LEN: usize = 12;

/// The header of a snapshot, stored as JSON after the magic and its length.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// Format version (1).
    pub version: u32,
    /// The cluster the snapshot was made in (`None` when the node has none recorded).
    pub cluster_id: Option<String>,
    /// openraft's meta: last log id, last membership, snapshot id.
    pub meta: SnapshotMeta<NodeId, BasicNode>,
    /// The SST files that follow the header, in order.
    pub files: Vec<SnapshotFile>,
}

/// One SST file of a snapshot: its length and the XXH3-64 of its bytes.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    pub len: u64,
    pub xxh3: u64,
}

pub(crate) fn encode_snapshot(
    cluster_id: Option<String>,
    meta: SnapshotMeta<NodeId, BasicNode>,
    files: &[Vec<u8>],
) -> Vec<u8> {
    let header = SnapshotHeader {
        version: VERSION,
        cluster_id,
        meta,
        files: files
            .iter()
            .map(|f| SnapshotFile {
                len: f.len() as u64,
                xxh3: xxh3_64(f),
            })
            .collect(),
    };
    let h = crate::store::encode_json(&header);
    let mut out = Vec::with_capacity(PREFIX_LEN + h.len() + 8 + files.iter().map(Vec::len).sum::<usize>());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    out.extend_from_slice(&h);
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    for f in files {
        out.extend_from_slice(f);
    }
    out
}

fn corrupt(offset: usize, msg: impl Into<String>) -> Error {
    Error::corruption("snapshot", Some(offset as u64), msg)
}

/// Check a snapshot's bytes and split them: its header and the bytes of each SST file. Any
/// damage (magic, lengths, the header's or a file's checksum, trailing bytes) is Corruption
/// with the offset where it was found.
pub fn decode_snapshot(bytes: &[u8]) -> shale::Result<(SnapshotHeader, Vec<&[u8]>)> {
    if bytes.len() < PREFIX_LEN || &bytes[..8] != MAGIC {
        return Err(corrupt(0, "not a Shale Raft snapshot (bad magic)"));
    }
    let hlen = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
    let body = PREFIX_LEN + hlen;
    if bytes.len() < body + 8 {
        return Err(corrupt(
            8,
            format!("header of {hlen} bytes past the end ({} bytes)", bytes.len()),
        ));
    }
    let stored = u64::from_le_bytes(bytes[body..body + 8].try_into().expect("8 bytes"));
    if xxh3_64(&bytes[..body]) != stored {
        return Err(corrupt(body, "header checksum mismatch"));
    }
    let header: SnapshotHeader = serde_json::from_slice(&bytes[PREFIX_LEN..body])
        .map_err(|e| corrupt(PREFIX_LEN, format!("undecodable header: {e}")))?;
    if header.version != VERSION {
        return Err(corrupt(
            PREFIX_LEN,
            format!("unknown snapshot version {}", header.version),
        ));
    }
    let mut off = body + 8;
    let mut files = Vec::with_capacity(header.files.len());
    for (n, f) in header.files.iter().enumerate() {
        let end = usize::try_from(f.len)
            .ok()
            .and_then(|l| off.checked_add(l))
            .filter(|e| *e <= bytes.len());
        let Some(end) = end else {
            return Err(corrupt(off, format!("file {n} of {} bytes past the end", f.len)));
        };
        if xxh3_64(&bytes[off..end]) != f.xxh3 {
            return Err(corrupt(off, format!("file {n}: checksum mismatch")));
        }
        files.push(&bytes[off..end]);
        off = end;
    }
    if off != bytes.len() {
        return Err(corrupt(off, format!("{} bytes after the last file", bytes.len() - off)));
    }
    Ok((header, files))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::StoredMembership;

    fn sample() -> Vec<u8> {
        let meta = SnapshotMeta {
            last_log_id: None,
            last_membership: StoredMembership::default(),
            snapshot_id: "s".into(),
        };
        encode_snapshot(Some("c".into()), meta, &[b"abc".to_vec(), b"defg".to_vec()])
    }

    #[test]
    fn round_trip() {
        let b = sample();
        let (h, files) = decode_snapshot(&b).unwrap();
        assert_eq!(h.cluster_id.as_deref(), Some("c"));
        assert_eq!(files, vec![&b"abc"[..], &b"defg"[..]]);
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_corruption() {
        let b = sample();
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x40;
            let e = decode_snapshot(&c).unwrap_err();
            assert!(e.is_corruption(), "byte {i}: {e}");
            let e = decode_snapshot(&b[..i]).unwrap_err();
            assert!(e.is_corruption(), "cut at {i}: {e}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(decode_snapshot(&longer).unwrap_err().is_corruption());
    }
}
