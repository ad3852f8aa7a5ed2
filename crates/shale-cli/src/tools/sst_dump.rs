//! `shale sst_dump`: RocksDB's `sst_dump` argument syntax (`tools/sst_dump_tool.cc`); the work is
//! done by the library through [`super::inspect::sst_dump`].

use std::io::Write;
use std::path::PathBuf;

use super::inspect::{self, SstDumpArgs};
use super::ldb::from_hex;

const HELP: &str = "sst_dump --file=<data_dir_OR_sst_file> [--command=check|scan|raw|verify|identify]
    --file=<data_dir_OR_sst_file>
      Path to SST file or directory containing SST files

    --command=check|scan|raw|verify|identify
        check: Iterate over entries in files but don't print anything except if an error is encountered (default command)
        scan: Iterate over entries in files and print them to screen
        raw: Dump all the table contents to <file_name>_dump.txt
        verify: Iterate all the blocks in files verifying checksum to detect possible corruption but don't print anything except if a corruption is encountered
        identify: Reports a file is a valid SST file or lists all valid SST files under a directory

    --output_hex
      Can be combined with scan command to print the keys and values in Hex

    --decode_blob_index
      Decode blob indexes and print them in a human-readable format during scans.

    --from=<user_key>
      Key to start reading from when executing check|scan

    --to=<user_key>
      Key to stop reading at when executing check|scan

    --read_num=<num>
      Maximum number of entries to read when executing check|scan

    --verify_checksum
      Verify file checksum when executing check|scan

    --input_key_hex
      Can be combined with --from and --to to indicate that these values are encoded in Hex

    --show_properties
      Print table properties after iterating over the file when executing check|scan|raw|identify
";

/// Parse `sst_dump` arguments; `Err((message, exit_code))` when they are unusable.
pub fn parse(args: &[String]) -> Result<Vec<SstDumpArgs>, (String, i32)> {
    let mut a = SstDumpArgs {
        command: "check".into(),
        read_num: -1,
        ..Default::default()
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let (mut from, mut to) = (None::<String>, None::<String>);
    let mut i = 0;
    while i < args.len() {
        let s = args[i].as_str();
        i += 1;
        if let Some(v) = s.strip_prefix("--file=") {
            files.push(PathBuf::from(v));
        } else if s == "--output_hex" {
            a.output_hex = true;
        } else if s == "--input_key_hex" {
            a.input_key_hex = true;
        } else if s == "--decode_blob_index" {
            a.decode_blob_index = true;
        } else if let Some(v) = s.strip_prefix("--read_num=") {
            a.read_num = v.parse().map_err(|_| ("read_num must be numeric".to_string(), 1))?;
        } else if s == "--verify_checksum" {
            a.verify_checksum = true;
        } else if let Some(v) = s.strip_prefix("--command=") {
            a.command = v.to_string();
        } else if let Some(v) = s.strip_prefix("--from=") {
            from = Some(v.to_string());
        } else if let Some(v) = s.strip_prefix("--to=") {
            to = Some(v.to_string());
        } else if s == "--show_properties" {
            a.show_properties = true;
        } else if s == "--" {
            files.extend(args[i..].iter().map(PathBuf::from));
            break;
        } else if s.starts_with('-') {
            return Err((format!("Unrecognized argument '{s}'\n\n{HELP}"), 1));
        } else {
            files.push(PathBuf::from(s));
        }
    }
    if !matches!(a.command.as_str(), "check" | "scan" | "raw" | "verify" | "identify") {
        return Err((format!("Unknown command '{}'\n\n{HELP}", a.command), 1));
    }
    let conv = |k: String| -> Result<Vec<u8>, (String, i32)> {
        if a.input_key_hex {
            from_hex(&k).map_err(|e| (e, 1))
        } else {
            Ok(k.into_bytes())
        }
    };
    a.from = from.map(conv).transpose()?;
    a.to = to.map(conv).transpose()?;
    if files.is_empty() {
        return Err((format!("file or directory must be specified.\n\n{HELP}"), 1));
    }
    Ok(files
        .into_iter()
        .map(|f| SstDumpArgs { file: f, ..a.clone() })
        .collect())
}

/// Entry point of `shale sst_dump`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help") {
        print!("{HELP}");
        return 0;
    }
    if args.iter().any(|a| a == "--version") {
        println!("sst_dump from Shale {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let jobs = match parse(args) {
        Ok(j) => j,
        Err((m, code)) => {
            eprint!("{m}");
            if !m.ends_with('\n') {
                eprintln!();
            }
            return code;
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut code = 0;
    for j in &jobs {
        if let Err(e) = inspect::sst_dump(j, &mut out) {
            let _ = out.flush();
            eprintln!("{}: {e}", j.file.display());
            code = 1;
        }
    }
    let _ = out.flush();
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_sst_dump_flags() {
        let j = parse(&a(&[
            "--file=/x/000001.sst",
            "--command=scan",
            "--show_properties",
            "--from=a",
            "--to=b",
            "--read_num=5",
            "--output_hex",
        ]))
        .unwrap();
        assert_eq!(j.len(), 1);
        assert_eq!(j[0].command, "scan");
        assert!(j[0].show_properties && j[0].output_hex);
        assert_eq!(j[0].from.as_deref(), Some(&b"a"[..]));
        assert_eq!(j[0].to.as_deref(), Some(&b"b"[..]));
        assert_eq!(j[0].read_num, 5);
        let j = parse(&a(&["--file=/x", "--input_key_hex", "--from=0x6162"])).unwrap();
        assert_eq!(j[0].command, "check");
        assert_eq!(j[0].from.as_deref(), Some(&b"ab"[..]));
        assert!(parse(&a(&["--file=/x", "--bogus"]))
            .unwrap_err()
            .0
            .starts_with("Unrecognized argument '--bogus'"));
        assert!(parse(&a(&["--command=scan"]))
            .unwrap_err()
            .0
            .starts_with("file or directory must be specified."));
        assert!(parse(&a(&["--file=/x", "--command=explode"])).is_err());
        assert!(parse(&a(&["--file=/x", "--read_num=z"])).is_err());
    }
}
