//! Text dumps in the formats of `ldb dump_wal` and `ldb manifest_dump`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::log::{DBRecoveryMode, Reader};
use crate::lsm::version_edit::{ikey_debug, to_hex, FileMetaData, VersionEdit};
use crate::write_batch::{BatchRecord, WriteBatch, HEADER};

/// `0x` + uppercase hex (ldb's `StringToHex`).
fn hex0x(b: &[u8]) -> String {
    format!("0x{}", to_hex(b))
}

/// The number in a file name like `000004.log` or `dir/MANIFEST-000005` (0 if none).
fn file_number(file_name: &str) -> u64 {
    let base = file_name.rsplit('/').next().unwrap_or(file_name);
    let base = base.strip_prefix("MANIFEST-").unwrap_or(base);
    let digits: String = base.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap_or(0)
}

/// `ldb dump_wal --header [--print_value]`: the header line, then one line per batch:
/// `seq,count,byte_size,physical_offset,OPS` (e.g. `1,1,17,0,PUT(0) : 0x6B `).
#[cfg(test)]
pub(crate) fn dump_wal(data: &[u8], file_name: &str, print_values: bool) -> Result<String> {
    Ok(dump_wal_with(data, file_name, true, print_values)?.0)
}

/// Like [`dump_wal`], with ldb's `--header` flag; returns (stdout, stderr) texts. Corrupt parts
/// are skipped (as ldb does) and reported on "stderr".
pub(crate) fn dump_wal_with(
    data: &[u8],
    file_name: &str,
    print_header: bool,
    print_values: bool,
) -> Result<(String, String)> {
    let mut out = String::new();
    let mut err = String::new();
    if print_header {
        out.push_str("Sequence,Count,ByteSize,Physical Offset,Key(s)");
        if print_values {
            out.push_str(" : value ");
        }
        out.push('\n');
    }
    let mut reader = Reader::new(
        data.to_vec(),
        file_name,
        file_number(file_name),
        DBRecoveryMode::SkipAnyCorruptedRecord,
    );
    loop {
        let rec = match reader.read_record() {
            Ok(Some(r)) => r.to_vec(),
            Ok(None) => break,
            Err(e) => {
                let _ = writeln!(err, "Corruption detected in log file {e}");
                break;
            }
        };
        if rec.len() < HEADER {
            let _ = writeln!(err, "Corruption detected in log file Corruption: log record too small");
            continue;
        }
        let size = rec.len();
        let Ok(batch) = WriteBatch::from_data_unchecked(rec) else {
            continue;
        };
        let _ = write!(
            out,
            "{},{},{},{},",
            batch.sequence(),
            batch.count(),
            size,
            reader.last_record_offset()
        );
        for r in batch.records() {
            let Ok(r) = r else { break };
            match r {
                BatchRecord::Put { cf, key, value } => put_merge(&mut out, "PUT", cf, key, value, print_values),
                BatchRecord::Merge { cf, key, value } => put_merge(&mut out, "MERGE", cf, key, value, print_values),
                BatchRecord::WideColumnEntity { cf, key, value } => {
                    put_merge(&mut out, "PUT_ENTITY", cf, key, value, print_values)
                }
                BatchRecord::Delete { cf, key } => {
                    let _ = write!(out, "DELETE({cf}) : {} ", hex0x(key));
                }
                BatchRecord::SingleDelete { cf, key } => {
                    let _ = write!(out, "SINGLE_DELETE({cf}) : {} ", hex0x(key));
                }
                BatchRecord::DeleteRange { cf, begin, end } => {
                    let _ = write!(out, "DELETE_RANGE({cf}) : {} {} ", hex0x(begin), hex0x(end));
                }
                BatchRecord::Noop => out.push_str("NOOP "),
                BatchRecord::BeginPrepare { unprepare, .. } => {
                    let _ = write!(out, "BEGIN_PREPARE({unprepare}) ");
                }
                BatchRecord::EndPrepare(x) => {
                    let _ = write!(out, "END_PREPARE({}) ", hex0x(x));
                }
                BatchRecord::Commit(x) => {
                    let _ = write!(out, "COMMIT({}) ", hex0x(x));
                }
                BatchRecord::Rollback(x) => {
                    let _ = write!(out, "ROLLBACK({}) ", hex0x(x));
                }
                BatchRecord::LogData(_) => {}
                // ldb's handler has no callback for these: Iterate stops.
                BatchRecord::BlobIndex { .. }
                | BatchRecord::TimedPut { .. }
                | BatchRecord::CommitWithTimestamp { .. } => break,
            }
        }
        out.push('\n');
    }
    if let Some((off, msg)) = reader.corruption() {
        let _ = writeln!(
            err,
            "Corruption detected in log file Corruption: {msg} at offset {off} ({} corruption(s) skipped)",
            reader.skipped_corruptions()
        );
    }
    Ok((out, err))
}

fn put_merge(out: &mut String, op: &str, cf: u32, key: &[u8], value: &[u8], print_values: bool) {
    if print_values {
        let _ = write!(out, "{op}({cf}) : {} : {} ", hex0x(key), hex0x(value));
    } else {
        let _ = write!(out, "{op}({cf}) : {} ", hex0x(key));
    }
}

const DUMP_LEVELS: usize = 64;

struct CfState {
    name: String,
    log_number: u64,
    comparator: Option<String>,
    levels: Vec<Vec<FileMetaData>>,
    dropped: bool,
}

impl CfState {
    fn new(name: &str) -> CfState {
        CfState {
            name: name.to_string(),
            log_number: 0,
            comparator: None,
            levels: vec![Vec::new(); DUMP_LEVELS],
            dropped: false,
        }
    }
}

/// Bytewise internal-key order: user key ascending, then trailer descending.
fn ikey_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let split = |k: &[u8]| -> (Vec<u8>, u64) {
        if k.len() < 8 {
            return (k.to_vec(), 0);
        }
        let (u, t) = k.split_at(k.len() - 8);
        (u.to_vec(), u64::from_le_bytes(t.try_into().unwrap_or([0; 8])))
    };
    let (ua, ta) = split(a);
    let (ub, tb) = split(b);
    ua.cmp(&ub).then(tb.cmp(&ta))
}

/// `ldb manifest_dump [--verbose]` (keys as text; see [`dump_manifest_with`] for hex keys).
#[cfg(test)]
pub(crate) fn dump_manifest(data: &[u8], file_name: &str, verbose: bool) -> Result<String> {
    dump_manifest_with(data, file_name, verbose, false)
}

/// `ldb manifest_dump [--verbose] [--hex]`: every edit (if verbose), then per column family its
/// log number, comparator and files per level (64 levels, as ldb uses), then the global counters.
/// Log-level corruption (and undecodable edits) are errors.
pub(crate) fn dump_manifest_with(data: &[u8], file_name: &str, verbose: bool, hex: bool) -> Result<String> {
    let mut out = String::new();
    let mut reader = Reader::new(
        data.to_vec(),
        file_name,
        file_number(file_name),
        DBRecoveryMode::TolerateCorruptedTailRecords,
    );
    let mut cfs: BTreeMap<u32, CfState> = BTreeMap::new();
    cfs.insert(0, CfState::new("default"));
    let (mut log_number_seen, mut next_file, mut last_seq) = (false, None::<u64>, None::<u64>);
    let mut prev_log_number = 0u64;
    let mut max_cf = 0u32;
    let mut min_log_to_keep = 0u64;
    while let Some(rec) = reader.read_record()? {
        let edit = VersionEdit::decode(rec);
        let off = reader.last_record_offset();
        let edit = edit.map_err(|e| e.in_file(file_name, Some(off)))?;
        if verbose {
            out.push_str(&edit.debug_string(hex));
        }
        let id = edit.column_family;
        if let Some(name) = &edit.column_family_add {
            cfs.insert(id, CfState::new(name));
        }
        let Some(cf) = cfs.get_mut(&id) else {
            return Err(Error::corruption(
                file_name,
                Some(off),
                format!("edit for unknown column family {id}"),
            ));
        };
        if edit.column_family_drop {
            cf.dropped = true;
        }
        if let Some(c) = &edit.comparator {
            cf.comparator = Some(c.clone());
        }
        if let Some(n) = edit.log_number {
            log_number_seen = true;
            cf.log_number = cf.log_number.max(n);
        }
        for &(level, number) in &edit.deleted_files {
            if let Some(files) = cf.levels.get_mut(level as usize) {
                files.retain(|f| f.number != number);
            }
        }
        for (level, f) in &edit.new_files {
            let Some(files) = cf.levels.get_mut(*level as usize) else {
                return Err(Error::corruption(
                    file_name,
                    Some(off),
                    format!("file at level {level}"),
                ));
            };
            files.push(f.clone());
        }
        if let Some(n) = edit.next_file_number {
            next_file = Some(n);
        }
        if let Some(n) = edit.last_sequence {
            last_seq = Some(n);
        }
        if let Some(n) = edit.prev_log_number {
            prev_log_number = n;
        }
        if let Some(n) = edit.max_column_family {
            max_cf = max_cf.max(n);
        }
        if let Some(n) = edit.min_log_number_to_keep {
            min_log_to_keep = min_log_to_keep.max(n);
        }
    }
    if !log_number_seen || next_file.is_none() || last_seq.is_none() {
        let mut missing = Vec::new();
        if !log_number_seen {
            missing.push("log_file_number");
        }
        if next_file.is_none() {
            missing.push("next_file_number");
        }
        if last_seq.is_none() {
            missing.push("last_sequence");
        }
        let _ = writeln!(out, "Corruption: no {} entry in MANIFEST", missing.join(", "));
        return Ok(out);
    }
    let mut version = 1u64;
    for (id, cf) in cfs.iter_mut() {
        if cf.dropped {
            continue;
        }
        let _ = writeln!(
            out,
            "--------------- Column family \"{}\"  (ID {id}) --------------",
            cf.name
        );
        let _ = writeln!(out, "log number: {}", cf.log_number);
        match cf.comparator.as_deref() {
            None | Some("leveldb.BytewiseComparator") => {
                out.push_str("comparator: leveldb.BytewiseComparator\n");
            }
            Some(c) => {
                let _ = writeln!(out, "comparator: <{c}>, but the comparator object is not available.");
            }
        }
        for (level, files) in cf.levels.iter_mut().enumerate() {
            if level == 0 {
                files.sort_by(|a, b| {
                    b.largest_seqno
                        .cmp(&a.largest_seqno)
                        .then(b.smallest_seqno.cmp(&a.smallest_seqno))
                        .then(b.number.cmp(&a.number))
                });
            } else {
                files.sort_by(|a, b| ikey_cmp(&a.smallest, &b.smallest));
            }
            let _ = writeln!(out, "--- level {level} --- version# {version} ---");
            for f in files.iter() {
                let _ = writeln!(
                    out,
                    " {}:{}[{} .. {}][{} .. {}]",
                    f.number,
                    f.file_size,
                    f.smallest_seqno,
                    f.largest_seqno,
                    ikey_debug(&f.smallest, hex),
                    ikey_debug(&f.largest, hex)
                );
            }
        }
        version += 1;
    }
    let _ = writeln!(
        out,
        "next_file_number {} last_sequence {}  prev_log_number {} max_column_family {} min_log_number_to_keep {}",
        next_file.unwrap_or(0) + 1,
        last_seq.unwrap_or(0),
        prev_log_number,
        max_cf,
        min_log_to_keep
    );
    Ok(out)
}
