#!/usr/bin/env python3
"""Python put, get and iteration through `shale` and `rocksdict` in the same script.

    usage: python scripts/py_bench.py [N] [DIR]   (N = 1000000 100-byte values; DIR = /tmp)

Both in raw mode (bytes keys and values), default options otherwise. Needs both packages in
the running interpreter (`pip install ./crates/shale-py rocksdict`)."""

import shutil
import sys
import time

import rocksdict
import shale

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
DIR = sys.argv[2] if len(sys.argv) > 2 else "/tmp"
keys = [b"k%015d" % i for i in range(N)]
val = b"v" * 100


def bench(name, mod):
    path = f"{DIR}/py-bench-{name}"
    shutil.rmtree(path, ignore_errors=True)
    db = mod.Rdict(path, mod.Options(raw_mode=True))
    t = time.perf_counter()
    for k in keys:
        db[k] = val
    put = time.perf_counter() - t
    t = time.perf_counter()
    for k in keys:
        db[k]
    get = time.perf_counter() - t
    t = time.perf_counter()
    n = sum(1 for _ in db.items())
    items = time.perf_counter() - t
    assert n == N, (name, n)
    db.close()
    shutil.rmtree(path, ignore_errors=True)
    print(f"{name:10s} put {N / put:10.0f}/s  get {N / get:10.0f}/s  items {N / items:10.0f}/s")
    return put, get, items


s = bench("shale", shale)
r = bench("rocksdict", rocksdict)
print("shale / rocksdict: put %.2fx  get %.2fx  items %.2fx" % (r[0] / s[0], r[1] / s[1], r[2] / s[2]))
