"""Secondary instances with rocksdict (RocksDB 9.x), both roles.

usage:
  rd_secondary.py read PRIMARY SECONDARY
      open PRIMARY as a secondary instance (its files in SECONDARY), catch up, print every
      entry as hex lines `key value`.
  rd_secondary.py write PRIMARY N
      a live primary: write keys k0000..k(N-1) (the first half flushed to a table, the rest only
      in the WAL), print `ready`, wait for a line on stdin; then overwrite every third key,
      delete every fifth, flush, write N more keys into the WAL only, print `ready`, wait for a
      line, and close.
"""
import sys
from rocksdict import AccessType, Options, Rdict

mode, path = sys.argv[1], sys.argv[2]
opts = Options(raw_mode=True)
if mode == "read":
    db = Rdict(path, options=opts, access_type=AccessType.secondary(sys.argv[3]))
    db.try_catch_up_with_primary()
    for k, v in db.items():
        print(k.hex(), v.hex())
    db.close()
elif mode == "write":
    n = int(sys.argv[3])
    opts.create_if_missing(True)
    db = Rdict(path, options=opts)
    for i in range(n):
        db[b"k%04d" % i] = b"v%d" % i
        if i == n // 2:
            db.flush(True)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(0, n, 3):
        db[b"k%04d" % i] = b"w%d" % i
    for i in range(0, n, 5):
        del db[b"k%04d" % i]
    db.flush(True)
    for i in range(n, 2 * n):
        db[b"k%04d" % i] = b"x%d" % i
    print("ready", flush=True)
    sys.stdin.readline()
    db.close()
else:
    sys.exit("unknown mode " + mode)
