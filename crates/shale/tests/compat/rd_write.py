"""Write a database with rocksdict (RocksDB 9.x) using its defaults.

usage: rd_write.py DB_PATH N COMPRESSION(none|snappy|zlib|bz2|lz4|lz4hc|zstd|default)
Writes N keys (some overwritten, some deleted), flushes part of them to SSTs and leaves the rest
only in the WAL, then closes without flushing. Prints nothing; the reader compares with
rd_dump.py's output taken afterwards.
"""
import sys
from rocksdict import DBCompressionType, Options, Rdict

path, n, comp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
opts = Options(raw_mode=True)
opts.create_if_missing(True)
if comp != "default":
    opts.set_compression_type({
        "none": DBCompressionType.none(),
        "snappy": DBCompressionType.snappy(),
        "zlib": DBCompressionType.zlib(),
        "bz2": DBCompressionType.bz2(),
        "lz4": DBCompressionType.lz4(),
        "lz4hc": DBCompressionType.lz4hc(),
        "zstd": DBCompressionType.zstd(),
    }[comp])
db = Rdict(path, options=opts)
for i in range(n):
    db[b"key%08d" % i] = (b"value-%d-" % i) * (1 + i % 7)
db.flush()
for i in range(0, n, 3):
    db[b"key%08d" % i] = b"overwritten-%d" % i
for i in range(0, n, 5):
    del db[b"key%08d" % i]
db.flush()
# the rest stays only in the WAL
for i in range(n, n + n // 4):
    db[b"key%08d" % i] = b"wal-only-%d" % i
for i in range(1, n, 11):
    del db[b"key%08d" % i]
db.close()
