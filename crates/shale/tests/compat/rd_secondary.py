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
  rd_secondary.py serve PRIMARY
      a live primary run by commands on stdin: `round N` does round N (writes, overwrites,
      deletes and a range deletion; a flush in odd rounds, a full compaction every third), then
      prints every entry as hex lines `key value` and `end`; `quit` closes.
  rd_secondary.py follow PRIMARY SECONDARY
      a long-running secondary instance: each `catch` on stdin catches up and prints every
      entry as hex lines `key value` and `end`; `quit` closes.
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
elif mode == "serve":
    opts.create_if_missing(True)
    opts.set_write_buffer_size(64 << 10)
    db = Rdict(path, options=opts)
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "quit":
            break
        r = int(cmd[1])
        for i in range(r * 50, r * 50 + 400):
            db[b"k%05d" % i] = b"r%d-%d" % (r, i) * (1 + i % 5)
        for i in range(0, r * 50 + 400, 7):
            del db[b"k%05d" % i]
        db.delete_range(b"k%05d" % (r * 50 + 100), b"k%05d" % (r * 50 + 120))
        if r % 2 == 1:
            db.flush(True)
        if r % 3 == 2:
            db.compact_range(None, None)
        for k, v in db.items():
            print(k.hex(), v.hex())
        print("end", flush=True)
    db.close()
elif mode == "follow":
    db = Rdict(path, options=opts, access_type=AccessType.secondary(sys.argv[3]))
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        db.try_catch_up_with_primary()
        for k, v in db.items():
            print(k.hex(), v.hex())
        print("end", flush=True)
    db.close()
else:
    sys.exit("unknown mode " + mode)
