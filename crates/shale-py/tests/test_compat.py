"""Compatibility with PyPI's rocksdict (RocksDB 9.x): databases open in both, raw and non-raw.
The non-raw encoding of keys and values is rocksdict's byte for byte, and non-raw databases use
rocksdict's comparator ("rocksdict": ints by value, other keys bytewise) in both."""

import shale

ITEMS = {b"k%04d" % i: b"value-%d" % i * (i % 7) for i in range(2000)}


def test_rocksdict_reads_what_shale_wrote(db_path, rocksdict):
    db = shale.Rdict(db_path, shale.Options(raw_mode=True))
    for k, v in list(ITEMS.items())[:1500]:
        db[k] = v
    db.flush()  # some in a table file, the rest only in the WAL
    for k, v in list(ITEMS.items())[1500:]:
        db[k] = v
    db.delete_range(b"k0100", b"k0200")
    db.close()
    expect = {k: v for k, v in ITEMS.items() if not (b"k0100" <= k < b"k0200")}

    r = rocksdict.Rdict(db_path, rocksdict.Options(raw_mode=True))
    assert dict(r.items()) == expect
    assert r[b"k0042"] == ITEMS[b"k0042"]
    assert r.get(b"k0150") is None
    r.close()
    # The rocksdict config file Shale wrote lets rocksdict open it without options too.
    r = rocksdict.Rdict(db_path)
    assert r[b"k1999"] == ITEMS[b"k1999"]
    r.close()


def test_shale_reads_what_rocksdict_wrote(db_path, rocksdict):
    r = rocksdict.Rdict(db_path, rocksdict.Options(raw_mode=True))
    for k, v in list(ITEMS.items())[:1000]:
        r[k] = v
    r.flush()
    for k, v in list(ITEMS.items())[1000:]:
        r[k] = v
    del r[b"k0007"]
    r.close()
    expect = dict(ITEMS)
    del expect[b"k0007"]

    db = shale.Rdict(db_path, shale.Options(raw_mode=True))
    assert dict(db.items()) == expect
    assert list(db.keys(backwards=True, from_key=b"k0010")) == sorted(
        (k for k in expect if k <= b"k0010"), reverse=True
    )
    db[b"added by shale"] = b"x"
    db.compact_range(None, None)
    db.close()
    # rocksdict's config says raw_mode: Shale follows it without options, and rocksdict reads
    # the tables Shale's compaction wrote.
    db = shale.Rdict(db_path)
    assert db[b"k0001"] == ITEMS[b"k0001"]
    db.close()
    r = rocksdict.Rdict(db_path, rocksdict.Options(raw_mode=True))
    assert r[b"added by shale"] == b"x"
    assert len(list(r.keys())) == len(expect) + 1
    r.close()


VALUES = [b"b", "s", "é", 0, 1, -1, 127, 128, -128, -129, 255, 256, 2**63, -(2**63), 2**80, -(2**70) - 1,
          1.25, -0.5, True, False, None, (1, 2), [b"x", {"k": 1.5}]]


def test_value_encoding_is_rocksdicts(tmp_path, rocksdict):
    """Values stored by rocksdict (non-raw) and by Shale (non-raw) are the same bytes."""
    rpath, spath = str(tmp_path / "r"), str(tmp_path / "s")
    r = rocksdict.Rdict(rpath)
    s = shale.Rdict(spath)
    for i, v in enumerate(VALUES):
        r[i] = v
        s[i] = v
    r.close()
    s.close()
    r = rocksdict.Rdict(rpath, rocksdict.Options(raw_mode=True))
    theirs = dict(r.items())
    r.close()
    s = shale.Rdict(spath, shale.Options(raw_mode=True))
    ours = dict(s.items())
    s.close()
    assert len(ours) == len(VALUES)
    assert ours == theirs


KEYS = [0, 1, -1, 127, 128, -129, 255, 256, 2**63, -(2**63), 2**100, -(2**100), 10**30 + 7,
        "a", "é", "", b"", b"\x00", b"\xff", 1.5, -2.25, 0.0]


def items_in_order(db):
    return list(db.items())


def test_rocksdict_non_raw_database_opens_in_shale(db_path, rocksdict):
    r = rocksdict.Rdict(db_path)
    for i, k in enumerate(KEYS[:12]):
        r[k] = i
    r.flush()  # some keys in a table file RocksDB wrote, the rest in its WAL
    for i, k in enumerate(KEYS[12:], 12):
        r[k] = i
    theirs = items_in_order(r)
    r.close()
    assert [k for k, _ in theirs if isinstance(k, int)] == sorted(k for k in KEYS if type(k) is int)

    db = shale.Rdict(db_path)  # options from the database: non-raw, rocksdict's comparator
    assert items_in_order(db) == theirs
    assert list(db.keys(from_key=128)) == [k for k, _ in theirs if isinstance(k, float) or (type(k) is int and k >= 128)]
    db[-5] = "added by shale"
    db.delete_range(2**63, 2**100 + 1)
    db.compact_range(None, None)  # every table rewritten by Shale, in rocksdict's order
    ours = items_in_order(db)
    db.close()

    r = rocksdict.Rdict(db_path)
    assert items_in_order(r) == ours
    assert r[-5] == "added by shale" and 2**100 not in r and 10**30 + 7 not in r and r[-(2**100)] == 11
    r.close()


def test_shale_non_raw_database_opens_in_rocksdict(db_path, rocksdict):
    db = shale.Rdict(db_path, shale.Options())
    for i, k in enumerate(KEYS):
        db[k] = i
        if i == 8:
            db.flush()
    ours = items_in_order(db)
    db.close()
    assert [k for k, _ in ours if type(k) is int] == sorted(k for k in KEYS if type(k) is int)

    r = rocksdict.Rdict(db_path)
    assert items_in_order(r) == ours
    assert list(r.keys(from_key=0, backwards=True))[:3] == [0, -1, -129]
    r[3] = "added by rocksdict"
    r.close()
    db = shale.Rdict(db_path)
    assert db[3] == "added by rocksdict"
    db.close()


def test_bz2_and_lz4hc_tables_both_ways(tmp_path, rocksdict):
    """BZip2 and LZ4HC blocks (rocksdict's names `bz2()`, `lz4hc()`): tables Shale wrote are
    read by rocksdict, and the reverse. (rocksdict's RocksDB has no zlib; Zlib is checked
    against RocksDB 7.8's ldb in the engine's tests.)"""
    import os

    def write(db):
        for k, v in ITEMS.items():
            db[k] = v
        db.flush()
        db.close()

    for name, kind in [("bz2", "kBZip2Compression"), ("lz4hc", "kLZ4HCCompression")]:
        path = str(tmp_path / ("shale-" + name))
        opts = shale.Options(raw_mode=True)
        opts.set_compression_type(getattr(shale.DBCompressionType, name)())
        write(shale.Rdict(path, opts))
        newest = sorted(f for f in os.listdir(path) if f.startswith("OPTIONS-"))[-1]
        assert "compression=" + kind in open(os.path.join(path, newest)).read()
        r = rocksdict.Rdict(path, rocksdict.Options(raw_mode=True))
        assert dict(r.items()) == ITEMS
        r.close()

        path = str(tmp_path / ("rocksdict-" + name))
        ropts = rocksdict.Options(raw_mode=True)
        ropts.set_compression_type(getattr(rocksdict.DBCompressionType, name)())
        write(rocksdict.Rdict(path, ropts))
        db = shale.Rdict(path, shale.Options(raw_mode=True))
        assert dict(db.items()) == ITEMS
        db.close()
