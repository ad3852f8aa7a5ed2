"""Wide-column entities with rocksdict (RocksDB 9.x), raw mode.

usage: rd_entities.py write DB_PATH   -- writes the entity data set (see below)
       rd_entities.py dump DB_PATH    -- prints one line per key, read-only

The data set: keys ent000..ent059; key i holds an entity with a default column `d<i>` when
i % 3 == 0 and columns c0..c(i%4 - 1) with values `v<i>-<j>` (column c0 of key 7 is 3000 bytes),
written in descending column order (RocksDB sorts them); every 5th key after the entity is a
plain value `plain<i>`; keys 0..39 are flushed, 40..59 stay in the WAL (written through a
WriteBatch). ent013 is deleted afterwards. rocksdict's close() flushes, so the writer syncs the WAL
and exits without closing.

dump lines: `key value iter_columns get_entity_columns get_value`, hex, columns as
`name=value` joined by `,` (`-` for none).
"""
import os
import sys
from rocksdict import AccessType, Options, Rdict, WriteBatch


def columns(i):
    cols = []
    if i % 3 == 0:
        cols.append((b"", b"d%d" % i))
    for j in range(i % 4):
        v = b"v%d-%d" % (i, j)
        if i == 7 and j == 0:
            v = b"x" * 3000
        cols.append((b"c%d" % j, v))
    return list(reversed(cols))


def fmt(cols):
    return ",".join(n.hex() + "=" + v.hex() for n, v in cols) or "-"


mode, path = sys.argv[1], sys.argv[2]
if mode == "write":
    db = Rdict(path, options=Options(raw_mode=True))
    for i in range(60):
        k = b"ent%03d" % i
        cols = columns(i)
        if i < 40:
            db.put_entity(k, [n for n, _ in cols], [v for _, v in cols])
            if i % 5 == 4:
                db.put(k, b"plain%d" % i)
        else:
            wb = WriteBatch(raw_mode=True)
            wb.set_default_column_family(db.get_column_family_handle("default"))
            wb.put_entity(k, [n for n, _ in cols], [v for _, v in cols])
            if i % 5 == 4:
                wb.put(k, b"plain%d" % i)
            db.write(wb)
        if i == 39:
            db.flush()
    db.delete(b"ent013")
    db.flush_wal(True)
    sys.stdout.flush()
    os._exit(0)
else:
    db = Rdict(path, options=Options(raw_mode=True), access_type=AccessType.read_only())
    it = db.iter()
    it.seek_to_first()
    while it.valid():
        k = it.key()
        print(k.hex(), it.value().hex(), fmt(it.columns()), fmt(db.get_entity(k)), db.get(k).hex())
        it.next()
    db.close()
