"""rocksdict's names the module gained for issue 40: the block-based table options, WAL recovery
modes, compaction and flush options, the memtable budget, the typed key/value/item iterators,
`live_files`, `set_options`, and RocksDB settings accepted at their default only. Each is
checked by its effect: the OPTIONS file, the table files (read back by PyPI's rocksdict), or
the database's behaviour."""

import os
import shutil
import subprocess
import sys
import time

import pytest

import shale
from test_rocksdict_api import options_file_lines

ROWS = {b"k%05d" % i: b"value-%05d-" % i + b"x" * 60 for i in range(2000)}


def fill(db, rows=ROWS):
    for k, v in rows.items():
        db[k] = v


def level_files(db, level):
    return int(db.property_value("rocksdb.num-files-at-level%d" % level))


# --- BlockBasedOptions, Cache -----------------------------------------------------------------


def table_properties(rocksdict, path):
    """RocksDB's summary of the table files of the database at `path`, as a dict."""
    r = rocksdict.Rdict(path, rocksdict.Options(raw_mode=True))
    try:
        text = r.property_value("rocksdb.aggregated-table-properties")
    finally:
        r.close()
    out = {}
    for part in text.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def write_with_table_options(path, bbo):
    o = shale.Options(raw_mode=True)
    o.set_block_based_table_factory(bbo)
    db = shale.Rdict(path, o)
    fill(db)
    db.flush()
    db.close()


def test_block_based_options_reach_the_table_files(tmp_path, rocksdict):
    small = shale.BlockBasedOptions()
    small.set_block_size(1024)
    small.set_bloom_filter(0, False)
    small.set_checksum_type(shale.ChecksumType.crc32c())
    write_with_table_options(str(tmp_path / "small"), small)
    lines = options_file_lines(str(tmp_path / "small"))
    assert "block_size=1024" in lines and "checksum=kCRC32c" in lines
    assert "filter_policy=nullptr" in lines

    big = shale.BlockBasedOptions()
    big.set_block_size(16 * 1024)
    big.set_bloom_filter(10, False)
    big.set_index_type(shale.BlockBasedIndexType.two_level_index_search())
    big.set_partition_filters(True)
    write_with_table_options(str(tmp_path / "big"), big)
    lines = options_file_lines(str(tmp_path / "big"))
    assert "filter_policy=bloomfilter:10:false" in lines
    assert "index_type=kTwoLevelIndexSearch" in lines and "partition_filters=true" in lines

    # RocksDB reads both (checking the CRC32C checksums) and sees the block sizes and filters.
    p_small = table_properties(rocksdict, str(tmp_path / "small"))
    p_big = table_properties(rocksdict, str(tmp_path / "big"))
    assert int(p_small["# entries"]) == int(p_big["# entries"]) == len(ROWS)
    assert int(p_small["# data blocks"]) > 8 * int(p_big["# data blocks"])
    assert int(p_small["filter block size"]) == 0 < int(p_big["filter block size"])
    r = rocksdict.Rdict(str(tmp_path / "small"), rocksdict.Options(raw_mode=True))
    assert dict(r.items()) == ROWS
    r.close()


def test_a_shared_cache_holds_the_blocks_of_both_databases(tmp_path):
    cache = shale.Cache(8 << 20)
    assert cache.get_capacity() == 8 << 20 and cache.get_usage() == 0
    dbs = []
    for name in ("a", "b"):
        bbo = shale.BlockBasedOptions()
        bbo.set_block_cache(cache)
        o = shale.Options(raw_mode=True)
        o.set_block_based_table_factory(bbo)
        db = shale.Rdict(str(tmp_path / name), o)
        fill(db)
        db.flush()
        dbs.append(db)
    dbs[0][b"k00001"]
    used_by_one = cache.get_usage()
    assert used_by_one > 0
    dbs[1][b"k01999"]
    assert cache.get_usage() > used_by_one and 0 <= cache.get_pinned_usage() <= cache.get_usage()
    for db in dbs:
        db.close()
    assert shale.Cache.new_hyper_clock_cache(1 << 20, 0).get_capacity() == 1 << 20
    # Options.load_latest(path, cache=...) gives the loaded families that cache.
    other = shale.Cache(4 << 20)
    loaded, _ = shale.Options.load_latest(str(tmp_path / "a"), cache=other)
    db = shale.Rdict(str(tmp_path / "a"), loaded)
    assert db.property_int_value("rocksdb.block-cache-capacity") == 4 << 20
    db[b"k00002"]
    assert other.get_usage() > 0
    db.close()


def test_what_the_table_writer_lacks_is_refused():
    bbo = shale.BlockBasedOptions()
    bbo.set_data_block_index_type(shale.DataBlockIndexType.binary_search())
    with pytest.raises(shale.NotSupported, match="binary_and_hash"):
        bbo.set_data_block_index_type(shale.DataBlockIndexType.binary_and_hash())
    bbo.set_index_block_restart_interval(1)
    with pytest.raises(shale.NotSupported, match="index_block_restart_interval"):
        bbo.set_index_block_restart_interval(4)
    bbo.set_data_block_hash_ratio(0.75)
    with pytest.raises(ValueError):
        bbo.set_data_block_hash_ratio(0)
    assert shale.ChecksumType.xxh3() == shale.ChecksumType.xxh3() != shale.ChecksumType.crc32c()
    assert repr(shale.ChecksumType.xxh3()) == "ChecksumType.xxh3()"


# --- DBRecoveryMode ---------------------------------------------------------------------------

CRASHING_WRITER = """
import os, sys
import shale
db = shale.Rdict(sys.argv[1], shale.Options(raw_mode=True))
for i in range(100):
    db[b"key%03d" % i] = b"%03d" % i * 400  # the 100 records span four 32 KiB log blocks
os._exit(0)  # no close: the writes are only in the WAL
"""


def damaged_wal_copy(tmp_path, name):
    """A database whose only WAL holds 100 writes, one byte of the 50th damaged (in the
    second log block: a reader drops the rest of a block after a bad checksum, as RocksDB's)."""
    src = str(tmp_path / "crashed")
    if not os.path.exists(src):
        subprocess.run([sys.executable, "-c", CRASHING_WRITER, src], check=True)
        (wal,) = [f for f in os.listdir(src) if f.endswith(".log")]
        with open(os.path.join(src, wal), "r+b") as f:
            data = f.read()
            at = data.index(b"049" * 30) + 10
            f.seek(at)
            f.write(bytes([data[at] ^ 0xFF]))
    dst = str(tmp_path / name)
    shutil.copytree(src, dst)
    return dst


def open_with_recovery_mode(path, mode):
    o = shale.Options(raw_mode=True)
    o.set_wal_recovery_mode(mode)
    return shale.Rdict(path, o)


def test_wal_recovery_modes_decide_what_a_damaged_wal_gives(tmp_path):
    path = damaged_wal_copy(tmp_path, "absolute")
    with pytest.raises(shale.Corruption):
        open_with_recovery_mode(path, shale.DBRecoveryMode.absolute_consistency())

    path = damaged_wal_copy(tmp_path, "point_in_time")
    db = open_with_recovery_mode(path, shale.DBRecoveryMode.point_in_time())
    assert "wal_recovery_mode=kPointInTimeRecovery" in options_file_lines(path)
    assert sorted(db.keys()) == [b"key%03d" % i for i in range(49)]
    db.close()

    path = damaged_wal_copy(tmp_path, "skip_any")
    db = open_with_recovery_mode(path, shale.DBRecoveryMode.skip_any_corrupted_record())
    assert "wal_recovery_mode=kSkipAnyCorruptedRecords" in options_file_lines(path)
    keys = set(db.keys())
    assert b"key049" not in keys and {b"key000", b"key048", b"key099"} <= keys
    db.close()


# --- other Options setters --------------------------------------------------------------------


def assert_options_file_has(path, options, *expected):
    """Open a database at `path` with `options`: its OPTIONS file has each line of `expected`."""
    db = shale.Rdict(path, options)
    lines = options_file_lines(path)
    db.close()
    assert [line for line in expected if line not in lines] == []


def test_write_path_switches_are_in_the_options_file(db_path):
    o = shale.Options()
    o.set_atomic_flush(True)
    o.set_unordered_write(True)
    o.set_max_total_wal_size(1 << 20)
    o.set_wal_ttl_seconds(60)
    o.set_wal_size_limit_mb(5)
    assert_options_file_has(db_path, o, "atomic_flush=true", "unordered_write=true",
                            "max_total_wal_size=1048576", "WAL_ttl_seconds=60", "WAL_size_limit_MB=5")
    # The engine's checks apply: unordered writes cannot be pipelined.
    o.set_enable_pipelined_write(True)
    with pytest.raises(shale.InvalidArgument, match="unordered_write"):
        shale.Rdict(db_path, o)
    o = shale.Options()
    o.set_allow_concurrent_memtable_write(False)
    o.set_unordered_write(True)
    with pytest.raises(shale.InvalidArgument, match="allow_concurrent_memtable_write"):
        shale.Rdict(db_path, o)


def test_the_new_options_are_also_rocksdb_option_names(db_path):
    o = shale.Options(atomic_flush=True, wal_recovery_mode="kAbsoluteConsistency", WAL_ttl_seconds=5,
                      memtable_whole_key_filtering=True, max_write_buffer_size_to_maintain=1 << 20)
    o.set_option("enable_pipelined_write", False)
    assert_options_file_has(db_path, o, "atomic_flush=true", "wal_recovery_mode=kAbsoluteConsistency",
                            "WAL_ttl_seconds=5", "memtable_whole_key_filtering=true",
                            "enable_pipelined_write=false")
    o.set_wal_recovery_mode(3)
    with pytest.raises(ValueError, match="recovery mode"):
        o.set_wal_recovery_mode("kNoSuchMode")


def l0_file_size(path, configure):
    o = shale.Options(raw_mode=True)
    configure(o)
    db = shale.Rdict(path, o)
    fill(db)
    db.flush()
    (f,) = db.live_files()
    assert f["level"] == 0
    db.close()
    return f["size"]


def test_compression_per_level_and_min_level_to_compress(tmp_path):
    def per_level(types):
        return lambda o: o.set_compression_per_level(types)

    plain = l0_file_size(str(tmp_path / "a"), per_level([shale.DBCompressionType.none(), "zstd"]))
    packed = l0_file_size(str(tmp_path / "b"), per_level(["zstd", shale.DBCompressionType.none()]))
    assert packed * 3 < plain

    def from_level(n):
        def configure(o):
            o.set_compression_type(shale.DBCompressionType.zstd())
            o.set_min_level_to_compress(n)
        return configure

    assert l0_file_size(str(tmp_path / "c"), from_level(1)) > 3 * l0_file_size(str(tmp_path / "d"), from_level(0))
    with pytest.raises(ValueError):
        shale.Options().set_min_level_to_compress(-1)


def test_memtable_factories(db_path):
    o = shale.Options()
    o.set_memtable_factory(shale.MemtableFactory.vector())
    db = shale.Rdict(db_path, o)
    for i in range(500, 0, -1):
        db[i] = str(i)
    assert list(db.keys())[:3] == [1, 2, 3] and db[250] == "250"
    db.close()
    assert shale.MemtableFactory.vector() != shale.MemtableFactory.skip_list()
    with pytest.raises(shale.NotSupported, match="hash_skip_list"):
        shale.MemtableFactory.hash_skip_list(1000)
    with pytest.raises(shale.NotSupported, match="hash_link_list"):
        shale.MemtableFactory.hash_link_list(1000)


def test_a_write_buffer_manager_flushes_the_memtables_past_its_budget(tmp_path):
    wbm = shale.WriteBufferManager(256 * 1024, False)
    assert wbm.enabled() and wbm.get_buffer_size() == 256 * 1024
    assert not shale.WriteBufferManager(0).enabled()
    dbs = []
    for name in ("a", "b"):
        o = shale.Options(raw_mode=True)
        o.set_write_buffer_manager(wbm)  # the 64 MiB write buffers never fill on their own
        dbs.append(shale.Rdict(str(tmp_path / name), o))
    dbs[0][b"x"] = b"y"
    assert wbm.get_usage() > 0
    for i in range(3000):
        dbs[i % 2][b"k%05d" % i] = os.urandom(200)
    deadline = time.time() + 10
    while level_files(dbs[0], 0) + level_files(dbs[1], 0) == 0 and time.time() < deadline:
        time.sleep(0.05)
    assert level_files(dbs[0], 0) + level_files(dbs[1], 0) > 0
    for db in dbs:
        db.close()


def test_rocksdbs_presets(tmp_path):
    o = shale.Options()
    o.optimize_for_point_lookup(16)
    db = shale.Rdict(str(tmp_path / "point"), o)
    lines = options_file_lines(str(tmp_path / "point"))
    assert "filter_policy=bloomfilter:10:false" in lines
    assert "memtable_whole_key_filtering=true" in lines
    assert "memtable_prefix_bloom_size_ratio=0.02" in lines
    assert db.property_int_value("rocksdb.block-cache-capacity") == 16 << 20
    db.close()

    o = shale.Options()
    o.prepare_for_bulk_load()
    assert_options_file_has(str(tmp_path / "bulk"), o, "disable_auto_compactions=true", "num_levels=2",
                            "max_write_buffer_number=6", "level0_stop_writes_trigger=1073741824",
                            "target_file_size_base=268435456")

    o = shale.Options()
    o.optimize_universal_style_compaction(64 << 20)
    db = shale.Rdict(str(tmp_path / "universal"), o)
    lines = options_file_lines(str(tmp_path / "universal"))
    assert "compaction_style=kCompactionStyleUniversal" in lines
    assert "write_buffer_size=16777216" in lines and "min_write_buffer_number_to_merge=2" in lines
    assert any(line.startswith("compaction_options_universal=") and "compression_size_percent=80;" in line
               for line in lines)
    db.close()


# Settings Shale lacks: RocksDB's default accepted, another value refused by name.
DEFAULT_ONLY = [
    ("set_enable_blob_files", (False,), (True,)),
    ("set_min_blob_size", (0,), (4096,)),
    ("set_blob_file_size", (256 << 20,), (1 << 20,)),
    ("set_enable_blob_gc", (False,), (True,)),
    ("set_blob_gc_age_cutoff", (0.25,), (0.5,)),
    ("set_use_direct_reads", (False,), (True,)),
    ("set_use_direct_io_for_flush_and_compaction", (False,), (True,)),
    ("set_use_fsync", (False,), (True,)),
    ("set_wal_dir", ("",), ("/tmp/elsewhere",)),
    ("set_db_log_dir", ("",), ("/tmp/elsewhere",)),
    ("set_allow_ingest_behind", (False,), (True,)),
    ("set_inplace_update_support", (False,), (True,)),
    ("set_optimize_filters_for_hits", (False,), (True,)),
    ("set_compression_options", (-14, 32767, 0, 0), (-14, 3, 0, 16384)),
    ("set_bottommost_compression_options", (-14, 32767, 0, 0, False), (-14, 3, 0, 0, True)),
    ("set_zstd_max_train_bytes", (0,), (1 << 20,)),
    ("set_bytes_per_sync", (0,), (1 << 20,)),
    ("set_advise_random_on_open", (True,), (False,)),
    ("set_use_adaptive_mutex", (False,), (True,)),
    ("set_table_cache_num_shard_bits", (6,), (4,)),
    ("set_max_sequential_skip_in_iterations", (8,), (16,)),
    ("set_compaction_readahead_size", (2 << 20,), (4 << 20,)),
    ("set_max_manifest_file_size", (1 << 30,), (1 << 20,)),
    ("set_db_paths", ([],), ([shale.DBPath("/tmp/elsewhere", 1 << 30)],)),
    ("set_max_bytes_for_level_multiplier_additional", ([1, 1, 1],), ([1, 2, 1],)),
]


@pytest.mark.parametrize("name,default,other", DEFAULT_ONLY)
def test_settings_shale_lacks_accept_only_rocksdbs_default(name, default, other):
    o = shale.Options()
    getattr(o, name)(*default)
    with pytest.raises(shale.NotSupported, match=name):
        getattr(o, name)(*other)


# The OPTIONS-file keys of the DEFAULT_ONLY settings RocksDB writes under another name.
OPTIONS_KEY = {
    "set_enable_blob_gc": "enable_blob_garbage_collection",
    "set_blob_gc_age_cutoff": "blob_garbage_collection_age_cutoff",
    "set_table_cache_num_shard_bits": "table_cache_numshardbits",
}


def test_default_only_settings_are_rocksdbs_defaults(tmp_path, rocksdict):
    """The defaults accepted are RocksDB's: rocksdict takes them, and the OPTIONS file of a
    database it opens with default options records the same values."""
    o = rocksdict.Options()
    for name, default, _ in DEFAULT_ONLY:
        if name != "set_db_paths":
            getattr(o, name)(*default)
    rocksdict.Rdict(str(tmp_path / "r"), o).close()
    rocksdict.Rdict(str(tmp_path / "d")).close()
    recorded = dict(line.split("=", 1) for line in options_file_lines(str(tmp_path / "d")) if "=" in line)
    compared = 0
    for name, (default, *more), _ in DEFAULT_ONLY:
        key = OPTIONS_KEY.get(name, name[len("set_"):])
        if more or key not in recorded or isinstance(default, (str, list)):
            continue
        value = recorded[key]
        if isinstance(default, bool):
            assert value == str(default).lower(), name
        else:
            assert type(default)(float(value)) == default, name
        compared += 1
    assert compared >= 15


def test_an_in_memory_env(tmp_path):
    path = str(tmp_path / "nowhere" / "db")
    env = shale.Env.mem_env()
    o = shale.Options()
    o.set_env(env)
    db = shale.Rdict(path, o)
    db["a"] = 1
    db.create_column_family("cf")["in family"] = True
    db.flush()
    assert [f["start_key"] for f in db.live_files()] == ["a"]
    db.close()
    assert not os.path.exists(str(tmp_path / "nowhere"))
    db = shale.Rdict(path, o)  # the same Env: the same files, families read from there
    assert db["a"] == 1 and db.get_column_family("cf")["in family"] is True
    db.close()
    other = shale.Options()
    other.set_env(shale.Env.mem_env())
    db = shale.Rdict(path, other)  # another in-memory file system: empty
    assert "a" not in db
    db.close()
    loaded, families = shale.Options.load_latest(path, env=env)
    db = shale.Rdict(path, loaded)  # in memory, as the Env it was loaded from
    assert db["a"] == 1
    db.close()
    with pytest.raises(shale.IOError):
        shale.Options.load_latest(path)  # nothing on disk
    o.set_env(shale.Env())  # back to the disk
    db = shale.Rdict(path, o)
    db["b"] = 2
    db.close()
    assert os.path.exists(path)


def test_read_and_write_options_rocksdict_has(db_path):
    db = shale.Rdict(db_path)
    fill(db, {1: "a", 2: "b"})
    ro = shale.ReadOptions()
    ro.set_pin_data(True)
    ro.set_readahead_size(0)
    ro.set_tailing(False)
    ro.set_async_io(False)
    ro.set_max_skippable_internal_keys(0)
    ro.set_background_purge_on_iterator_cleanup(False)
    assert list(db.keys(read_opt=ro)) == [1, 2]
    for call, arg in (("set_tailing", True), ("set_readahead_size", 1 << 20),
                      ("set_max_skippable_internal_keys", 10), ("set_async_io", True)):
        with pytest.raises(shale.NotSupported, match=call):
            getattr(ro, call)(arg)
    wo = shale.WriteOptions()
    for attr in ("low_pri", "ignore_missing_column_families", "memtable_insert_hint_per_batch"):
        assert getattr(wo, attr) is False
        setattr(wo, attr, False)
        with pytest.raises(shale.NotSupported, match=attr):
            setattr(wo, attr, True)
    db.put(3, "c", write_opt=wo)
    assert db[3] == "c"
    db.close()


# --- CompactOptions, FlushOptions, live_files, set_options, cancel_all_background ------------


def test_compact_range_with_compact_options(db_path):
    o = shale.Options(raw_mode=True)
    o.set_disable_auto_compactions(True)
    db = shale.Rdict(db_path, o)
    for part in range(3):
        fill(db, {k: v for i, (k, v) in enumerate(ROWS.items()) if i % 3 == part})
        db.flush()
    assert level_files(db, 0) == 3
    co = shale.CompactOptions()
    co.set_exclusive_manual_compaction(False)
    co.set_bottommost_level_compaction(shale.BottommostLevelCompaction.skip())
    co.set_change_level(False)
    co.set_target_level(-1)
    db.compact_range(None, None, co)
    assert level_files(db, 0) == 0 and {f["level"] for f in db.live_files()} == {6}
    assert dict(db.items()) == ROWS
    with pytest.raises(shale.NotSupported, match="change_level"):
        co.set_change_level(True)
    for force in (shale.BottommostLevelCompaction.force(), shale.BottommostLevelCompaction.force_optimized()):
        co.set_bottommost_level_compaction(force)
        with pytest.raises(shale.NotSupported, match="force"):
            db.compact_range(None, None, co)
    db.close()


def test_flush_with_flush_options(db_path):
    db = shale.Rdict(db_path)
    db["a"] = 1
    fo = shale.FlushOptions()
    assert fo.wait is True
    db.flush(fo)
    assert level_files(db, 0) == 1
    db["b"] = 2
    fo.wait = False
    db.flush(fo)  # returns once the memtable is handed over; it is written soon after
    deadline = time.time() + 10
    while level_files(db, 0) < 2 and time.time() < deadline:
        time.sleep(0.02)
    assert level_files(db, 0) == 2
    db.flush(False)
    db.close()


def test_live_files_match_rocksdbs_listing(db_path, rocksdict):
    db = shale.Rdict(db_path)
    db["apple"] = 1
    db[7] = "x"
    db.flush()
    db[b"zz"] = 2.5
    del db["apple"]
    db.flush()
    ours = db.live_files()
    assert {f["column_family_name"] for f in ours} == {"default"}
    assert all(f["smallest_seqno"] <= f["largest_seqno"] for f in ours)
    assert sorted((f["num_entries"], f["num_deletions"]) for f in ours) == [(2, 0), (2, 1)]
    db.close()
    r = rocksdict.Rdict(db_path)
    theirs = r.live_files()
    r.close()
    fields = ("name", "size", "level", "start_key", "end_key", "num_entries", "num_deletions")
    assert sorted(tuple(f[k] for k in fields) for f in ours) == sorted(tuple(f[k] for k in fields) for f in theirs)


def test_set_options_while_open(db_path):
    db = shale.Rdict(db_path)
    db.set_options({"write_buffer_size": "1048576", "disable_auto_compactions": True,
                    "max_background_jobs": 3})
    lines = options_file_lines(db_path)
    assert "write_buffer_size=1048576" in lines and "disable_auto_compactions=true" in lines
    assert "max_background_jobs=3" in lines
    with pytest.raises(shale.InvalidArgument, match="no_such_option"):
        db.set_options({"no_such_option": "1"})
    with pytest.raises(shale.InvalidArgument, match="num_levels"):
        db.set_options({"num_levels": 3})
    db.close()


def test_cancel_all_background_then_close(db_path):
    db = shale.Rdict(db_path)
    fill(db, {i: i for i in range(100)})
    db.cancel_all_background(True)
    assert db[5] == 5
    db.close()
    db = shale.Rdict(db_path)
    assert db[99] == 99
    db.close()


# --- typed iterators, KeyEncodingType ---------------------------------------------------------


def test_views_have_rocksdicts_classes(tmp_path, rocksdict):
    ours = shale.Rdict(str(tmp_path / "s"))
    theirs = rocksdict.Rdict(str(tmp_path / "r"))
    for db in (ours, theirs):
        db["a"] = 1
        db[2] = "b"
    for method in ("keys", "values", "items"):
        mine, ref = getattr(ours, method)(), getattr(theirs, method)()
        assert type(mine).__name__ == type(ref).__name__
        assert iter(mine) is mine
        assert list(mine) == list(ref) and list(mine) == []  # one pass, as rocksdict's
        assert isinstance(mine, shale.RdictView)
    assert isinstance(iter(ours), shale.RdictKeys)
    assert isinstance(ours.snapshot().items(), shale.RdictItems)
    ours.close()
    theirs.close()


def test_plain_table_prefix_encoding(db_path, rocksdict):
    o = shale.Options(raw_mode=True)
    o.set_prefix_extractor(shale.SliceTransform.create_fixed_prefix(3))
    p = shale.PlainTableFactoryOptions()
    assert p.encoding_type == shale.KeyEncodingType.none()
    p.encoding_type = shale.KeyEncodingType.prefix()
    o.set_plain_table_factory(p)
    o.set_allow_mmap_reads(True)
    db = shale.Rdict(db_path, o)
    rows = {b"%03d-%05d" % (i % 7, i): b"v%d" % i for i in range(700)}
    fill(db, rows)
    db.flush()
    assert "encoding_type=kPrefix" in options_file_lines(db_path)
    assert db[b"003-00010"] == b"v10"
    db.close()
    r = rocksdict.Rdict(db_path, rocksdict.Options.load_latest(db_path)[0])
    assert r[b"005-00005"] == b"v5"
    r.close()


def test_env_pools_lower_the_compaction_threads(tmp_path):
    """rocksdict's Env thread-pool methods: a database opened with an Env whose compaction pool
    is lowered runs its compaction thread at nice 19 (Linux), the flush thread at its normal
    priority; the pool sizes are taken."""
    if not sys.platform.startswith("linux"):
        pytest.skip("thread priorities are read from /proc")
    env = shale.Env()
    env.set_background_threads(2)
    env.set_high_priority_background_threads(1)
    env.set_bottom_priority_background_threads(0)
    env.lower_thread_pool_cpu_priority()
    env.join_all_threads()
    opts = shale.Options(raw_mode=True)
    opts.set_env(env)
    opts.set_max_background_jobs(2)
    db = shale.Rdict(str(tmp_path / "db"), opts)

    def nice_of(name):
        out = []
        for t in os.listdir("/proc/self/task"):
            try:
                if open("/proc/self/task/%s/comm" % t).read().strip() != name:
                    continue
                stat = open("/proc/self/task/%s/stat" % t).read()
            except OSError:
                continue
            out.append(int(stat[stat.rfind(")") + 2 :].split(" ")[16]))
        return out

    deadline = time.time() + 10
    while 19 not in nice_of("shale-bg-1") and time.time() < deadline:
        time.sleep(0.02)
    assert 19 in nice_of("shale-bg-1")
    assert 19 not in nice_of("shale-bg-0")
    fill(db)
    db.flush()
    db.compact_range(None, None)
    assert db[b"k00042"] == ROWS[b"k00042"]
    db.close()
