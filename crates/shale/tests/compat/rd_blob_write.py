"""Write a database with integrated blob files with rocksdict (RocksDB 9.x).

usage: rd_blob_write.py DB_PATH N COMPRESSION(none|lz4|zstd|snappy)
Values of at least 100 bytes go to blob files (compressed with COMPRESSION); some keys are
overwritten and deleted, then the whole range is compacted with blob garbage collection (age
cutoff 1.0, so old blob files are rewritten and dropped), then more keys are written and flushed.
The last keys stay only in the WAL. Prints nothing; compare with rd_dump.py's output.
"""
import sys
from rocksdict import DBCompressionType, Options, Rdict

path, n, comp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
opts = Options(raw_mode=True)
opts.create_if_missing(True)
opts.set_enable_blob_files(True)
opts.set_min_blob_size(100)
opts.set_blob_file_size(64 << 10)
opts.set_enable_blob_gc(True)
opts.set_blob_gc_age_cutoff(1.0)
opts.set_blob_compression_type(getattr(DBCompressionType, comp)())
db = Rdict(path, options=opts)
for i in range(n):
    # every 4th value small (stays in the table)
    db[b"key%08d" % i] = (b"v%d-" % i) * (2 if i % 4 == 0 else 40 + i % 50)
db.flush()
for i in range(0, n, 3):
    db[b"key%08d" % i] = b"overwritten-%d-" % i * 30
for i in range(0, n, 5):
    del db[b"key%08d" % i]
db.flush()
db.compact_range(None, None)
for i in range(n, n + n // 4):
    db[b"key%08d" % i] = b"later-%d-" % i * 20
db.flush()
for i in range(n + n // 4, n + n // 2):
    db[b"key%08d" % i] = b"wal-only-%d-" % i * 20
db.close()
