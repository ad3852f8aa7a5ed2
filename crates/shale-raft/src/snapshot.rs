//! The snapshot format: a small header (magic, the snapshot's meta, the list of SST files with
//! their lengths and checksums) followed by the SST files' bytes. See `docs/raft.md`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::{BasicNode, SnapshotMeta};
use serde::{Deserialize, Serialize};
use shale::fs::FileSystem;
use shale::fs::RandomAccessFile;
use shale::Error;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

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

/// Bytes read at a time when copying or checksumming a snapshot.
const CHUNK: usize = 1 << 20;

/// Where a snapshot's bytes are read from: a buffer or a file.
pub(crate) trait Source {
    fn len(&self) -> u64;
    fn read(&self, offset: u64, n: usize) -> shale::error::Result<Vec<u8>>;
}

impl Source for &[u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read(&self, offset: u64, n: usize) -> shale::error::Result<Vec<u8>> {
        Ok(self[offset as usize..offset as usize + n].to_vec())
    }
}

impl Source for Arc<dyn RandomAccessFile> {
    fn len(&self) -> u64 {
        self.size()
    }
    fn read(&self, offset: u64, n: usize) -> shale::error::Result<Vec<u8>> {
        let mut buf = vec![0u8; n];
        self.read_exact_at(offset, &mut buf)?;
        Ok(buf)
    }
}

/// The XXH3-64 of `len` bytes of `src` from `off`, read in chunks.
fn xxh3_of(src: &dyn Source, off: u64, len: u64) -> shale::error::Result<u64> {
    let mut h = Xxh3::new();
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(CHUNK as u64) as usize;
        h.update(&src.read(off + done, n)?);
        done += n as u64;
    }
    Ok(h.digest())
}

/// Write the snapshot file `dir/name` (through a temporary file, synced, renamed, the directory
/// synced): the header describing the files `ssts`, then their bytes, copied in chunks.
pub(crate) fn write_snapshot(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    cluster_id: Option<String>,
    meta: SnapshotMeta<NodeId, BasicNode>,
    ssts: &[PathBuf],
) -> shale::error::Result<()> {
    let mut srcs = Vec::with_capacity(ssts.len());
    let mut files = Vec::with_capacity(ssts.len());
    for p in ssts {
        let f = fs.open_random(p)?;
        let len = f.size();
        files.push(SnapshotFile {
            len,
            xxh3: xxh3_of(&f, 0, len)?,
        });
        srcs.push(f);
    }
    let header = SnapshotHeader {
        version: VERSION,
        cluster_id,
        meta,
        files,
    };
    let h = crate::store::encode_json(&header);
    let mut head = Vec::with_capacity(PREFIX_LEN + h.len() + 8);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&(h.len() as u32).to_le_bytes());
    head.extend_from_slice(&h);
    let sum = xxh3_64(&head);
    head.extend_from_slice(&sum.to_le_bytes());
    let tmp = dir.join(format!("{name}.tmp"));
    let mut w = fs.new_writable(&tmp)?;
    w.append(&head)?;
    for f in &srcs {
        let mut off = 0u64;
        while off < f.size() {
            let n = (f.size() - off).min(CHUNK as u64) as usize;
            w.append(&f.read(off, n)?)?;
            off += n as u64;
        }
    }
    w.flush()?;
    w.sync()?;
    drop(w);
    fs.rename(&tmp, &dir.join(name))?;
    fs.sync_dir(dir)
}

/// Copy `len` bytes of `src` from `off` into a new file `path`, synced.
pub(crate) fn copy_out(
    fs: &dyn FileSystem,
    src: &dyn Source,
    off: u64,
    len: u64,
    path: &Path,
) -> shale::error::Result<()> {
    let mut w = fs.new_writable(path)?;
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(CHUNK as u64) as usize;
        w.append(&src.read(off + done, n)?)?;
        done += n as u64;
    }
    w.flush()?;
    w.sync()
}

fn corrupt(offset: u64, msg: impl Into<String>) -> Error {
    Error::corruption("snapshot", Some(offset), msg)
}

/// A snapshot's header, checked (magic, lengths, its checksum, version), and where the files
/// start.
pub(crate) fn read_header(src: &dyn Source) -> shale::error::Result<(SnapshotHeader, u64)> {
    let total = src.len();
    if total < PREFIX_LEN as u64 || src.read(0, 8)? != MAGIC {
        return Err(corrupt(0, "not a Shale Raft snapshot (bad magic)"));
    }
    let hlen = u32::from_le_bytes(src.read(8, 4)?.try_into().expect("4 bytes")) as u64;
    let body = PREFIX_LEN as u64 + hlen;
    if total < body + 8 {
        return Err(corrupt(
            8,
            format!("header of {hlen} bytes past the end ({total} bytes)"),
        ));
    }
    let head = src.read(0, body as usize)?;
    let stored = u64::from_le_bytes(src.read(body, 8)?.try_into().expect("8 bytes"));
    if xxh3_64(&head) != stored {
        return Err(corrupt(body, "header checksum mismatch"));
    }
    let header: SnapshotHeader = serde_json::from_slice(&head[PREFIX_LEN..])
        .map_err(|e| corrupt(PREFIX_LEN as u64, format!("undecodable header: {e}")))?;
    if header.version != VERSION {
        return Err(corrupt(
            PREFIX_LEN as u64,
            format!("unknown snapshot version {}", header.version),
        ));
    }
    Ok((header, body + 8))
}

/// Check a whole snapshot: its header, each file's length and checksum, nothing after the last
/// file. Returns the header and each file's (offset, length). Any damage is Corruption with the
/// offset where it was found.
pub(crate) fn check_snapshot(src: &dyn Source) -> shale::error::Result<(SnapshotHeader, Vec<(u64, u64)>)> {
    let total = src.len();
    let (header, mut off) = read_header(src)?;
    let mut files = Vec::with_capacity(header.files.len());
    for (n, f) in header.files.iter().enumerate() {
        let Some(end) = off.checked_add(f.len).filter(|e| *e <= total) else {
            return Err(corrupt(off, format!("file {n} of {} bytes past the end", f.len)));
        };
        if xxh3_of(src, off, f.len)? != f.xxh3 {
            return Err(corrupt(off, format!("file {n}: checksum mismatch")));
        }
        files.push((off, f.len));
        off = end;
    }
    if off != total {
        return Err(corrupt(off, format!("{} bytes after the last file", total - off)));
    }
    Ok((header, files))
}

/// Check a snapshot's bytes and split them: its header and the bytes of each SST file (see
/// [`check_snapshot`]; for tools and tests, the store reads snapshots from files).
pub fn decode_snapshot(bytes: &[u8]) -> shale::error::Result<(SnapshotHeader, Vec<&[u8]>)> {
    let (header, files) = check_snapshot(&bytes)?;
    let parts = files
        .iter()
        .map(|&(o, l)| &bytes[o as usize..(o + l) as usize])
        .collect();
    Ok((header, parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::StoredMembership;

    /// A snapshot of two small files, written to an in-memory file system and read back.
    fn sample() -> Vec<u8> {
        let meta = SnapshotMeta {
            last_log_id: None,
            last_membership: StoredMembership::default(),
            snapshot_id: "s".into(),
        };
        let fs = shale::fs::testing::MemFs::new();
        let dir = Path::new("/s");
        fs.create_dir_all(dir).unwrap();
        let mut ssts = Vec::new();
        for (n, bytes) in [&b"abc"[..], b"defg"].into_iter().enumerate() {
            let p = dir.join(format!("{n}.sst"));
            let mut w = fs.new_writable(&p).unwrap();
            w.append(bytes).unwrap();
            w.sync().unwrap();
            ssts.push(p);
        }
        write_snapshot(&fs, dir, "snap", Some("c".into()), meta, &ssts).unwrap();
        fs.read_all(&dir.join("snap")).unwrap()
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
