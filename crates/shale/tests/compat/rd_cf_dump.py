"""Dump every column family of a database with rocksdict (RocksDB 9.x), read-only.

usage: rd_cf_dump.py DB_PATH auto|explicit [SKIP_FAMILY ...]

Prints `families NAME,NAME,...` (Rdict.list_cf), then `FAMILY hex(key) hex(value)` for every
live key of every family. `auto` opens with the options of the DB's OPTIONS file (rocksdict's
`Rdict(path)` with no options); `explicit` opens with default raw-mode options and
`column_families={name: Options}` naming every family but the SKIP_FAMILY ones (a read-only
open may name a subset).
"""
import sys
from rocksdict import AccessType, Options, Rdict

path, mode, skip = sys.argv[1], sys.argv[2], set(sys.argv[3:])
names = Rdict.list_cf(path)
print("families " + ",".join(names))
if mode == "auto":
    db = Rdict(path, access_type=AccessType.read_only())
    open_names = names
else:
    open_names = [n for n in names if n not in skip]
    cfs = {n: Options(raw_mode=True) for n in open_names if n != "default"}
    db = Rdict(path, options=Options(raw_mode=True), column_families=cfs,
               access_type=AccessType.read_only())
for n in open_names:
    cf = db.get_column_family(n)
    for k, v in cf.items():
        print(n, k.hex(), v.hex())
    cf.close()
db.close()
