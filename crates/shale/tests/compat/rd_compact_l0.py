"""Let rocksdict (RocksDB 9.x) run the automatic L0 -> L1 compaction of a database.

usage: rd_compact_l0.py DB_PATH
Opens the DB with `level0_file_num_compaction_trigger` 2, a 1 GiB level base (nothing moves
below L1), fixed level sizes and table format_version 5 (Debian's `sst_dump`, RocksDB 7.8, reads
no newer), waits up to 20 s until L0 is empty, and closes it. Prints the
number of L0 files left (0 when the compaction ran). Remove the DB's OPTIONS files first:
rocksdict would take the family's options from them.
"""
import sys
import time
from rocksdict import BlockBasedOptions, Options, Rdict

opts = Options(raw_mode=True)
opts.set_level_zero_file_num_compaction_trigger(2)
opts.set_max_bytes_for_level_base(1 << 30)
opts.set_level_compaction_dynamic_level_bytes(False)
opts.set_disable_auto_compactions(False)
table = BlockBasedOptions()
table.set_format_version(5)
opts.set_block_based_table_factory(table)
db = Rdict(sys.argv[1], options=opts)
deadline = time.time() + 20
left = db.property_int_value("rocksdb.num-files-at-level0")
while left and time.time() < deadline:
    time.sleep(0.05)
    left = db.property_int_value("rocksdb.num-files-at-level0")
print(left)
db.close()
