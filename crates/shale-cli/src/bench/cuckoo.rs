//! `shale cuckoo_bench`: RocksDB's CuckooTable read benchmark (`cuckoo_table_reader_test
//! --enable_perf`): lookups of 8-byte keys with 4-byte values in files on tmpfs at four
//! utilizations, single Gets and prefetching batches, with and without the identity hash.

use std::io::Write;
use std::path::PathBuf;

use shale::tools::cuckoo::{cuckoo_read_bench, CuckooBenchOptions};

const HELP: &str =
    "usage: shale cuckoo_bench [--num=N] [--dir=PATH] [--identity_as_first_hash=0|1] [--batch_sizes=0,10,25,50,100]

  --num                     keys at 93.75% utilization (rounded up so the table is a power of two
                            of buckets; default 100000000 gives RocksDB's 125829120)
  --dir                     directory for the files (default /dev/shm)
  --identity_as_first_hash  run only with (1) or without (0) the identity first hash (default: both)
  --batch_sizes             batch sizes to time; 0 is single Gets (default 0,10,25,50,100)
";

fn parse(args: &[String]) -> Result<CuckooBenchOptions, String> {
    let mut o = CuckooBenchOptions::default();
    for a in args {
        let a = a.trim_start_matches('-');
        let (name, value) = a.split_once('=').ok_or_else(|| format!("flag --{a} needs a value"))?;
        match name {
            "num" => o.num = value.parse().map_err(|_| format!("--num: bad number '{value}'"))?,
            "dir" => o.dir = PathBuf::from(value),
            "identity_as_first_hash" => {
                o.identity_as_first_hash = Some(match value {
                    "1" | "true" => true,
                    "0" | "false" => false,
                    _ => return Err(format!("--identity_as_first_hash: bad value '{value}'")),
                })
            }
            "batch_sizes" => {
                o.batch_sizes = value
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|_| format!("--batch_sizes: bad number '{s}'")))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown flag --{name}")),
        }
    }
    if o.num == 0 {
        return Err("--num must be positive".into());
    }
    Ok(o)
}

pub fn main(args: &[String]) -> i32 {
    crate::flags::command_main("cuckoo_bench", args, HELP, parse, |o| {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        let r = cuckoo_read_bench(&o, &mut out);
        let _ = out.flush();
        r.map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_bad_ones_are_named() {
        let o = parse(&["--num=1000".into(), "--dir=/tmp/x".into(), "--batch_sizes=0,5".into()]).unwrap();
        assert_eq!(
            (o.num, o.dir, o.batch_sizes),
            (1000, PathBuf::from("/tmp/x"), vec![0, 5])
        );
        assert!(parse(&["--num=abc".into()]).unwrap_err().contains("--num"));
        assert!(parse(&["--num=0".into()]).unwrap_err().contains("--num"));
        assert!(parse(&["--bogus=1".into()]).unwrap_err().contains("--bogus"));
        assert!(parse(&["--identity_as_first_hash=2".into()])
            .unwrap_err()
            .contains("identity_as_first_hash"));
    }
}
