"""Wide-column entities through the rocksdict API: `Rdict.put_entity` / `get_entity` /
`entities()` / `columns()`, `RdictIter.columns()`, `WriteBatch.put_entity`, in raw and
non-raw mode, across flush, compaction and reopen; and entities exchanged with PyPI's
rocksdict (RocksDB 9.x) both ways."""

import shutil

import pytest

import shale


def raw_db(path):
    opt = shale.Options(raw_mode=True)
    opt.create_if_missing(True)
    return shale.Rdict(path, options=opt)


def test_raw_entities_read_as_rocksdict_reads_them(db_path):
    db = raw_db(db_path)
    db.put_entity(b"k1", [b"c2", b"", b"c1"], [b"v2", b"dflt", b"v1"])
    db.put_entity(b"k2", [b"b", b"a"], [b"2", b"1"])
    db[b"k3"] = b"plain"
    want = {
        b"k1": [(b"", b"dflt"), (b"c1", b"v1"), (b"c2", b"v2")],
        b"k2": [(b"a", b"1"), (b"b", b"2")],
        b"k3": [(b"", b"plain")],
    }

    def check():
        assert db[b"k1"] == b"dflt"
        assert db[b"k2"] == b"", "no default column: an empty value"
        for k, cols in want.items():
            assert db.get_entity(k) == cols
        assert db.get_entity(b"missing") is None
        assert db.get_entity(b"missing", default=7) == 7
        assert list(db.entities()) == list(want.items())
        assert list(db.columns()) == list(want.values())
        assert list(db.entities(backwards=True)) == list(reversed(list(want.items())))
        assert list(db.columns(from_key=b"k2")) == [want[b"k2"], want[b"k3"]]
        it = db.iter()
        it.seek(b"k2")
        assert it.key() == b"k2" and it.value() == b"" and it.columns() == want[b"k2"]
        it.prev()
        assert it.columns() == want[b"k1"]
        it.seek_to_last()
        assert it.columns() == want[b"k3"]
        it.next()
        assert it.columns() is None

    check()
    db.flush()
    check()
    db.compact_range(None, None)
    check()
    db.close()
    db = raw_db(db_path)
    check()
    db.close()


def test_non_raw_names_and_values_use_rocksdicts_encoding(db_path):
    db = shale.Rdict(db_path)
    db.put_entity("city", ["name", "population", ""], ["Shenzhen", 17.6, 42])
    # As in rocksdict: the name "" is encoded (a str), so it is not RocksDB's default column
    # (the empty name) and a plain read gets the empty value, which decodes as "".
    assert db["city"] == ""
    assert db.get_entity("city") == [("", 42), ("name", "Shenzhen"), ("population", 17.6)]
    db.put_entity("k", ["x"], [b"bytes"])
    assert db["k"] == ""
    assert db.get_entity("k") == [("x", b"bytes")]
    db["p"] = [1, 2]
    assert db.get_entity("p") == [("", [1, 2])]
    assert [k for k, _ in db.entities()] == ["city", "k", "p"]
    db.close()


def test_write_batch_put_entity_and_errors(db_path):
    db = raw_db(db_path)
    wb = shale.WriteBatch(raw_mode=True)
    wb.put_entity(b"a", [b"n"], [b"v"])
    wb[b"b"] = b"x"
    wb.put_entity(b"b", [b"", b"m"], [b"d", b"w"])
    db.write(wb)
    assert db.get_entity(b"a") == [(b"n", b"v")]
    assert db.get_entity(b"b") == [(b"", b"d"), (b"m", b"w")]
    assert db[b"b"] == b"d"
    with pytest.raises(Exception):
        db.put_entity(b"c", [b"x", b"x"], [b"1", b"2"])
    with pytest.raises(Exception):
        db.put_entity(b"c", [b"x"], [b"1", b"2"])
    with pytest.raises(Exception):
        wb.put_entity(b"c", [b"x", b"x"], [b"1", b"2"])
    assert db.get(b"c") is None
    db.close()


def test_entities_exchanged_with_rocksdict(db_path, rocksdict, tmp_path):
    # rocksdict writes, Shale reads (data in a table file and in the WAL).
    rd_path = str(tmp_path / "rd")
    rd = rocksdict.Rdict(rd_path, options=rocksdict.Options(raw_mode=True))
    rd.put_entity(b"e1", [b"c2", b"", b"c1"], [b"v2", b"d", b"v1"])
    rd.flush()
    rd.put_entity(b"e2", [b"z"], [b"zz"])
    rd[b"p"] = b"plain"
    want = list(rd.entities())
    rd.flush_wal(True)
    copy = str(tmp_path / "rd_copy")
    shutil.copytree(rd_path, copy)
    rd.close()
    db = raw_db(copy)
    assert list(db.entities()) == want
    assert db[b"e1"] == b"d" and db[b"e2"] == b""
    # Shale writes, rocksdict reads.
    db.put_entity(b"e3", [b"y", b"x"], [b"2", b"1"])
    db.flush()
    db.put_entity(b"e4", [b""], [b"only-default"])
    want = list(db.entities())
    db.close()
    rd = rocksdict.Rdict(copy, options=rocksdict.Options(raw_mode=True))
    assert list(rd.entities()) == want
    assert rd.get_entity(b"e3") == [(b"x", b"1"), (b"y", b"2")]
    assert rd[b"e4"] == b"only-default"
    rd.close()
