"""Dict access, iteration, batches, snapshots and the rest of the Rdict API."""

import os

import pytest

import shale
from shale import Options, Rdict, ReadOptions, WriteBatch, WriteOptions

VALUES = [
    b"bytes",
    "str é",
    0,
    1,
    -1,
    127,
    128,
    -128,
    -129,
    2**63 - 1,
    -(2**63),
    2**100,
    -(2**100) - 7,
    1.5,
    -0.0,
    True,
    False,
    None,
    (1, "two", b"3"),
    {"a": [1, 2]},
]


def test_dict_access_with_python_objects(db_path):
    db = Rdict(db_path)
    for i, v in enumerate(VALUES):
        db[i] = v
        db[f"key {i}"] = v
    for i, v in enumerate(VALUES):
        got = db[i]
        assert got == v and type(got) is type(v), (i, v, got)
        assert db[f"key {i}"] == v
        assert i in db
    assert "absent" not in db
    with pytest.raises(KeyError):
        db["absent"]
    assert db.get("absent") is None
    assert db.get("absent", 42) == 42
    assert db.get(0) == b"bytes"
    # A stored None is present, and not the default.
    assert VALUES.index(None) in db
    assert db.get(VALUES.index(None), "default") is None
    del db[0]
    assert 0 not in db
    db.put(b"k", b"v")
    assert db[b"k"] == b"v"
    db.delete(b"k")
    assert db.get(b"k") is None
    assert db[[1, "absent", "key 2"]] == [VALUES[1], None, VALUES[2]]
    db.close()
    # Reopened, the objects are read back the same.
    db = Rdict(db_path)
    assert db["key 18"] == (1, "two", b"3")
    assert db[2**100 - 2**100 + 11] == 2**100
    db.close()


def test_raw_mode_bytes(db_path):
    db = Rdict(db_path, Options(raw_mode=True))
    db[b"a"] = b"1"
    db[b"\x00\xff"] = b""
    assert db[b"a"] == b"1"
    assert db[b"\x00\xff"] == b""
    assert list(db.keys()) == [b"\x00\xff", b"a"]
    db.close()
    # The directory records raw_mode for rocksdict; opening without options follows it.
    db = Rdict(db_path)
    assert db[b"a"] == b"1"
    db.close()


def fill(db, n=100):
    for i in range(n):
        db[b"k%03d" % i] = b"v%d" % i


def test_iteration_both_ways_with_from_key(db_path):
    db = Rdict(db_path, Options(raw_mode=True))
    fill(db)
    db.flush()
    for i in range(50, 60):
        db[b"k%03d" % i] = b"new%d" % i  # in the memtable, over the table's values
    keys = [b"k%03d" % i for i in range(100)]
    assert list(db.keys()) == keys
    assert list(db) == keys
    assert list(db.keys(backwards=True)) == keys[::-1]
    assert list(db.keys(from_key=b"k050")) == keys[50:]
    assert list(db.keys(from_key=b"k0505")) == keys[51:]
    assert list(db.keys(backwards=True, from_key=b"k050")) == keys[:51][::-1]
    assert list(db.keys(backwards=True, from_key=b"k0505")) == keys[:51][::-1]
    items = list(db.items(from_key=b"k049"))
    assert items[:3] == [(b"k049", b"v49"), (b"k050", b"new50"), (b"k051", b"new51")]
    assert list(db.values(backwards=True))[0] == b"v99"
    assert list(db.keys(from_key=b"zzz")) == []
    ro = ReadOptions()
    ro.set_iterate_lower_bound(b"k010")
    ro.set_iterate_upper_bound(b"k013")
    assert list(db.keys(read_opt=ro)) == keys[10:13]
    db.close()


def test_rdict_iter(db_path):
    db = Rdict(db_path, Options(raw_mode=True))
    fill(db, 10)
    it = db.iter()
    assert not it.valid()
    it.seek_to_first()
    got = []
    while it.valid():
        got.append((it.key(), it.value()))
        it.next()
    assert got == [(b"k%03d" % i, b"v%d" % i) for i in range(10)]
    it.seek_to_last()
    assert it.key() == b"k009"
    it.prev()
    assert it.key() == b"k008"
    it.seek(b"k0045")
    assert it.key() == b"k005"
    it.seek_for_prev(b"k0045")
    assert it.key() == b"k004"
    it.seek(b"z")
    assert not it.valid() and it.key() is None
    it.status()
    db.close()


def test_write_batch(db_path):
    db = Rdict(db_path)
    db["gone"] = 1
    for i in range(10):
        db[f"r{i}"] = i
    wb = WriteBatch()
    wb.put("a", 1)
    wb["b"] = [2]
    wb.delete("gone")
    wb.delete_range("r2", "r5")
    assert len(wb) == 4 and wb.len() == 4 and not wb.is_empty()
    assert wb.size_in_bytes() > 0
    db.write(wb)
    assert db["a"] == 1 and db["b"] == [2] and "gone" not in db
    assert [k for k in db.keys(from_key="r") if k.startswith("r")] == ["r0", "r1", "r5", "r6", "r7", "r8", "r9"]
    wb.clear()
    assert wb.is_empty()
    db.write(wb)
    wo = WriteOptions()
    wo.sync = True
    assert wo.sync and not wo.disable_wal
    wb.put("synced", True)
    db.write(wb, write_opt=wo)
    assert db["synced"] is True
    db.close()


def test_snapshot(db_path):
    db = Rdict(db_path)
    db["a"] = 1
    db["b"] = 2
    snap = db.snapshot()
    db["a"] = 10
    del db["b"]
    db["c"] = 3
    db.flush()
    assert snap["a"] == 1 and snap.get("b") == 2
    assert "c" not in snap and snap.get("c", "none") == "none"
    with pytest.raises(KeyError):
        snap["c"]
    assert list(snap.items()) == [("a", 1), ("b", 2)]
    assert list(snap.keys(backwards=True)) == ["b", "a"]
    assert list(snap.values(from_key="b")) == [2]
    it = snap.iter()
    it.seek_to_first()
    assert it.key() == "a" and it.value() == 1
    assert list(db.items()) == [("a", 10), ("c", 3)]
    db.close()


def test_delete_range_compact_flush_properties(db_path):
    db = Rdict(db_path, Options(raw_mode=True))
    fill(db, 200)
    db.delete_range(b"k050", b"k150")
    db.flush(wait=True)
    assert db.property_int_value("rocksdb.num-files-at-level0") == 1
    db.compact_range(None, None)
    assert db.property_int_value("rocksdb.num-files-at-level0") == 0
    assert len(list(db.keys())) == 100
    assert b"k100" not in db and b"k150" in db
    db.compact_range(b"k000", b"k010")
    stats = db.property_value("rocksdb.stats")
    assert "Compaction Stats" in stats
    assert db.property_value("rocksdb.no-such-property") is None
    assert db.property_int_value("shale.log-write-errors") == 0
    assert db.latest_sequence_number() > 0
    assert db.path() == db_path
    db.close()
    # Shale's LOG, as RocksDB writes it.
    log = open(os.path.join(db_path, "LOG")).read()
    assert "EVENT_LOG_v1" in log and '"event": "flush_finished"' in log


def test_options(db_path):
    opts = Options(raw_mode=True, write_buffer_size=1 << 20, max_background_jobs=3)
    opts.set_write_buffer_size(4 << 20)
    opts.set_max_background_jobs(4)
    opts.increase_parallelism(2)
    opts.set_compression_type(shale.DBCompressionType.lz4())
    opts.set_compression_type("zstd")
    opts.set_max_open_files(100)
    opts.set_level_zero_file_num_compaction_trigger(2)
    opts.set_max_bytes_for_level_multiplier(8.0)
    opts.set_keep_log_file_num(5)
    opts.set_max_log_file_size(1 << 20)
    opts.set_stats_dump_period_sec(0)
    opts.set_log_level("warn")
    opts.set_option("target_file_size_base", 8 << 20)
    opts.create_if_missing(True)
    assert opts.raw_mode
    db = Rdict(db_path, opts)
    fill(db, 10)
    db.flush()
    db.close()
    options_file = [f for f in os.listdir(db_path) if f.startswith("OPTIONS-")]
    text = open(os.path.join(db_path, sorted(options_file)[-1])).read()
    assert "write_buffer_size=4194304" in text
    assert "compression=kZSTD" in text
    assert "target_file_size_base=8388608" in text
    opts = Options()
    opts.create_if_missing(False)
    with pytest.raises(shale.InvalidArgument):
        Rdict(db_path + "-missing", opts)


def test_read_and_write_options(db_path):
    db = Rdict(db_path)
    wo = WriteOptions()
    wo.disable_wal = True
    db.put("nowal", 1, write_opt=wo)
    db.set_write_options(wo)
    db["nowal2"] = 2
    db.close()  # a close flushes what skipped the WAL
    db = Rdict(db_path)
    assert db["nowal"] == 1 and db["nowal2"] == 2
    ro = ReadOptions()
    ro.set_iterate_upper_bound("nowal2")
    db.set_read_options(ro)
    assert list(db.keys()) == ["nowal"]
    db.close()


def test_context_manager_and_destroy(db_path):
    with Rdict(db_path) as db:
        db["x"] = 1
        with pytest.raises(shale.IOError, match="/LOCK:"):
            Rdict(db_path)
        with pytest.raises(shale.IOError, match="/LOCK:"):
            Rdict.destroy(db_path)
    with Rdict(db_path) as db:
        assert db["x"] == 1
    Rdict.destroy(db_path)
    assert not os.path.exists(db_path)


def test_statistics(db_path):
    opt = Options(raw_mode=True)
    assert opt.get_statistics() is None
    opt.enable_statistics()
    db = Rdict(db_path, opt)
    db[b"k"] = b"v"
    assert db[b"k"] == b"v"
    text = opt.get_statistics()
    lines = text.splitlines()
    assert lines[0] == "rocksdb.block.cache.miss COUNT : 0"
    assert "rocksdb.number.keys.written COUNT : 1" in lines
    assert "rocksdb.memtable.hit COUNT : 1" in lines
    assert any(l.startswith("rocksdb.db.get.micros P50 : ") and " COUNT : 1 SUM : " in l for l in lines)
    db.close()
