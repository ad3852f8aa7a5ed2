"""Partitioned index and filters with rocksdict (RocksDB 9.x), for tests/partitioned_compat.rs.

usage:
  rd_partitioned.py write DB
      Creates DB with index_type kTwoLevelIndexSearch, partition_filters, metadata_block_size
      256 and a 10-bit Bloom filter; puts, overwrites and deletes, flushes and compacts; prints
      every live entry: `KEYHEX VALUEHEX`.
  rd_partitioned.py read DB KEYHEX...
      Opens DB read-only with the options of its OPTIONS file and cached index and filter
      blocks; prints every entry (`S KEYHEX VALUEHEX`) and the get of each key
      (`G KEYHEX VALUEHEX` or `G KEYHEX MISSING`).
"""
import sys
from rocksdict import AccessType, BlockBasedIndexType, BlockBasedOptions, Options, Rdict


def write(path):
    o = Options(raw_mode=True)
    o.create_if_missing(True)
    o.set_write_buffer_size(64 << 10)
    t = BlockBasedOptions()
    t.set_index_type(BlockBasedIndexType.two_level_index_search())
    t.set_partition_filters(True)
    t.set_metadata_block_size(256)
    t.set_bloom_filter(10, False)
    t.set_cache_index_and_filter_blocks(True)
    o.set_block_based_table_factory(t)
    db = Rdict(path, options=o)
    for r in range(2):
        for i in range(4000):
            db[b"key%08d" % (i * 7 % 4000)] = b"r%d-%d-" % (r, i) + b"v" * (i % 50)
        db.flush()
    for i in range(0, 4000, 9):
        del db[b"key%08d" % i]
    db.flush()
    db.compact_range(b"key00001000", b"key00002000")
    for k, v in db.items():
        print(k.hex(), v.hex())
    db.close()


def read(path, keys):
    o, _ = Options.load_latest(path)
    o.set_raw_mode(True) if hasattr(o, "set_raw_mode") else None
    db = Rdict(path, options=o, access_type=AccessType.read_only())
    for k, v in db.items():
        print("S", k.hex(), v.hex())
    for k in keys:
        v = db.get(bytes.fromhex(k))
        print("G", k, "MISSING" if v is None else v.hex())
    db.close()


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        read(sys.argv[2], sys.argv[3:])
