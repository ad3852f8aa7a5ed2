"""SstFileWriter, Rdict.ingest_external_file and checkpoints, with rocksdict compatibility of the
files both ways."""

import os

import pytest

import shale


def raw():
    return shale.Options(raw_mode=True)


def write_sst(path, entries, options=None, range_del=None):
    """entries: (key, value or None for a deletion), keys increasing."""
    w = shale.SstFileWriter(options or raw())
    w.open(path)
    if range_del is not None:
        w.delete_range(*range_del)
    for i, (k, v) in enumerate(entries):
        if v is None:
            (w.delete(k) if i % 2 else w.__delitem__(k))
        elif i % 2:
            w.put(k, v)
        else:
            w[k] = v
    w.finish()
    assert w.file_size() > 0
    return path


def test_ingest_over_the_memtable_with_deletes_and_a_range_deletion(tmp_path, db_path):
    db = shale.Rdict(db_path, raw())
    for i in range(0, 300, 3):
        db[b"k%04d" % i] = b"memtable"
    seq = db.latest_sequence_number()
    f1 = write_sst(str(tmp_path / "1.sst"), [(b"k%04d" % i, b"f1-%d" % i) for i in range(0, 300, 2)])
    f2 = write_sst(
        str(tmp_path / "2.sst"),
        [(b"k%04d" % i, None if i % 20 == 0 else b"f2-%d" % i) for i in range(100, 200, 5)],
        range_del=(b"k0000", b"k0050"),
    )
    want = {b"k%04d" % i: b"memtable" for i in range(0, 300, 3)}
    want.update({b"k%04d" % i: b"f1-%d" % i for i in range(0, 300, 2)})
    db.ingest_external_file([f1])
    assert dict(db.items()) == want
    db.ingest_external_file([f2], shale.IngestExternalFileOptions())
    want = {k: v for k, v in want.items() if k >= b"k0050"}
    for i in range(100, 200, 5):
        if i % 20 == 0:
            want.pop(b"k%04d" % i, None)
        else:
            want[b"k%04d" % i] = b"f2-%d" % i
    assert dict(db.items()) == want
    assert db.latest_sequence_number() > seq, "overlapping files take global sequence numbers"
    assert os.path.exists(f1), "copied by default"
    db.close()
    db = shale.Rdict(db_path, raw())
    assert dict(db.items()) == want
    db.close()


def test_encoded_keys_move_files_and_column_families(tmp_path, db_path):
    # Non-raw mode: keys and values encoded as the Rdict encodes them.
    path = str(tmp_path / "enc.sst")
    w = shale.SstFileWriter(shale.Options())
    w.open(path)
    w["a"] = 1
    w["b"] = {"x": [1, 2]}
    w.finish()
    db = shale.Rdict(db_path)
    fam = db.create_column_family("fam", shale.Options())
    opts = shale.IngestExternalFileOptions()
    opts.set_move_files(True)
    fam.ingest_external_file([path], opts)
    assert not os.path.exists(path), "move_files removes the source"
    assert fam["a"] == 1 and fam["b"] == {"x": [1, 2]}
    assert "a" not in db, "only the family got the file"
    db.close()


def test_bad_input(tmp_path, db_path):
    w = shale.SstFileWriter(raw())
    with pytest.raises(shale.InvalidArgument):
        w.put(b"a", b"1")  # not opened
    w.open(str(tmp_path / "x.sst"))
    with pytest.raises(TypeError):
        w["str key"] = b"v"
    w[b"b"] = b"1"
    with pytest.raises(shale.InvalidArgument, match="ascending"):
        w[b"a"] = b"2"
    with pytest.raises(shale.InvalidArgument, match="ascending"):
        w[b"b"] = b"2"
    with pytest.raises(shale.InvalidArgument):
        w.delete_range(b"z", b"c")
    w.finish()
    w.open(str(tmp_path / "empty.sst"))
    with pytest.raises(shale.InvalidArgument, match="no entries"):
        w.finish()
    with pytest.raises(shale.InvalidArgument):
        w.finish()  # nothing open any more

    db = shale.Rdict(db_path, raw())
    with pytest.raises(shale.ShaleError):
        db.ingest_external_file([str(tmp_path / "missing.sst")])
    behind = shale.IngestExternalFileOptions()
    behind.set_ingest_behind(True)
    with pytest.raises(shale.InvalidArgument):
        db.ingest_external_file([str(tmp_path / "x.sst")], behind)
    garbage = tmp_path / "garbage.sst"
    garbage.write_bytes(b"not a table" * 100)
    with pytest.raises(shale.ShaleError):
        db.ingest_external_file([str(garbage)])
    assert list(db.keys()) == [], "a failed ingest adds nothing"
    with pytest.raises(TypeError):
        db.ingest_external_file([str(tmp_path / "x.sst")], "not options")
    db.close()
    with pytest.raises(shale.DbClosedError):
        db.ingest_external_file([str(tmp_path / "x.sst")])
    with pytest.raises(shale.DbClosedError):
        shale.Checkpoint(db)


def test_checkpoints(tmp_path, db_path):
    db = shale.Rdict(db_path, raw())
    for i in range(500):
        db[b"k%04d" % i] = b"v%d" % i
    db.flush()
    db[b"wal-only"] = b"x"
    cp1, cp2 = str(tmp_path / "cp1"), str(tmp_path / "cp2")
    shale.Checkpoint(db).create_checkpoint(cp1)
    db[b"after"] = b"y"
    db.create_checkpoint(cp2)
    with pytest.raises(shale.ShaleError):
        db.create_checkpoint(cp1)  # exists
    want = dict(db.items())
    db.close()
    c = shale.Rdict(cp1, raw())
    assert dict(c.items()) == {k: v for k, v in want.items() if k != b"after"}
    c.close()
    c = shale.Rdict(cp2, raw())
    assert dict(c.items()) == want
    c.close()


def ingest_and_check(db, path, prefix, range_del=False):
    """Ingests a file holding `k%04d` -> prefix + i, with every 7th key deleted, over a memtable
    with those 7th keys, `zz` and, with `range_del`, `a1` (under the file's range deletion); then
    compares and closes `db` (a shale or a rocksdict Rdict)."""
    for i in range(0, 1000, 7):
        db[b"k%04d" % i] = b"deleted by the file"
    db[b"zz"] = b"kept"
    if range_del:
        db[b"a1"] = b"deleted by the range"
    db.ingest_external_file([path])
    want = {b"k%04d" % i: prefix + b"%d" % i for i in range(1000) if i % 7}
    want[b"zz"] = b"kept"
    assert dict(db.items()) == want
    db.close()


def test_rocksdict_sst_files_ingest_into_shale(tmp_path, db_path, rocksdict):
    path = str(tmp_path / "rd.sst")
    w = rocksdict.SstFileWriter(rocksdict.Options(raw_mode=True))
    w.open(path)
    for i in range(1000):
        if i % 7 == 0:
            del w[b"k%04d" % i]
        else:
            w[b"k%04d" % i] = b"rd-%d" % i
    w.finish()
    ingest_and_check(shale.Rdict(db_path, raw()), path, b"rd-")


def test_shale_sst_files_ingest_into_rocksdict(tmp_path, db_path, rocksdict):
    path = write_sst(
        str(tmp_path / "shale.sst"),
        [(b"k%04d" % i, None if i % 7 == 0 else b"shale-%d" % i) for i in range(1000)],
        range_del=(b"a", b"b"),
    )
    ingest_and_check(rocksdict.Rdict(db_path, rocksdict.Options(raw_mode=True)), path, b"shale-", range_del=True)


def test_shale_sst_file_ingests_into_a_rocksdict_column_family(tmp_path, db_path, rocksdict):
    opts = raw()
    opts.set_compression_type(shale.DBCompressionType.zstd())
    path = write_sst(str(tmp_path / "cf.sst"), [(b"c%03d" % i, b"in-family") for i in range(100)], opts)
    r = rocksdict.Rdict(db_path, rocksdict.Options(raw_mode=True))
    fam = r.create_column_family("fam", rocksdict.Options(raw_mode=True))
    fam.ingest_external_file([path])
    assert dict(fam.items()) == {b"c%03d" % i: b"in-family" for i in range(100)}
    assert list(r.keys()) == []
    fam.close()
    r.close()


def test_rocksdict_opens_a_shale_checkpoint(tmp_path, db_path, rocksdict):
    db = shale.Rdict(db_path, raw())
    for i in range(300):
        db[b"k%04d" % i] = b"v%d" % i
    cp = str(tmp_path / "cp")
    shale.Checkpoint(db).create_checkpoint(cp)
    want = dict(db.items())
    db.close()
    r = rocksdict.Rdict(cp, rocksdict.Options(raw_mode=True))
    assert dict(r.items()) == want
    r.close()
