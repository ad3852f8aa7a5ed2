//! The commands that inspect a database's files offline — `ldb manifest_dump`, `ldb dump_wal`,
//! `ldb checkconsistency` and `sst_dump` — as calls into the library's `shale::tools`: the
//! argument structs carry everything the commands parse, and each function runs the library's
//! tool and writes its text to the command's output.

use std::io::Write;
use std::path::PathBuf;

use shale::Options;

/// `ldb manifest_dump [--path=MANIFEST] [--verbose] [--hex] [--json]` (with `--db` when no path:
/// the MANIFEST named by `<db>/CURRENT`).
#[derive(Debug, Clone, Default)]
pub struct ManifestDumpArgs {
    pub db: Option<PathBuf>,
    pub path: Option<PathBuf>,
    pub verbose: bool,
    pub hex: bool,
    #[allow(dead_code)] // parsed for ldb compatibility; the library's tools do not use it
    pub json: bool,
}

/// `ldb dump_wal --walfile=PATH [--header] [--print_value] [--only_print_seqno_gaps]`.
#[derive(Debug, Clone, Default)]
pub struct DumpWalArgs {
    pub walfile: PathBuf,
    pub print_header: bool,
    pub print_values: bool,
    #[allow(dead_code)] // parsed for ldb compatibility; the library's tools do not use it
    pub only_print_seqno_gaps: bool,
    #[allow(dead_code)]
    pub hex: bool,
}

/// `sst_dump --file=PATH --command=check|scan|raw|verify|identify ...`.
#[derive(Debug, Clone, Default)]
pub struct SstDumpArgs {
    /// A table file or a directory of them.
    pub file: PathBuf,
    /// `check` (default), `scan`, `raw`, `verify`, `identify`.
    pub command: String,
    pub show_properties: bool,
    pub verify_checksum: bool,
    pub output_hex: bool,
    pub input_key_hex: bool,
    /// Print blob indexes in RocksDB's text form (`--decode_blob_index`).
    pub decode_blob_index: bool,
    pub from: Option<Vec<u8>>,
    pub to: Option<Vec<u8>>,
    /// Stop after this many entries (`--read_num`, -1 = all).
    pub read_num: i64,
}

fn write_all(out: &mut dyn Write, s: &str) -> Result<(), String> {
    out.write_all(s.as_bytes()).map_err(|e| e.to_string())
}

/// Print the MANIFEST's version edits as `ldb manifest_dump` does.
pub fn manifest_dump(args: &ManifestDumpArgs, out: &mut dyn Write) -> Result<(), String> {
    let path = match (&args.path, &args.db) {
        (Some(p), _) => p.clone(),
        (None, Some(d)) => d.clone(),
        (None, None) => return Err("manifest_dump needs --path=MANIFEST or --db=PATH".into()),
    };
    let text = shale::tools::manifest_dump(&path, args.verbose, args.hex).map_err(|e| e.to_string())?;
    write_all(out, &text)
}

/// Print a WAL's records as `ldb dump_wal` does.
pub fn dump_wal(args: &DumpWalArgs, out: &mut dyn Write) -> Result<(), String> {
    let (text, err) =
        shale::tools::dump_wal(&args.walfile, args.print_header, args.print_values).map_err(|e| e.to_string())?;
    if !err.is_empty() {
        eprint!("{err}");
    }
    write_all(out, &text)
}

/// Open the DB and verify every live file exists with the size the MANIFEST records and that
/// its blocks pass their checksums (`ldb checkconsistency`); the caller prints `OK`.
pub fn check_consistency(opts: &Options, db: &std::path::Path) -> Result<(), String> {
    shale::tools::check_consistency(db, opts)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Run `sst_dump` on a file or directory.
pub fn sst_dump(args: &SstDumpArgs, out: &mut dyn Write) -> Result<(), String> {
    let o = shale::tools::SstDumpOptions {
        command: args.command.clone(),
        show_properties: args.show_properties,
        from: args.from.clone(),
        to: args.to.clone(),
        read_num: if args.read_num < 0 {
            None
        } else {
            Some(args.read_num as u64)
        },
        output_hex: args.output_hex,
        verify_checksum: args.verify_checksum,
        decode_blob_index: args.decode_blob_index,
    };
    let text = shale::tools::sst_dump(&args.file, &o).map_err(|e| e.to_string())?;
    write_all(out, &text)
}
