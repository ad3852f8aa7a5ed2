"""External SST files with rocksdict (RocksDB 9.x), for tests/ingest_compat.rs.

usage:
  rd_sst.py write DIR
      Writes DIR/rd1.sst (puts only) and DIR/rd2.sst (puts and deletes, overlapping rd1) with
      rocksdict's SstFileWriter (rd1: RocksDB 9's default table format_version 6; rd2: 5),
      and prints what each holds, one line per entry: `FILE put KEYHEX VALUEHEX` or
      `FILE del KEYHEX`. rocksdict's writer has no
      delete_range, so the files hold none.
  rd_sst.py ingest DB PRE FILE...
      Creates DB, puts `k%06d` -> `pre` for every third i below PRE (left in the memtable, so
      files overlapping them get a global sequence number), ingests each FILE with its own
      ingest_external_file call, in order, and prints every live entry: `KEYHEX VALUEHEX`.
"""
import os
import sys
from rocksdict import BlockBasedOptions, IngestExternalFileOptions, Options, Rdict, SstFileWriter


def options(format_version=None):
    o = Options(raw_mode=True)
    if format_version is not None:
        t = BlockBasedOptions()
        t.set_format_version(format_version)
        o.set_block_based_table_factory(t)
    return o


def write(out_dir):
    files = {
        "rd1.sst": [(b"k%06d" % i, b"rd1-%d" % i * (1 + i % 4)) for i in range(0, 3000, 2)],
        "rd2.sst": [(b"k%06d" % i, None if i % 10 == 0 else b"rd2-%d" % i) for i in range(1000, 2000, 5)],
    }
    for name, entries in files.items():
        w = SstFileWriter(options(None if name == "rd1.sst" else 5))
        w.open(os.path.join(out_dir, name))
        for k, v in entries:
            if v is None:
                del w[k]
                print(name, "del", k.hex())
            else:
                w[k] = v
                print(name, "put", k.hex(), v.hex())
        w.finish()


def ingest(path, pre, files):
    o = options()
    o.create_if_missing(True)
    db = Rdict(path, options=o)
    for i in range(0, pre, 3):
        db[b"k%06d" % i] = b"pre"
    io = IngestExternalFileOptions()
    io.set_allow_global_seqno(True)
    io.set_allow_blocking_flush(True)
    for f in files:
        db.ingest_external_file([f], io)
    for k, v in db.items():
        print(k.hex(), v.hex())
    db.close()


if sys.argv[1] == "write":
    write(sys.argv[2])
elif sys.argv[1] == "ingest":
    ingest(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
else:
    sys.exit("unknown mode " + sys.argv[1])
