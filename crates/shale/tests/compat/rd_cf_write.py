"""Write column families with rocksdict (RocksDB 9.x) into a database that may already exist.

usage: rd_cf_write.py DB_PATH

Opens DB_PATH with every family it has (Rdict.list_cf) and creates `lz4` and `zstd` (each
with its own compression) and `gone` (written, flushed, then dropped). Some data is flushed to
tables, some is left only in the WAL (one write batch spans several families). Tables use
format_version 5, which RocksDB 7.8's ldb still reads (9.x writes 6 by default). rocksdict's
close() flushes, so the script syncs the WAL and exits without closing. Prints nothing; the
reader compares with rd_cf_dump.py's output taken afterwards.
"""
import os
import sys
from rocksdict import BlockBasedOptions, DBCompressionType, Options, Rdict, WriteBatch

path = sys.argv[1]


def options(comp=None):
    o = Options(raw_mode=True)
    t = BlockBasedOptions()
    t.set_format_version(5)
    o.set_block_based_table_factory(t)
    if comp is not None:
        o.set_compression_type(comp)
    return o


opts = options()
opts.create_if_missing(True)
existing = Rdict.list_cf(path) if os.path.exists(os.path.join(path, "CURRENT")) else ["default"]
db = Rdict(path, options=opts,
           column_families={n: options() for n in existing if n != "default"})
cfs = {n: db.get_column_family(n) for n in existing if n != "default"}
for name, comp in (("lz4", DBCompressionType.lz4()), ("zstd", DBCompressionType.zstd()),
                   ("gone", DBCompressionType.snappy())):
    cfs[name] = db.create_column_family(name, options(comp))
for i in range(2000):
    db[b"d%06d" % i] = b"default-%d-" % i * (1 + i % 5)
    cfs["lz4"][b"l%06d" % i] = b"lz4-%d-" % i * (1 + i % 7)
    cfs["zstd"][b"z%06d" % (i * 3)] = b"zstd-%d" % i
    cfs["gone"][b"g%06d" % i] = b"gone-%d" % i
db.flush()
for name in ("lz4", "zstd", "gone"):
    cfs[name].flush()
for i in range(0, 2000, 7):
    del cfs["lz4"][b"l%06d" % i]
    cfs["zstd"][b"z%06d" % (i * 3)] = b"zstd-overwritten-%d" % i
cfs["lz4"].flush()
db.drop_column_family("gone")
# only in the WAL from here on; one batch spans every family
wb = WriteBatch(raw_mode=True)
for i in range(50):
    for name in ["default"] + sorted(cfs.keys() - {"gone"}):
        wb.put(b"wal-batch-%03d" % i, name.encode() + b"-in-wal", db.get_column_family_handle(name))
db.write(wb)
for i in range(0, 2000, 13):
    del db[b"d%06d" % i]
    del cfs["zstd"][b"z%06d" % (i * 3)]
db.flush_wal(True)
sys.stdout.flush()
os._exit(0)
