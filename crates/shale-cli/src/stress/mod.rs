//! `shale stress`: a db_stress-style randomized stress test with an expected-state oracle.
//!
//! N threads run a random mix of writes (put, delete, single_delete, delete_range, merge with
//! `uint64add`, write batches) and reads (get, multi_get, bounded iterator scans in both
//! directions, snapshot reads), plus flush, compact_range and reopen, over the keys
//! `0..max_key`. Every read is checked against the expected state.
//!
//! ## The expected state (oracle)
//! A file (`--expected_values_path`, default `<db>.expected`) with one 8-byte entry per key:
//! the committed value id (0 = absent) and, while a write is in flight, a pending flag and the
//! new value id. A write marks its keys pending (pwrite) *before* the DB write and commits them
//! after it is acknowledged, so a process killed at any moment leaves a file from which the next
//! run knows, for every key, the one value it must hold, or the two it may hold (old or new).
//! Values are derived from (key, value id), so any value read can be checked and decoded.
//!
//! On start, when the expected state exists, every key is verified (get + a full scan); pending
//! keys are settled to what the DB holds. Runs with `disable_wal` mark the state "lossy" first:
//! after a crash of such a run unflushed writes may be gone, so the verifier then only requires
//! each value to be a well-formed value of its key.
//!
//! Column families (`--column_families=N`): every family holds the whole key space, the
//! expected state has one entry per (family, key), and a value is derived from its family too
//! (a value read from another family does not decode). Besides the operations on one family, a
//! batch writes one key in every family (the same value id), and a read takes one snapshot and
//! reads the key in every family: the families must agree; after a crash, a batch across
//! families must have survived in all of them or in none.
//!
//! Key classes: the top eighth of the key space is the "no-overwrite" region where the only
//! writes are put-if-absent and single_delete-if-present (RocksDB's contract for SingleDelete);
//! delete_range and merge never touch it.
//!
//! Transactions (`--use_txn`, `--use_optimistic_txn`): every write is a transaction of a
//! `TransactionDB` or an `OptimisticTransactionDB`, with reads for update, savepoints and
//! rollbacks; the oracle takes only what committed, and counters incremented by every thread
//! catch lost updates (`txn`).
//!
//! This module parses the flags and dispatches. The parts import one way (none imports
//! this module): `run` (the stress run, with `verify`, `txn`, `txn_files`, `ingest` and
//! `prefix`), `crash` (`--crash_test`, SIGKILL loop), `power_loss_mt` and `power_loss`
//! (`--power_loss`, simulated power loss, with `power_loss_ingest`), all over `model` (keys,
//! values, the oracle, randomized options), with `fault_fs` and `hook_fs`. `raft` (`--raft`, with
//! `raft_model`) stresses the Raft store of `shale-raft` instead of a plain database.

mod crash;
mod fault_fs;
mod hook_fs;
mod ingest;
mod model;
mod power_loss;
mod power_loss_ingest;
mod power_loss_mt;
mod prefix;
mod raft;
mod raft_model;
mod run;
mod secondary;
mod txn;
mod txn_files;
mod verify;

use crate::flags::{help_text, FlagDef, Flags, Kind};

const fn f(name: &'static str, kind: Kind, default: &'static str, help: &'static str) -> FlagDef {
    FlagDef {
        name,
        kind,
        default,
        help,
    }
}

pub const FLAGS: &[FlagDef] = &[
    f("db", Kind::Str, "", "database directory (required)"),
    f("expected_values_path", Kind::Str, "", "expected-state file (default: <db>.expected)"),
    f("threads", Kind::Int32, "4", "worker threads"),
    f("ops_per_thread", Kind::Uint64, "20000", "operations per thread (when --duration is 0)"),
    f("max_key", Kind::Uint64, "10000", "keys are 0..max_key"),
    f("seed", Kind::Uint64, "2341234", "seed of the operation mix and of the randomized options"),
    f("duration", Kind::Uint64, "0", "seconds to run (0: run --ops_per_thread operations)"),
    f("reopen", Kind::Uint64, "2", "times the database is closed and reopened during the run"),
    f("destroy_db_initially", Kind::Bool, "false", "destroy the database and the expected state first"),
    f("verify_only", Kind::Bool, "false", "only verify the database against the expected state"),
    f("verify", Kind::Bool, "true", "verify an existing expected state before running"),
    f("sync", Kind::Int32, "-1", "WAL sync: 0 never, 1 every write, 2 one write in 16, -1 random per seed"),
    f("disable_wal", Kind::Int32, "-1", "0/1, or -1 random per seed (1 run in 6)"),
    f("prefix_change_one_in", Kind::Uint64, "500", "with a prefix extractor: 1 in N operations switches every family to another one with set_options (0: never)"),
    f("prefix_size", Kind::Int32, "0", "a fixed prefix extractor of this many bytes (-1: by the seed, none, 6 or 7): prefix filters in tables and memtables, scans as prefix seeks or with auto_prefix_mode"),
    f("dynamic_levels", Kind::Int32, "-1", "level_compaction_dynamic_level_bytes: 0/1, -1 random per seed (the crash test: per DB), -2 (crash test) random per run"),
    f("crash_test", Kind::Bool, "false", "crash test: run this tool as a child and SIGKILL it repeatedly"),
    f("kill_interval", Kind::Double, "2", "crash test: mean seconds between SIGKILLs"),
    f("crash_kill_points", Kind::Str, "", "crash test: the kill points its odd runs cycle through, comma-separated (e.g. wal.append_torn,wal.append; empty: all of them)"),
    f("raft", Kind::Bool, "false", "the Raft store of `shale serve` (log, vote, state machine, snapshots) against a model, with crashes and power losses on an in-memory file system (--power_loss: power losses only; --max_key caps at 64; --inject_bug=wal_no_sync tests the tester)"),
    f("power_loss", Kind::Bool, "false", "simulated power-loss test on an in-memory file system"),
    f("kill_odds", Kind::Uint64, "0", "kill point: end the process at 1 in N file-system operations that change durable state (0: off)"),
    f("kill_point", Kind::Str, "", "with --kill_odds: only this point, <file>.<op> (e.g. wal.sync, sst.append, manifest.sync, current.rename, other.syncdir), or wal.append_torn: in the middle of storing a WAL flush (a part of its bytes copied)"),
    f("inject_bug", Kind::Str, "", "test the tester: wal_no_sync | wal_no_flush (a broken durability step), ingest_forget (the oracle keeps the old values of an ingested file), txn_rollback_applied (the oracle takes a rolled-back transaction's writes) | txn_no_get_for_update (counters read without get_for_update: lost updates) | txn_split_commit (a commit writes one key on its own first: torn by a crash)"),
    f("use_txn", Kind::Bool, "false", "writes go through transactions of a TransactionDB (row locks; db_stress's flag); transaction counters check for lost updates"),
    f("use_optimistic_txn", Kind::Bool, "false", "writes go through transactions of an OptimisticTransactionDB (validation at commit)"),
    f("txn_write_policy", Kind::Int32, "0", "with --use_txn: 0 write committed (the only policy Shale has; db_stress's 1 write prepared and 2 write unprepared are refused)"),
    f("table_format", Kind::Int32, "-1", "table format of new files: 0 block-based, 1 plain (no delete_range, forward scans only), -1 random per seed (1 in 6 plain; the crash test: per DB)"),
    f("read_fault_one_in", Kind::Uint64, "0", "inject EIO into 1 in N reads / opens for reading (0: off)"),
    f("write_fault_one_in", Kind::Uint64, "0", "inject EIO, ENOSPC or a short write into 1 in N appends, flushes, syncs, creates, renames, removals, directory syncs (0: off)"),
    f("bitflip_read_one_in", Kind::Uint64, "0", "flip one bit in 1 in N table-file reads (0: off; off when the checksum type is none)"),
    f("column_families", Kind::Int32, "1", "column families (db_stress's flag): each holds every key; batches across all of them are checked all or nothing; -1 random per seed (1 to 4; the crash test: per DB)"),
    f("ingest_external_file_one_in", Kind::Uint64, "0", "1 in N operations writes a run of keys (puts and deletes) into an external file with SstFileWriter and ingests it (db_stress's flag; 0: off; not with transactions or plain tables)"),
    f("checkpoint_one_in", Kind::Uint64, "0", "1 in N operations creates a checkpoint, opens it read-only and checks the keys it held locked meanwhile (db_stress's flag; 0: off; not with transactions)"),
    f("secondary_catch_up_one_in", Kind::Uint64, "0", "1 in N operations has a secondary instance of the DB catch up (DB::open_as_secondary, kept in <db>.stress-secondary) and checks the keys it held locked meanwhile (db_stress's flag; 0: off; not with transactions; keys unchecked with disable_wal)"),
    f("wal_recovery_mode", Kind::Int32, "-1", "WAL recovery mode: 0 tolerate corrupted tail records, 1 absolute consistency (after a crash, a torn WAL tail must be refused as a Corruption naming the WAL and offset; the run then opens tolerating it), 2 point in time, 3 skip any corrupted records, -1 random per seed among all four (reopens after a clean close use 1)"),
    f("large_value_one_in", Kind::Uint64, "0", "1 in about N padded values is large, 4 KiB to 1 MiB, so that kills land inside the copy of a WAL record (0: values up to 107 bytes; the same N for every run on a database)"),
    f("wal_mapped_appends", Kind::Int32, "-1", "set_wal_mapped_appends: 0/1, -1 random per seed (3 runs in 4 on)"),
];

const USAGE: &str = "usage: shale stress --db=DIR [flags]
       shale stress --crash_test --db=DIR --duration=S --kill_interval=S [flags]
       shale stress --power_loss --duration=S [--seed=N]
       shale stress --raft [--power_loss] --duration=S [--seed=N]

";

/// Parse flags, accepting `--kill-interval` for `--kill_interval`.
pub fn parse(args: &[String]) -> Result<Flags, String> {
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix("--") {
            Some(body) if !body.is_empty() => {
                let (n, v) = match body.split_once('=') {
                    Some((n, v)) => (n.replace('-', "_"), format!("={v}")),
                    None => (body.replace('-', "_"), String::new()),
                };
                format!("--{n}{v}")
            }
            _ => a.clone(),
        })
        .collect();
    let fl = Flags::parse(FLAGS, &args).map_err(|e| e.to_string())?;
    let threads = fl.i64("threads");
    if !(1..=1024).contains(&threads) {
        return Err(format!("ERROR: --threads must be in 1..=1024, got {threads}"));
    }
    let mk = fl.u64("max_key");
    if !(1..=(1 << 26)).contains(&mk) {
        return Err(format!("ERROR: --max_key must be in 1..=67108864, got {mk}"));
    }
    if !(-1..=2).contains(&fl.i64("sync")) {
        return Err(format!("ERROR: --sync must be -1, 0, 1 or 2, got {}", fl.i64("sync")));
    }
    if !(-2..=1).contains(&fl.i64("dynamic_levels")) {
        return Err(format!(
            "ERROR: --dynamic_levels must be -2, -1, 0 or 1, got {}",
            fl.i64("dynamic_levels")
        ));
    }
    if !(-1..=1).contains(&fl.i64("disable_wal")) {
        return Err(format!(
            "ERROR: --disable_wal must be -1, 0 or 1, got {}",
            fl.i64("disable_wal")
        ));
    }
    let ki = fl.f64("kill_interval");
    if !(ki > 0.0 && ki <= 3600.0) {
        return Err(format!("ERROR: --kill_interval must be in (0, 3600] seconds, got {ki}"));
    }
    let txn = fl.bool("use_txn") || fl.bool("use_optimistic_txn");
    match fl.str("inject_bug") {
        "" | "wal_no_sync" | "wal_no_flush" => {}
        "ingest_forget" if fl.u64("ingest_external_file_one_in") > 0 && !txn => {}
        "ingest_forget" => {
            return Err(
                "ERROR: --inject_bug=ingest_forget needs --ingest_external_file_one_in (without transactions)".into(),
            )
        }
        "txn_rollback_applied" | "txn_no_get_for_update" | "txn_split_commit" if txn => {}
        "txn_rollback_applied" | "txn_no_get_for_update" | "txn_split_commit" => {
            return Err(format!(
                "ERROR: --inject_bug={} needs --use_txn or --use_optimistic_txn",
                fl.str("inject_bug")
            ))
        }
        b => {
            return Err(format!(
            "ERROR: --inject_bug: unknown bug '{b}' (wal_no_sync, wal_no_flush, ingest_forget, txn_rollback_applied, \
                 txn_no_get_for_update, txn_split_commit)"
        ))
        }
    }
    if fl.bool("use_txn") && fl.bool("use_optimistic_txn") {
        return Err("ERROR: --use_txn and --use_optimistic_txn are exclusive".into());
    }
    if fl.i64("txn_write_policy") != 0 {
        return Err(format!(
            "ERROR: --txn_write_policy={}: only 0 (write committed) is supported (no write-prepared or \
             write-unprepared transactions)",
            fl.i64("txn_write_policy")
        ));
    }
    if txn && fl.i64("disable_wal") == 1 {
        return Err("ERROR: --use_txn / --use_optimistic_txn need the WAL (--disable_wal=1 given)".into());
    }
    if !(-1..=1).contains(&fl.i64("table_format")) {
        return Err(format!(
            "ERROR: --table_format must be -1, 0 or 1, got {}",
            fl.i64("table_format")
        ));
    }
    if !(-1..=3).contains(&fl.i64("wal_recovery_mode")) {
        return Err(format!(
            "ERROR: --wal_recovery_mode must be -1, 0, 1, 2 or 3, got {}",
            fl.i64("wal_recovery_mode")
        ));
    }
    let cf = fl.i64("column_families");
    if cf != -1 && !(1..=16).contains(&cf) {
        return Err(format!("ERROR: --column_families must be -1 or in 1..=16, got {cf}"));
    }
    if fl.bool("crash_test") && fl.bool("power_loss") {
        return Err("ERROR: --crash_test and --power_loss are exclusive".into());
    }
    if fl.bool("raft") && (fl.bool("crash_test") || txn) {
        return Err("ERROR: --raft runs on its own (not with --crash_test, --use_txn or --use_optimistic_txn)".into());
    }
    if fl.bool("raft") && !matches!(fl.str("inject_bug"), "" | "wal_no_sync" | "wal_no_flush") {
        return Err("ERROR: --raft takes --inject_bug=wal_no_sync or wal_no_flush only".into());
    }
    if !fl.bool("power_loss") && !fl.bool("raft") && fl.str("db").is_empty() {
        return Err("ERROR: --db is required".into());
    }
    if fl.bool("crash_test") && fl.u64("duration") == 0 {
        return Err("ERROR: --crash_test needs --duration (seconds)".into());
    }
    Ok(fl)
}

pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}flags:\n{}", help_text(FLAGS));
        return 0;
    }
    let fl = match parse(args) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("shale stress: {e}");
            return 1;
        }
    };
    model::set_large_value_one_in(fl.u64("large_value_one_in"));
    model::set_wal_mapped_flag(fl.i64("wal_mapped_appends"));
    if fl.bool("crash_test") {
        return crash::crash_test(&fl);
    }
    if fl.bool("raft") {
        return match raft::raft_stress(&fl) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("shale stress --raft: FAILED: {e}");
                1
            }
        };
    }
    if fl.bool("power_loss") {
        return power_loss_test(&fl);
    }
    match run::run(&fl) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("shale stress: FAILED: {e} (seed {})", fl.u64("seed"));
            1
        }
    }
}

/// `--power_loss`: the single-threaded test, or the multi-threaded one with `--threads` > 1.
fn power_loss_test(fl: &Flags) -> i32 {
    let r = if fl.i64("threads") > 1 {
        power_loss_mt::power_loss_mt(fl)
    } else {
        power_loss::power_loss(fl)
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("shale stress --power_loss: FAILED: {e}");
            1
        }
    }
}
