//! Reading blobs: a blob file opened through the file system (header checked, footer checked
//! when the file is closed), the record at a blob index's offset read and verified (key, sizes,
//! CRCs), the value uncompressed; and the per-family cache of open blob files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::format::{
    blob_crc, decode_record_header, uncompress_blob, BlobFooter, BlobHeader, FOOTER_SIZE, HEADER_SIZE,
    RECORD_HEADER_SIZE,
};
use super::index::BlobIndex;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, RandomAccessFile};
use crate::lsm::filename::blob_name;

/// An open blob file.
pub(crate) struct BlobFileReader {
    file: Arc<dyn RandomAccessFile>,
    name: String,
    size: u64,
    header: BlobHeader,
}

impl BlobFileReader {
    /// Open blob file `number` of `dir`: a missing file or a bad header or footer is
    /// Corruption naming the file (and the offset of the bad part).
    pub(crate) fn open(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<BlobFileReader> {
        let path = blob_name(dir, number);
        let name = crate::fs::name_of(&path);
        let file = fs.open_random(&path).map_err(|e| match e {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::corruption(&name, None, "blob file referenced by a blob index is missing")
            }
            e => e,
        })?;
        let size = file.size();
        if size < HEADER_SIZE + FOOTER_SIZE {
            return Err(Error::corruption(
                &name,
                Some(size),
                format!("blob file is {size} bytes, too short for its header and footer"),
            ));
        }
        let h = file.read_at(0, HEADER_SIZE as usize)?;
        let header = BlobHeader::decode(&h).map_err(|e| e.in_file(&name, Some(0)))?;
        if header.has_ttl {
            return Err(Error::NotSupported(format!(
                "{name}: blob files with TTL (stacked BlobDB) are not supported"
            )));
        }
        let f = file.read_at(size - FOOTER_SIZE, FOOTER_SIZE as usize)?;
        BlobFooter::decode(&f).map_err(|e| e.in_file(&name, Some(size - FOOTER_SIZE)))?;
        Ok(BlobFileReader {
            file,
            name,
            size,
            header,
        })
    }

    /// The file name (`NNNNNN.blob`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The value of `user_key` at `offset` (the value's offset) of stored size `size`.
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        offset: u64,
        size: u64,
        compression: u8,
        verify: bool,
    ) -> Result<Vec<u8>> {
        let bad = |off: u64, msg: String| Error::corruption(&self.name, Some(off), msg);
        let klen = user_key.len() as u64;
        let prefix = HEADER_SIZE + RECORD_HEADER_SIZE + klen;
        let end_ok = offset
            .checked_add(size)
            .and_then(|e| e.checked_add(FOOTER_SIZE))
            .is_some_and(|e| e <= self.size);
        if offset < prefix || !end_ok {
            return Err(bad(
                offset,
                format!(
                    "blob index points past the blob records (offset {offset}, size {size}, file size {})",
                    self.size
                ),
            ));
        }
        if compression != self.header.compression {
            return Err(bad(
                offset,
                format!(
                    "blob index has compression {compression}, the blob file {}",
                    self.header.compression
                ),
            ));
        }
        let rec_off = offset - RECORD_HEADER_SIZE - klen;
        let len =
            usize::try_from(RECORD_HEADER_SIZE + klen + size).map_err(|_| bad(offset, "blob too large".into()))?;
        let rec = self.file.read_at(rec_off, len)?;
        if rec.len() != len {
            return Err(bad(rec_off, "blob record is truncated".into()));
        }
        let h = decode_record_header(&rec[..RECORD_HEADER_SIZE as usize])
            .map_err(|e| e.in_file(&self.name, Some(rec_off)))?;
        if h.key_len != klen || h.value_len != size {
            return Err(bad(
                rec_off,
                format!(
                    "blob record holds a {}-byte key and a {}-byte value, the blob index expects {klen} and {size}",
                    h.key_len, h.value_len
                ),
            ));
        }
        let (k, v) = rec[RECORD_HEADER_SIZE as usize..].split_at(klen as usize);
        if k != user_key {
            return Err(bad(rec_off, "blob record is for another key".into()));
        }
        if verify && blob_crc(k, v) != h.blob_crc {
            return Err(bad(rec_off, "blob CRC mismatch".into()));
        }
        uncompress_blob(compression, v).map_err(|e| e.in_file(&self.name, Some(offset)))
    }
}

/// Open blob files of one DB directory, by number.
pub(crate) struct BlobFileCache {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    open: Mutex<HashMap<u64, Arc<BlobFileReader>>>,
}

/// Open blob files kept at most (a simple bound: the cache is cleared when it is reached).
const MAX_OPEN: usize = 1024;

impl BlobFileCache {
    pub(crate) fn new(fs: Arc<dyn FileSystem>, dir: &Path) -> BlobFileCache {
        BlobFileCache {
            fs,
            dir: dir.to_path_buf(),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The open reader of blob file `number`.
    pub(crate) fn reader(&self, number: u64) -> Result<Arc<BlobFileReader>> {
        if let Some(r) = self.open.lock().get(&number) {
            return Ok(r.clone());
        }
        let r = Arc::new(BlobFileReader::open(&*self.fs, &self.dir, number)?);
        let mut open = self.open.lock();
        if open.len() >= MAX_OPEN {
            open.clear();
        }
        open.insert(number, r.clone());
        Ok(r)
    }

    /// Forget blob file `number` (it was deleted).
    pub(crate) fn evict(&self, number: u64) {
        self.open.lock().remove(&number);
    }

    /// The value a blob index (`index`, the raw `kTypeBlobIndex` value) of `user_key` points to.
    pub(crate) fn resolve(&self, user_key: &[u8], index: &[u8], verify: bool) -> Result<Vec<u8>> {
        match BlobIndex::decode(index)? {
            BlobIndex::InlinedTtl { .. }
            | BlobIndex::Blob {
                expiration: Some(_), ..
            } => Err(Error::NotSupported(
                "blob index with a TTL (stacked BlobDB) is not supported".into(),
            )),
            BlobIndex::Blob {
                file_number,
                offset,
                size,
                compression,
                expiration: None,
            } => self
                .reader(file_number)?
                .get(user_key, offset, size, compression, verify),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::writer::{BlobFileBuilder, BlobWriteConfig};
    use crate::table::format::DBCompressionType;

    /// (key, value, blob index) of each blob written.
    type Written = Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>;

    fn write(fs: &Arc<dyn FileSystem>, compression: DBCompressionType) -> (Written, Vec<u64>) {
        let cfg = BlobWriteConfig {
            min_blob_size: 10,
            blob_file_size: 300,
            compression,
            column_family_id: 0,
        };
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut b = BlobFileBuilder::new(cfg, fs.clone(), Path::new("/db"));
        let mut next = 10;
        let mut out = Vec::new();
        for i in 0..20u32 {
            let k = format!("key{i:03}").into_bytes();
            let v = format!("value {i} ").repeat(i as usize + 2).into_bytes();
            let idx = b
                .add(&k, &v, &mut || {
                    next += 1;
                    next
                })
                .unwrap();
            out.push((k, v, idx));
        }
        b.finish().unwrap();
        let nums = b.additions.iter().map(|a| a.blob_file_number).collect();
        (out, nums)
    }

    #[test]
    fn written_blobs_read_back_and_files_roll() {
        for c in [DBCompressionType::None, DBCompressionType::Lz4, DBCompressionType::Zstd] {
            let fs: Arc<dyn FileSystem> = Arc::new(crate::fs::MemFs::new());
            let (out, nums) = write(&fs, c);
            assert!(nums.len() > 2, "files roll at blob_file_size: {nums:?}");
            let cache = BlobFileCache::new(fs.clone(), Path::new("/db"));
            for (k, v, idx) in &out {
                assert_eq!(&cache.resolve(k, idx, true).unwrap(), v);
            }
            // the wrong key for an index is Corruption
            assert!(cache.resolve(b"key999", &out[3].2, true).unwrap_err().is_corruption());
            // the stacked BlobDB's TTL indexes are refused, not misread
            let ttl = BlobIndex::InlinedTtl {
                expiration: 5,
                value: b"v".to_vec(),
            };
            assert!(cache
                .resolve(b"key000", &ttl.encode(), true)
                .unwrap_err()
                .is_not_supported());
        }
    }

    #[test]
    fn corruption_names_the_file_and_offset() {
        let fs: Arc<dyn FileSystem> = Arc::new(crate::fs::MemFs::new());
        let (out, _) = write(&fs, DBCompressionType::None);
        let (k, _, idx) = &out[0];
        let Ok(BlobIndex::Blob {
            file_number,
            offset,
            size,
            ..
        }) = BlobIndex::decode(idx)
        else {
            panic!("not a blob reference")
        };
        let path = blob_name(Path::new("/db"), file_number);
        let good = fs.read_all(&path).unwrap();
        let rewrite = |bytes: &[u8]| {
            let mut w = fs.new_writable(&path).unwrap();
            w.append(bytes).unwrap();
            w.sync().unwrap();
        };
        let check = |want_off: Option<u64>, what: &str| {
            let cache = BlobFileCache::new(fs.clone(), Path::new("/db"));
            match cache.resolve(k, idx, true) {
                Err(Error::Corruption { file, offset, msg }) => {
                    assert!(
                        file.ends_with(&format!("{file_number:06}.blob")),
                        "{what}: {file} {msg}"
                    );
                    if want_off.is_some() {
                        assert_eq!(offset, want_off, "{what}: {msg}");
                    }
                }
                r => panic!("{what}: {r:?}"),
            }
        };
        // a flipped byte in the value
        let mut b = good.clone();
        b[offset as usize] ^= 1;
        rewrite(&b);
        check(Some(offset - RECORD_HEADER_SIZE - k.len() as u64), "flipped value byte");
        // bad magic
        let mut b = good.clone();
        b[0] ^= 1;
        rewrite(&b);
        check(Some(0), "bad magic");
        // truncated (no footer)
        rewrite(&good[..good.len() - 5]);
        check(None, "truncated");
        // an index past the end
        rewrite(&good);
        let past = BlobIndex::encode_blob(file_number, good.len() as u64, size, 0);
        let cache = BlobFileCache::new(fs.clone(), Path::new("/db"));
        let e = cache.resolve(k, &past, true).unwrap_err();
        assert!(
            matches!(&e, Error::Corruption { offset: Some(o), .. } if *o == good.len() as u64),
            "{e:?}"
        );
        // missing
        fs.remove_file(&path).unwrap();
        check(None, "missing file");
    }
}
