//! File names in a database directory, as RocksDB names them (`file/filename.cc`).

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileType {
    Wal(u64),
    Table(u64),
    Blob(u64),
    Manifest(u64),
    Current,
    Identity,
    Lock,
    InfoLog,
    Options(u64),
    Temp(u64),
}

pub(crate) fn wal_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.log"))
}
pub(crate) fn table_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.sst"))
}
pub(crate) fn blob_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.blob"))
}
pub(crate) fn manifest_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("MANIFEST-{n:06}"))
}
pub(crate) fn current_name(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}
pub(crate) fn temp_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.dbtmp"))
}
pub(crate) fn identity_name(dir: &Path) -> PathBuf {
    dir.join("IDENTITY")
}
pub(crate) fn lock_name(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

fn parse_num(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Classify a directory entry; `None` for names that are not ours.
pub(crate) fn parse_file_name(name: &str) -> Option<FileType> {
    match name {
        "CURRENT" => return Some(FileType::Current),
        "IDENTITY" => return Some(FileType::Identity),
        "LOCK" => return Some(FileType::Lock),
        "LOG" => return Some(FileType::InfoLog),
        _ => {}
    }
    if name.starts_with("LOG.old") {
        return Some(FileType::InfoLog);
    }
    if let Some(rest) = name.strip_prefix("MANIFEST-") {
        return parse_num(rest).map(FileType::Manifest);
    }
    if let Some(rest) = name.strip_prefix("OPTIONS-") {
        let rest = rest.strip_suffix(".dbtmp").unwrap_or(rest);
        return parse_num(rest).map(FileType::Options);
    }
    let (num, ext) = name.split_once('.')?;
    let n = parse_num(num)?;
    match ext {
        "log" => Some(FileType::Wal(n)),
        "sst" | "ldb" => Some(FileType::Table(n)),
        "dbtmp" => Some(FileType::Temp(n)),
        "blob" => Some(FileType::Blob(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        let d = Path::new("/x");
        assert_eq!(wal_name(d, 4), Path::new("/x/000004.log"));
        assert_eq!(table_name(d, 1234567), Path::new("/x/1234567.sst"));
        assert_eq!(manifest_name(d, 5), Path::new("/x/MANIFEST-000005"));
        assert_eq!(parse_file_name("000004.log"), Some(FileType::Wal(4)));
        assert_eq!(parse_file_name("000013.sst"), Some(FileType::Table(13)));
        assert_eq!(parse_file_name("000013.ldb"), Some(FileType::Table(13)));
        assert_eq!(parse_file_name("000014.blob"), Some(FileType::Blob(14)));
        assert_eq!(blob_name(d, 14), Path::new("/x/000014.blob"));
        assert_eq!(parse_file_name("MANIFEST-000005"), Some(FileType::Manifest(5)));
        assert_eq!(parse_file_name("OPTIONS-000007"), Some(FileType::Options(7)));
        assert_eq!(parse_file_name("CURRENT"), Some(FileType::Current));
        assert_eq!(parse_file_name("MANIFEST-"), None);
        assert_eq!(parse_file_name("abc.log"), None);
        assert_eq!(parse_file_name("12.txt"), None);
    }
}
