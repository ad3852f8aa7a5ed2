#!/usr/bin/env python3
"""Bulk load through external SST files: `shale` vs `rocksdict` (RocksDB 9.x) in one script.

    usage: python scripts/bulkload_compare.py [N] [DIR] [ROUNDS]
           (N = 10000000 keys, 16-byte keys and 100-byte values; DIR = /tmp; ROUNDS = 2)

For each engine, interleaved: `SstFileWriter` writes the N keys in order into files of 1M
keys, then a new DB ingests all of them with one `ingest_external_file` call (move, so the
files are linked, not copied). Both through their Python bindings in the same interpreter, so
the per-call overhead of the loop is the same on both sides. Prints write, ingest and total
time and the MB/s of key+value bytes per round, then the medians. Needs both packages
(`pip install ./crates/shale-py rocksdict`)."""

import os
import shutil
import statistics
import sys
import time

import rocksdict
import shale

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
DIR = sys.argv[2] if len(sys.argv) > 2 else "/tmp"
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
PER_FILE = 1_000_000
VAL = b"v" * 100


def run(name, mod):
    base = f"{DIR}/bulkload-{name}"
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    t0 = time.perf_counter()
    files = []
    for f in range(0, N, PER_FILE):
        path = f"{base}/{f // PER_FILE:04d}.sst"
        w = mod.SstFileWriter(mod.Options(raw_mode=True))
        w.open(path)
        for i in range(f, min(N, f + PER_FILE)):
            w[b"%016d" % i] = VAL
        w.finish()
        files.append(path)
    t1 = time.perf_counter()
    db = mod.Rdict(f"{base}/db", mod.Options(raw_mode=True))
    io = mod.IngestExternalFileOptions()
    io.set_move_files(True)
    db.ingest_external_file(files, io)
    t2 = time.perf_counter()
    assert db[b"%016d" % (N - 1)] == VAL
    db.close()
    shutil.rmtree(base, ignore_errors=True)
    mb = N * (16 + len(VAL)) / 1e6
    print(f"{name:9s} write {t1 - t0:6.2f}s ingest {t2 - t1:6.2f}s total {t2 - t0:6.2f}s  {mb / (t2 - t0):7.1f} MB/s",
          flush=True)
    return mb / (t2 - t0)


results = {"shale": [], "rocksdict": []}
for _ in range(ROUNDS):
    results["shale"].append(run("shale", shale))
    results["rocksdict"].append(run("rocksdict", rocksdict))
s, r = statistics.median(results["shale"]), statistics.median(results["rocksdict"])
print(f"median MB/s: shale {s:.1f}  rocksdict {r:.1f}  ratio {s / r:.2f}x  (N={N})")
