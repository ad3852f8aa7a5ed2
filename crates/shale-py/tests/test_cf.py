"""Column families in rocksdict's style: `column_families=` at open, `create_column_family`,
`get_column_family`, `drop_column_family`, `Rdict.list_cf`, handles in a WriteBatch, and the
compatibility of databases with families with PyPI's rocksdict (RocksDB 9.x)."""

import threading

import pytest

import shale
from shale import AccessType, Options, Rdict, WriteBatch


def test_family_round_trip(db_path):
    db = Rdict(db_path)
    one = db.create_column_family("one", Options())
    assert isinstance(one, Rdict)
    # The same key in two families holds two values.
    db["k"] = "in default"
    one["k"] = "in one"
    one[1] = [1, 2]
    one.put(b"b", 2.5)
    assert db["k"] == "in default"
    assert one["k"] == "in one"
    assert one.get(1) == [1, 2]
    assert one[b"b"] == 2.5
    assert 1 in one and 1 not in db
    assert one.get("absent", "dflt") == "dflt"
    with pytest.raises(KeyError):
        one["absent"]
    assert one[["k", 1, "absent"]] == ["in one", [1, 2], None]
    assert one.multi_get(["k", "absent"]) == ["in one", None]
    del one[b"b"]
    assert b"b" not in one
    one.delete("k")
    assert one.get("k") is None and db["k"] == "in default"
    # The Rdict get_column_family returns sees the same data.
    again = db.get_column_family("one")
    assert again[1] == [1, 2]
    db.close()


def test_family_iteration_and_ranges(db_path):
    db = Rdict(db_path, Options(raw_mode=True))
    cf = db.create_column_family("data", Options(raw_mode=True))
    keys = [b"k%03d" % i for i in range(100)]
    for k in keys:
        cf[k] = k + b"-v"
    db[b"k050"] = b"default only"
    assert list(cf.keys()) == keys
    assert list(cf) == keys
    assert list(cf.values())[:2] == [b"k000-v", b"k001-v"]
    assert list(cf.items(from_key=b"k095")) == [(k, k + b"-v") for k in keys[95:]]
    assert list(cf.keys(backwards=True, from_key=b"k003")) == [b"k003", b"k002", b"k001", b"k000"]
    assert list(cf.keys(backwards=True))[0] == b"k099"
    it = cf.iter()
    it.seek(b"k010")
    assert it.valid() and it.key() == b"k010" and it.value() == b"k010-v"
    it.prev()
    assert it.key() == b"k009"
    # delete_range, flush, compaction and properties act on the family only.
    cf.delete_range(b"k010", b"k090")
    assert len(list(cf.keys())) == 20
    assert db[b"k050"] == b"default only"
    cf.flush()
    assert cf.property_int_value("rocksdb.num-files-at-level0") == 1
    assert db.property_int_value("rocksdb.num-files-at-level0") == 0
    cf.compact_range(None, None)
    assert cf.property_int_value("rocksdb.num-files-at-level0") == 0
    assert cf.property_value("rocksdb.stats") is not None
    assert list(cf.keys()) == keys[:10] + keys[90:]
    db.close()


def test_batch_across_families_is_atomic(db_path):
    db = Rdict(db_path)
    a = db.create_column_family("a", Options())
    db.create_column_family("b", Options())
    ha, hb = db.get_column_family_handle("a"), db.get_column_family_handle("b")
    assert ha.name == "a"
    a["gone"] = 1
    a["range1"] = 1
    a["range2"] = 2
    wb = WriteBatch()
    wb.put("x", 1, ha)
    wb.put("x", 2, column_family=hb)
    wb["x"] = 0  # default family
    wb.delete("gone", column_family=ha)
    wb.delete_range("range", "range9", column_family=ha)
    wb.set_default_column_family(hb)
    wb["y"] = "to b"
    del wb["nothing"]
    wb.set_default_column_family(None)
    wb["z"] = "to default"
    assert len(wb) == 8
    db.write(wb)
    b = db.get_column_family("b")
    assert db["x"] == 0 and db["z"] == "to default"
    assert a["x"] == 1 and b["x"] == 2 and b["y"] == "to b"
    assert "gone" not in a and "range1" not in a and "range2" not in a
    assert "y" not in db and "y" not in a
    db.close()
    # After a reopen (the batch only in the WAL) it is all there.
    db = Rdict(db_path)
    a, b = db.get_column_family("a"), db.get_column_family("b")
    assert (a["x"], b["x"], b["y"], db["x"]) == (1, 2, "to b", 0)
    db.close()


def test_concurrent_readers_never_see_half_a_batch(db_path):
    """A writer thread writes counter i to "n" in families a and b in one batch, 1500 times;
    readers read b, then a. With atomic batches a is never behind b."""
    db = Rdict(db_path)
    a = db.create_column_family("a", Options())
    b = db.create_column_family("b", Options())
    ha, hb = db.get_column_family_handle("a"), db.get_column_family_handle("b")
    done = threading.Event()
    errors = []

    def writer():
        for i in range(1, 1501):
            wb = WriteBatch()
            wb.put("n", i, hb)
            wb.put("n", i, ha)
            db.write(wb)
        done.set()

    def reader():
        reads = 0
        while not done.is_set() or reads < 10:
            nb = b.get("n", 0)
            na = a.get("n", 0)
            if na < nb:
                errors.append((na, nb))
            reads += 1

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert a["n"] == b["n"] == 1500
    db.close()


def test_snapshot_reads_its_family(db_path):
    db = Rdict(db_path)
    cf = db.create_column_family("one", Options())
    cf["a"] = 1
    db["a"] = 0
    snap = cf.snapshot()
    cf["a"] = 2
    cf["b"] = 3
    assert snap["a"] == 1
    assert snap.get("b") is None and "b" not in snap
    assert list(snap.items()) == [("a", 1)]
    it = snap.iter()
    it.seek_to_first()
    assert (it.key(), it.value()) == ("a", 1)
    assert db.snapshot()["a"] == 0
    db.close()


def test_list_drop_and_reopen(db_path):
    db = Rdict(db_path)
    for name in ["one", "two", "three"]:
        db.create_column_family(name, Options())[name] = name
    assert Rdict.list_cf(db_path) == ["default", "one", "two", "three"]
    keep = db.get_column_family("two")
    db.drop_column_family("two")
    assert Rdict.list_cf(db_path) == ["default", "one", "three"]
    with pytest.raises(shale.InvalidArgument, match="two"):
        db.get_column_family("two")
    with pytest.raises(shale.InvalidArgument, match="two"):
        db.get_column_family_handle("two")
    # An Rdict on the dropped family is not a crash: writes are refused.
    with pytest.raises(shale.ShaleError):
        keep["x"] = 1
    del keep
    db.close()

    # Without column_families every family opens (as rocksdict).
    db = Rdict(db_path)
    assert db.get_column_family("one")["one"] == "one"
    assert db.get_column_family("three")["three"] == "three"
    db.close()
    # Naming them all opens too; naming a subset is RocksDB's InvalidArgument, naming the rest.
    db = Rdict(db_path, Options(), column_families={"one": Options(), "three": Options()})
    db.close()
    with pytest.raises(shale.InvalidArgument, match="three"):
        Rdict(db_path, Options(), column_families={"one": Options()})
    # A family the database lacks needs create_missing_column_families.
    with pytest.raises(shale.InvalidArgument, match="four"):
        Rdict(db_path, Options(), column_families={"one": Options(), "three": Options(), "four": Options()})
    o = Options()
    o.create_missing_column_families(True)
    db = Rdict(db_path, o, column_families={"one": Options(), "three": Options(), "four": Options()})
    db.get_column_family("four")["k"] = "v"
    db.close()
    assert Rdict.list_cf(db_path) == ["default", "one", "three", "four"]
    # Read-only opens may name a subset.
    db = Rdict(db_path, column_families={"four": Options()}, access_type=AccessType.read_only(False))
    assert db.get_column_family("four")["k"] == "v"
    with pytest.raises(shale.InvalidArgument):
        db.get_column_family("one")
    db.close()
    db = Rdict(db_path, access_type=AccessType.read_only(False))
    assert db.get_column_family("one")["one"] == "one"
    with pytest.raises(shale.ShaleError):
        db.get_column_family("one")["new"] = 1
    db.close()


def test_family_rdict_close(db_path):
    db = Rdict(db_path)
    cf = db.create_column_family("one", Options())
    cf["a"] = 1
    # Closing a family's Rdict closes it alone.
    cf.close()
    with pytest.raises(shale.DbClosedError):
        cf["a"]
    assert db.get_column_family("one")["a"] == 1
    other = db.get_column_family("one")
    # Closing the database closes its families' Rdicts too, and the database can reopen.
    db.close()
    with pytest.raises(shale.DbClosedError):
        other["a"]
    with Rdict(db_path) as db:
        assert db.get_column_family("one")["a"] == 1


def test_bad_input(db_path):
    db = Rdict(db_path)
    db.create_column_family("one", Options())
    with pytest.raises(shale.InvalidArgument, match="default"):
        db.drop_column_family("default")
    with pytest.raises(shale.InvalidArgument, match="already exists"):
        db.create_column_family("one", Options())
    with pytest.raises(shale.InvalidArgument, match="nope"):
        db.drop_column_family("nope")
    with pytest.raises(shale.InvalidArgument, match="nope"):
        db.get_column_family("nope")
    with pytest.raises(shale.InvalidArgument):
        db.create_column_family("", Options())
    # rocksdict's rule: a family's Options have the database's raw_mode.
    with pytest.raises(ValueError, match="raw_mode"):
        db.create_column_family("raw", Options(raw_mode=True))
    with pytest.raises(TypeError):
        db.create_column_family(1, Options())
    with pytest.raises(TypeError):
        db.get_column_family_handle(None)
    wb = WriteBatch()
    with pytest.raises(TypeError):
        wb.put("k", "v", column_family="one")
    with pytest.raises(TypeError):
        wb.set_default_column_family("one")
    assert Rdict.list_cf(db_path) == ["default", "one"]
    db.close()
    with pytest.raises(ValueError, match="raw_mode"):
        Rdict(db_path, Options(), column_families={"one": Options(raw_mode=True)})
    with pytest.raises(TypeError):
        Rdict(db_path, Options(), column_families={"one": "not options"})
    with pytest.raises(shale.ShaleError):
        Rdict.list_cf(db_path + "-missing")
    # Use after close.
    with pytest.raises(shale.DbClosedError):
        db.create_column_family("two", Options())
    with pytest.raises(shale.DbClosedError):
        db.get_column_family_handle("one")


# --- Compatibility with rocksdict (raw mode: rocksdict's non-raw databases use a comparator of
# its own, see test_compat.py).

FAMILIES = {
    "default": {b"d%04d" % i: b"default-%d" % i for i in range(300)},
    "users": {b"u%04d" % i: b"user-%d" % i * 3 for i in range(1200)},
    "events": {b"e%05d" % i: bytes([i % 256]) * (i % 50) for i in range(2500)},
}


def raw(r=None):
    return (r or shale).Options(raw_mode=True)


def test_rocksdict_reads_families_shale_wrote(db_path, rocksdict):
    db = Rdict(db_path, raw())
    cfs = {"default": db}
    for name in ["users", "events"]:
        cfs[name] = db.create_column_family(name, raw())
    for name, items in FAMILIES.items():
        for i, (k, v) in enumerate(items.items()):
            cfs[name][k] = v
            if i == len(items) // 2:
                cfs[name].flush()  # half in table files, half only in the WAL
    # One batch over all three families.
    wb = WriteBatch(raw_mode=True)
    for name in FAMILIES:
        wb.put(b"batch", name.encode(), db.get_column_family_handle(name))
    db.write(wb)
    cfs["events"].delete_range(b"e00100", b"e00200")
    del cfs, wb
    db.close()
    expect = {name: {**items, b"batch": name.encode()} for name, items in FAMILIES.items()}
    expect["events"] = {k: v for k, v in expect["events"].items() if not (b"e00100" <= k < b"e00200")}

    assert rocksdict.Rdict.list_cf(db_path) == ["default", "users", "events"]
    r = rocksdict.Rdict(
        db_path, raw(rocksdict), column_families={"users": raw(rocksdict), "events": raw(rocksdict)}
    )
    for name, items in expect.items():
        view = r if name == "default" else r.get_column_family(name)
        assert dict(view.items()) == items, name
        del view
    r.close()


def test_shale_reads_families_rocksdict_wrote(db_path, rocksdict):
    o = raw(rocksdict)
    o.create_missing_column_families(True)
    r = rocksdict.Rdict(db_path, o, column_families={"users": raw(rocksdict), "events": raw(rocksdict)})
    views = {"default": r, "users": r.get_column_family("users"), "events": r.get_column_family("events")}
    for name, items in FAMILIES.items():
        for i, (k, v) in enumerate(items.items()):
            views[name][k] = v
            if i == len(items) // 2:
                views[name].flush()
    wb = rocksdict.WriteBatch(raw_mode=True)
    for name in FAMILIES:
        wb.put(b"batch", name.encode(), r.get_column_family_handle(name))
    r.write(wb)
    del views["users"][b"u0007"]
    for v in list(views.values())[1:]:
        v.close()
    del views, wb
    r.close()  # rocksdict flushes at close: Shale reads RocksDB's tables of each family
    del r
    expect = {name: {**items, b"batch": name.encode()} for name, items in FAMILIES.items()}
    del expect["users"][b"u0007"]

    # rocksdict creates the families in an order of its own; `default` is first.
    listed = Rdict.list_cf(db_path)
    assert listed[0] == "default" and sorted(listed) == sorted(FAMILIES)
    db = Rdict(db_path, raw(), column_families={"users": raw(), "events": raw()})
    for name, items in expect.items():
        view = db if name == "default" else db.get_column_family(name)
        assert dict(view.items()) == items, name
        assert list(view.keys(backwards=True)) == sorted(items, reverse=True)
    # Shale writes and compacts a family; rocksdict reads the tables it wrote.
    users = db.get_column_family("users")
    users[b"added by shale"] = b"x"
    users.compact_range(None, None)
    db.close()
    r = rocksdict.Rdict(db_path, raw(rocksdict), column_families={"users": raw(rocksdict), "events": raw(rocksdict)})
    users = r.get_column_family("users")
    assert users[b"added by shale"] == b"x"
    assert len(list(users.keys())) == len(expect["users"]) + 1
    del users
    r.close()
    del r
    # As rocksdict, without options Shale follows the config file (raw mode) and opens every
    # family.
    db = Rdict(db_path)
    assert db.get_column_family("events")[b"batch"] == b"events"
    assert db.get_column_family("users")[b"added by shale"] == b"x"
    db.close()
