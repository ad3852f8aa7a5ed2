"""Write a PlainTable database with rocksdict (RocksDB 9.x) and print its content.

usage: rd_plain.py DB_DIR ENCODING(plain|prefix) STORE_INDEX(0|1) USER_KEY_LEN [BLOOM_LOCALITY]

Keys have variable length (or USER_KEY_LEN bytes) over many 3-byte prefixes. Phase 1 is
flushed and compacted (keys get sequence 0), phase 2 (overwrites and deletions) is only flushed,
so the database holds one table of each kind. Prints `hex(key) hex(value)` for every live key.
"""
import sys
from rocksdict import (Rdict, Options, PlainTableFactoryOptions, SliceTransform,
                       KeyEncodingType, WriteBatch)

path, enc, store, klen = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
locality = int(sys.argv[5]) if len(sys.argv) > 5 else 0

pt = PlainTableFactoryOptions()
pt.user_key_length = klen
pt.bloom_bits_per_key = 10
pt.hash_table_ratio = 0.75
pt.index_sparseness = 4
pt.encoding_type = KeyEncodingType.prefix() if enc == "prefix" else KeyEncodingType.plain()
pt.store_index_in_file = store

opts = Options(raw_mode=True)
opts.create_if_missing(True)
opts.set_plain_table_factory(pt)
opts.set_prefix_extractor(SliceTransform.create_fixed_prefix(3))
opts.set_allow_mmap_reads(True)
opts.set_disable_auto_compactions(True)
opts.set_bloom_locality(locality)


def key(i):
    k = b"%03d-%d" % (i // 9, i * 7)
    if klen:
        return (k + b"." * klen)[:klen]
    return k + b"x" * (i % 6)


db = Rdict(path, opts)
for i in range(600):
    db[key(i)] = b"v%d-" % i + b"a" * (i % 40)
db.flush()
db.compact_range(None, None)
for i in range(0, 600, 5):
    if i % 3 == 0:
        del db[key(i)]
    else:
        db[key(i)] = b"second-%d" % i
db.flush()
for k, v in db.items():
    print(k.hex(), v.hex())
db.close()
