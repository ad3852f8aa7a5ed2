//! `shale`: the command-line tool of Shale.
//!
//! * `shale bench ...`    — db_bench (same flags, workloads, keys, values and output; `bench/`)
//! * `shale ldb ...`      — RocksDB's ldb (`tools/ldb.rs`)
//! * `shale sst_dump ...` — RocksDB's sst_dump (`tools/sst_dump.rs`)
//! * `shale stress ...`   — db_stress-style stress and crash tests (`stress/`)
//! * `shale cuckoo_bench` — RocksDB's CuckooTable read benchmark (`bench/cuckoo.rs`)
//! * `shale serve ...`    — one node of a replicated key-value service (Raft, `serve/mod.rs`)
//! * `shale serve-bench`  — its load generator (`serve/bench.rs`)
//!
//! `flags.rs` (the gflags-style parser) and `histogram.rs` (RocksDB's latency histogram, used by
//! `bench` and `ldb`) are shared by the commands.
//!
//! When the binary is invoked through a link named `db_bench`, `ldb` or `sst_dump`, it behaves
//! as that tool directly.

mod bench;
mod flags;
mod histogram;
mod serve;
mod stress;
mod tools;

const USAGE: &str = "usage: shale <command> [args]

commands:
  bench     db_bench-compatible benchmark   (shale bench --benchmarks=fillseq,readrandom --num=1000000)
  ldb       RocksDB ldb-compatible tool     (shale ldb --db=/path get KEY)
  sst_dump  RocksDB sst_dump-compatible tool (shale sst_dump --file=/path/000012.sst --command=scan)
  stress    db_stress-style stress test      (shale stress --db=/path --threads=4 --crash_test --duration=60)
  cuckoo_bench  RocksDB's CuckooTable read benchmark (shale cuckoo_bench --num=10000000 --dir=/dev/shm)
  serve     a node of a replicated key-value service (shale serve --id=1 --db=/path --addr=127.0.0.1:21001)
  serve-bench  write throughput and latency of `shale serve` clusters on loopback (shale serve-bench --nodes=3)

Run `shale <command> --help` for the flags of a command.
";

fn run(argv: &[String]) -> i32 {
    let prog = argv
        .first()
        .map(|s| s.rsplit('/').next().unwrap_or(s).to_string())
        .unwrap_or_default();
    match prog.as_str() {
        "db_bench" => return bench::main(&argv[1..]),
        "ldb" => return tools::ldb::main(&argv[1..]),
        "sst_dump" => return tools::sst_dump::main(&argv[1..]),
        _ => {}
    }
    let Some(cmd) = argv.get(1) else {
        eprint!("{USAGE}");
        return 1;
    };
    let rest = &argv[2..];
    match cmd.as_str() {
        "bench" | "db_bench" => bench::main(rest),
        "ldb" => tools::ldb::main(rest),
        "sst_dump" => tools::sst_dump::main(rest),
        "stress" | "db_stress" => stress::main(rest),
        "cuckoo_bench" => bench::cuckoo::main(rest),
        "serve" => serve::main(rest),
        "serve-bench" => serve::bench::main(rest),
        "--help" | "-h" | "help" => {
            print!("{USAGE}");
            0
        }
        "--version" | "-V" => {
            println!("shale {}", env!("CARGO_PKG_VERSION"));
            0
        }
        other => {
            eprintln!("shale: unknown command '{other}'\n");
            eprint!("{USAGE}");
            1
        }
    }
}

fn main() {
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let code = run(&argv);
    std::process::exit(code);
}
