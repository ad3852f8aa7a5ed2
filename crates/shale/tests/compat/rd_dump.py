"""Dump a RocksDB database with rocksdict (RocksDB 9.x), read-only, as hex lines `key value`.

usage: rd_dump.py DB_PATH [--bloom] [--keys FILE]
With --bloom the DB is opened with a 10 bits/key Bloom filter policy, so point lookups go through
the filters of the table files; with --keys, each hex key in FILE is looked up with get() and the
output is `key value` or `key MISSING`.
"""
import sys
from rocksdict import AccessType, BlockBasedOptions, Options, Rdict

path = sys.argv[1]
opts = Options(raw_mode=True)
if "--bloom" in sys.argv:
    t = BlockBasedOptions()
    t.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(t)
db = Rdict(path, options=opts, access_type=AccessType.read_only())
if "--keys" in sys.argv:
    keys_file = sys.argv[sys.argv.index("--keys") + 1]
    for line in open(keys_file):
        k = bytes.fromhex(line.strip())
        v = db.get(k)
        print(k.hex(), "MISSING" if v is None else v.hex())
else:
    for k, v in db.items():
        print(k.hex(), v.hex())
db.close()
