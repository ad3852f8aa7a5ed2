//! Helpers shared by the tests that check Shale against real RocksDB (the modules of
//! `compatibility/`, and `checkpoint.rs`, `two_phase.rs`, `wal_zero_tail.rs`): finding RocksDB's
//! tools and a Python with `rocksdict`, running them, and reading what they print.
//!
//! A missing tool is a loud skip (the test returns early after a banner on stderr); with
//! `SHALE_REQUIRE_ROCKSDB=1` (set by `.ci/run`) it fails the test instead. `SHALE_PYTHON` names
//! the Python to use (default: `python3` on `PATH`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use shale::DB;

/// Live key → value content of a database.
pub type Kv = BTreeMap<Vec<u8>, Vec<u8>>;

/// In the list given to [`find`]: a Python that can `import rocksdict`.
pub const ROCKSDICT: &str = "python3 with rocksdict (set SHALE_PYTHON)";

/// `name` in a directory of `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// `SHALE_PYTHON` (else `python3`), if it can import rocksdict.
fn rocksdict_python() -> Option<PathBuf> {
    let python = std::env::var_os("SHALE_PYTHON")
        .map(PathBuf::from)
        .or_else(|| which("python3"))?;
    let ok = Command::new(&python)
        .args(["-c", "import rocksdict"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then_some(python)
}

fn required() -> bool {
    std::env::var("SHALE_REQUIRE_ROCKSDB")
        .map(|v| v == "1")
        .unwrap_or(false)
}

/// Reports the missing tools: a panic under `SHALE_REQUIRE_ROCKSDB=1`, else a loud banner.
fn skip(missing: &[&str]) {
    // The test's name (libtest names each test's thread after it), not the binary's: the
    // compatibility tests share the `engine` binary.
    let msg = format!(
        "RocksDB compatibility test `{}` needs: {}",
        std::thread::current().name().unwrap_or(env!("CARGO_CRATE_NAME")),
        missing.join(", ")
    );
    if required() {
        panic!("{msg} (SHALE_REQUIRE_ROCKSDB=1)");
    }
    let mut how = Vec::new();
    if missing.iter().any(|m| *m != ROCKSDICT) {
        how.push("install Debian's rocksdb-tools");
    }
    if missing.contains(&ROCKSDICT) {
        how.push("`pip install rocksdict`");
    }
    eprintln!("\n************************************************************");
    eprintln!("*** SKIPPED: {msg}");
    eprintln!("*** {}, or run .ci/run", how.join(" and "));
    eprintln!("************************************************************\n");
}

/// The paths of all of `names` (tool names on `PATH`, or [`ROCKSDICT`] for the Python), in
/// order; `None` after reporting every missing one (see [`skip`]).
pub fn find<const N: usize>(names: [&str; N]) -> Option<[PathBuf; N]> {
    let found = names.map(|n| if n == ROCKSDICT { rocksdict_python() } else { which(n) });
    let missing: Vec<&str> = names
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        skip(&missing);
        return None;
    }
    Some(found.map(|f| f.expect("checked above")))
}

/// One tool on `PATH` (see [`find`]).
pub fn tool(name: &str) -> Option<PathBuf> {
    find([name]).map(|[p]| p)
}

/// A Python that imports rocksdict (see [`find`]).
pub fn python_with_rocksdict() -> Option<PathBuf> {
    tool(ROCKSDICT)
}

/// Runs `cmd`, fails the test unless it succeeds, and returns its standard output.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Lower-case hex digits, no prefix.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes of hex digits (either case), with or without a leading `0x`.
pub fn unhex(s: &str) -> Vec<u8> {
    let s = s.trim().trim_start_matches("0x");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Copies the regular files of a database directory except `LOCK`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() && e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// `ldb scan --hex` output: lines `0xKEY : 0xVALUE`.
pub fn parse_scan(out: &str) -> Kv {
    out.lines()
        .filter(|l| l.contains(" : "))
        .map(|l| {
            let (k, v) = l.split_once(" : ").unwrap();
            (unhex(k), unhex(v))
        })
        .collect()
}

/// `ldb scan --hex` of a database, on a copy (ldb opens read-write).
pub fn ldb_scan(ldb: &Path, db: &Path) -> Kv {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(db, copy.path());
    parse_scan(&run(Command::new(ldb)
        .arg(format!("--db={}", copy.path().display()))
        .args(["scan", "--hex"])))
}

/// `ldb get --hex` of one key, on a copy of the database.
pub fn ldb_get(ldb: &Path, db: &Path, key: &[u8]) -> Vec<u8> {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(db, copy.path());
    let out = run(Command::new(ldb).arg(format!("--db={}", copy.path().display())).args([
        "get",
        "--hex",
        &format!("0x{}", hex(key)),
    ]));
    unhex(&out)
}

/// The `.sst` files of a directory, sorted.
pub fn sst_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    v.sort();
    v
}

/// Everything a Shale database iterates over.
pub fn shale_dump(db: &DB) -> Kv {
    db.iterator(shale::IteratorMode::Start)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// Equal maps; on a difference, reports the sizes and the first differing entry (not the whole
/// map).
pub fn assert_same(got: &Kv, expect: &Kv, ctx: &str) {
    if got != expect {
        let first = got
            .iter()
            .zip(expect.iter())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("got {:x?} expected {:x?}", a, b));
        panic!(
            "{ctx}: {} entries vs {} expected; first difference: {first:?}",
            got.len(),
            expect.len()
        );
    }
}
