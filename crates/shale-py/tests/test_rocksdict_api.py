"""rocksdict's API beyond dict access: table formats (PlainTable, CuckooTable), options read back
from a database (`Options.load_latest`, reopening without options), `set_dumps`/`set_loads`,
`key_may_exist`, batch `get` with a default, and the key order of non-raw databases
(rocksdict's comparator)."""

import glob
import json
import os
import struct

import pytest

import shale

PLAIN_MAGICS = {0x8242229663BF9564, 0x4F3418EB7A8F13B8}  # RocksDB writes the legacy one
CUCKOO_MAGIC = 0x926789D0C5F17873
BLOCK_BASED_MAGIC = 0x88E241B785F4CFF7


def table_magics(path):
    """The magic number at the end of each table file of the database at `path`."""
    out = []
    for f in sorted(glob.glob(os.path.join(path, "*.sst"))):
        with open(f, "rb") as fh:
            fh.seek(-8, os.SEEK_END)
            out.append(struct.unpack("<Q", fh.read(8))[0])
    return out


def plain_opts(raw=False):
    o = shale.Options(raw_mode=raw)
    o.set_prefix_extractor(shale.SliceTransform.create_max_len_prefix(8))
    o.set_plain_table_factory(shale.PlainTableFactoryOptions())
    return o


def test_plain_table_factory_writes_plain_tables(db_path):
    db = shale.Rdict(db_path, plain_opts())
    for i in range(500):
        db[i] = i * i
    db[13456436145354564353464754615223435465543] = "big"
    db.flush()
    assert [m in PLAIN_MAGICS for m in table_magics(db_path)] == [True]
    assert db[77] == 77 * 77 and 13456436145354564353464754615223435465543 in db
    assert list(db.keys())[:3] == [0, 1, 2]
    db.close()


def test_plain_table_factory_options_are_attributes():
    p = shale.PlainTableFactoryOptions()
    assert (p.user_key_length, p.bloom_bits_per_key, p.hash_table_ratio, p.index_sparseness) == (0, 10, 0.75, 16)
    p.bloom_bits_per_key = 0
    p.hash_table_ratio = 0.0
    assert p.bloom_bits_per_key == 0 and p.hash_table_ratio == 0.0
    p.hash_table_ratio = -1.0
    with pytest.raises(ValueError, match="hash_table_ratio"):
        shale.Options().set_plain_table_factory(p)
    with pytest.raises(TypeError):
        shale.Options().set_plain_table_factory("PlainTable")


def test_cuckoo_table_factory_writes_cuckoo_tables(db_path):
    o = shale.Options(raw_mode=True)
    c = shale.CuckooTableOptions()
    c.set_hash_ratio(0.8)
    c.set_max_search_depth(50)
    c.set_cuckoo_block_size(4)
    c.set_use_module_hash(False)
    o.set_cuckoo_table_factory(c)
    o.set_allow_mmap_reads(True)
    db = shale.Rdict(db_path, o)
    ref = {b"%010d" % i: b"v%019d" % i for i in range(2000)}
    for k, v in ref.items():
        db[k] = v
    db.flush()
    assert table_magics(db_path) == [CUCKOO_MAGIC]
    assert dict(db.items()) == ref
    db.close()
    with pytest.raises(ValueError):
        c.set_hash_ratio(1.5)
    with pytest.raises(ValueError):
        c.set_cuckoo_block_size(0)


def options_file_lines(path):
    newest = max(glob.glob(os.path.join(path, "OPTIONS-*")), key=lambda p: int(p.rsplit("-", 1)[1]))
    with open(newest) as f:
        return [line.strip() for line in f]


def test_allow_mmap_writes_reaches_the_engine(db_path):
    o = shale.Options()
    o.set_cuckoo_table_factory(shale.CuckooTableOptions())
    o.set_allow_mmap_reads(True)
    o.set_allow_mmap_writes(True)
    db = shale.Rdict(db_path, o)
    assert "allow_mmap_writes=true" in options_file_lines(db_path)
    ref = {os.urandom(10): os.urandom(20) for _ in range(3000)}
    for k, v in ref.items():
        db[k] = v
    db.flush()
    db.close()
    assert [m == CUCKOO_MAGIC for m in table_magics(db_path)] == [True]  # ends at its footer
    db = shale.Rdict(db_path, o)
    assert dict(db.items()) == ref
    db.close()
    o = shale.Options(allow_mmap_writes=False)
    db = shale.Rdict(db_path + "2", o)
    assert "allow_mmap_writes=false" in options_file_lines(db_path + "2")
    db.close()


def test_load_latest_reads_families_and_table_formats(db_path):
    o = plain_opts()
    o.create_missing_column_families(True)
    db = shale.Rdict(db_path, o, column_families={"plain": plain_opts(), "blocks": shale.Options()})
    db.close()
    opts, cols = shale.Options.load_latest(db_path)
    assert opts.raw_mode is False
    assert sorted(cols) == ["blocks", "default", "plain"]
    assert all(c.raw_mode is False for c in cols.values())
    # The loaded options write the formats each family was created with.
    db = shale.Rdict(db_path, opts, column_families=cols)
    db.get_column_family("plain")[1] = 1
    db.get_column_family("blocks")[1] = 1
    db.get_column_family("plain").flush()
    magics_after_plain = table_magics(db_path)
    db.get_column_family("blocks").flush()
    db.close()
    assert [m in PLAIN_MAGICS for m in magics_after_plain] == [True]
    assert sorted(m in PLAIN_MAGICS for m in table_magics(db_path)) == [False, True]
    assert BLOCK_BASED_MAGIC in table_magics(db_path)
    with pytest.raises(shale.IOError):
        shale.Options.load_latest(db_path + "-absent")
    os.mkdir(db_path + "-empty")
    with pytest.raises(shale.NotFound, match="no OPTIONS file"):
        shale.Options.load_latest(db_path + "-empty")


def test_reopen_without_options_uses_the_recorded_ones(db_path):
    o = plain_opts()
    o.create_missing_column_families(True)
    db = shale.Rdict(db_path, o, column_families={"integer": plain_opts()})
    db.get_column_family("integer")[5] = 25
    db.close()
    db = shale.Rdict(db_path)  # every family, each with its recorded options
    di = db.get_column_family("integer")
    assert di[5] == 25
    di[6] = 36
    di.flush()
    magics = table_magics(db_path)
    assert magics and all(m in PLAIN_MAGICS for m in magics)
    db.close()


def test_set_dumps_and_set_loads(db_path):
    db = shale.Rdict(db_path)
    db.set_dumps(lambda x: json.dumps(x).encode())
    db.set_loads(lambda b: json.loads(b.decode()))
    db["l"] = ["o", "k"]
    db["s"] = "plain str"  # rocksdict's own types do not go through dumps
    assert db["l"] == ["o", "k"] and db.get(["l", "s"]) == [["o", "k"], "plain str"]
    assert dict(db.items()) == {"l": ["o", "k"], "s": "plain str"}
    assert list(db.values()) == [["o", "k"], "plain str"]
    it = db.iter()
    it.seek("l")
    assert it.value() == ["o", "k"]
    db.set_dumps(lambda x: "not bytes")
    with pytest.raises(TypeError, match="bytes"):
        db["x"] = {"a": 1}
    db.close()
    raw = shale.Rdict(db_path, shale.Options(raw_mode=True))
    assert raw[b"\x02l"] == b'\x06["o", "k"]'
    raw.close()


def test_key_may_exist(db_path):
    db = shale.Rdict(db_path)
    db["here"] = 1
    db["gone"] = 2
    del db["gone"]
    assert db.key_may_exist("here") is True
    assert db.key_may_exist("gone") is False  # a tombstone in the memtable
    assert db.key_may_exist("never") is False
    assert db.key_may_exist("here", fetch=True) == (True, None)
    assert db.key_may_exist("never", True) == (False, None)
    db.close()
    with pytest.raises(shale.DbClosedError):
        db.key_may_exist("here")


def test_batch_get_default(db_path):
    db = shale.Rdict(db_path)
    db[1] = "one"
    assert db.get([1, 2, "x"], default=0) == ["one", 0, 0]
    assert db.get([1, 2]) == ["one", None]
    assert db[[2, 1]] == [None, "one"]
    db.close()


INT_KEYS = [0, 1, -1, 127, 128, -128, -129, 255, 256, 65535, -65536, 2**63, -(2**63), 2**200, -(2**200) - 7]


def test_non_raw_keys_are_in_rocksdicts_order(db_path):
    """Ints by value (rocksdict's comparator), then by type byte: bytes < str < int < float."""
    db = shale.Rdict(db_path)
    for k in INT_KEYS:
        db[k] = k
    db["a"] = 1
    db[b"b"] = 2
    db[1.5] = 3
    db.flush()
    db[99] = 99  # in the memtable, merged with the table in order
    assert list(db.keys()) == [b"b", "a"] + sorted(INT_KEYS + [99]) + [1.5]
    assert list(db.keys(from_key=-128)) == sorted(k for k in INT_KEYS + [99] if k >= -128) + [1.5]
    assert list(db.keys(from_key=200, backwards=True)) == sorted(
        (k for k in INT_KEYS + [99] if k <= 200), reverse=True) + ["a", b"b"]
    db.delete_range(-128, 256)
    assert [k for k in db.keys() if isinstance(k, int)] == sorted(
        k for k in INT_KEYS + [99] if not -128 <= k < 256)
    db.close()


@pytest.mark.parametrize("how", ["argument", "attribute"])
def test_raw_databases_keep_bytewise_order(db_path, how):
    if how == "argument":
        o = shale.Options(raw_mode=True)
    else:
        o = shale.Options()
        o.raw_mode = True  # switches the key order too
    db = shale.Rdict(db_path, o)
    for k in [b"\x03\x80", b"\x03\x01", b"\x03\x00\xff"]:
        db[k] = b""
    assert list(db.keys()) == [b"\x03\x00\xff", b"\x03\x01", b"\x03\x80"]
    db.close()


def test_sst_file_writer_default_is_non_raw_in_rocksdicts_order(tmp_path):
    w = shale.SstFileWriter()  # rocksdict's default: non-raw options
    path = str(tmp_path / "ints.sst")
    w.open(path)
    for k in [-(2**70), -1, 0, 1, 256, 2**64]:  # increasing as ints, not as bytes
        w[k] = k * 2
    w.finish()
    db = shale.Rdict(str(tmp_path / "db"))
    db.ingest_external_file([path])
    assert list(db.items()) == [(k, k * 2) for k in [-(2**70), -1, 0, 1, 256, 2**64]]
    db.close()


def test_write_batch_and_sst_file_writer_set_dumps(tmp_path):
    dumps = lambda x: json.dumps(x).encode()  # noqa: E731
    db = shale.Rdict(str(tmp_path / "db"))
    db.set_loads(lambda b: json.loads(b.decode()))
    wb = shale.WriteBatch()
    wb.set_dumps(dumps)
    wb["batch"] = {"a": [1, 2]}
    db.write(wb)
    w = shale.SstFileWriter()
    w.set_dumps(dumps)
    path = str(tmp_path / "f.sst")
    w.open(path)
    w["sst"] = {"b": None}
    w.finish()
    db.ingest_external_file([path])
    assert db["batch"] == {"a": [1, 2]} and db["sst"] == {"b": None}
    db.close()
    raw = shale.Rdict(str(tmp_path / "db"), shale.Options(raw_mode=True))
    assert raw[b"\x02batch"] == b'\x06{"a": [1, 2]}'
    raw.close()


def test_bad_input_is_an_exception(db_path):
    with pytest.raises(TypeError):
        shale.Options.load_latest(123)
    with pytest.raises(TypeError):
        shale.PlainTableFactoryOptions().bloom_bits_per_key = "ten"
    with pytest.raises(TypeError):
        shale.CuckooTableOptions().set_hash_ratio("half")
    with pytest.raises(ValueError, match="no_such_option"):
        shale.Options(no_such_option=True)
    db = shale.Rdict(db_path, shale.Options(raw_mode=True))
    with pytest.raises(TypeError):
        db.key_may_exist("not bytes")
    with pytest.raises(TypeError):
        db.get([b"a", 1], default=b"")
    db.close()


def test_a_non_raw_database_in_bytewise_order_still_opens(db_path):
    """Non-raw databases Shale wrote before it had rocksdict's comparator are in bytewise order
    (their OPTIONS file says so): they open as they are, non-raw."""
    db = shale.Rdict(db_path, shale.Options(raw_mode=True))
    db[b"\x03\x80"] = b"\x02minus 128"  # rocksdict's encodings of -128, 1 and "a"
    db[b"\x03\x01"] = b"\x02one"
    db[b"\x02a"] = b"\x03\x05"
    db.close()
    with open(os.path.join(db_path, "rocksdict-config.json"), "w") as f:
        f.write('{"raw_mode":false,"prefix_extractors":{}}')
    for opts in [None, shale.Options()]:
        db = shale.Rdict(db_path, opts)
        assert list(db.items()) == [("a", 5), (1, "one"), (-128, "minus 128")]  # bytewise
        db.close()
    opts, cols = shale.Options.load_latest(db_path)
    assert opts.raw_mode is False and list(cols) == ["default"]
