"""Secondary instances (rocksdict's `AccessType.secondary` and `try_catch_up_with_primary`):
a read-only view of a database another handle writes, moved forward on demand; in both
directions with PyPI's rocksdict (RocksDB 9.x) as the other side, live in the same process."""

import pytest

import shale


def test_a_secondary_follows_its_primary(db_path, tmp_path):
    primary = shale.Rdict(db_path)
    ref = {}
    for i in range(300):
        primary[i] = i * i
        ref[i] = i * i
    sec = shale.Rdict(db_path, access_type=shale.AccessType.secondary(str(tmp_path / "sec")))
    assert dict(sec.items()) == ref  # what the primary has only in its WAL, at the open
    for i in range(0, 300, 3):
        del primary[i]
        del ref[i]
    primary[10**20] = "big"
    ref[10**20] = "big"
    primary.flush(True)
    assert 3 not in ref and sec[3] == 9, "no catch-up yet: the old view"
    sec.try_catch_up_with_primary()
    assert dict(sec.items()) == ref
    primary.delete_range(100, 200)
    for k in [k for k in ref if 100 <= k < 200]:
        del ref[k]
    sec.try_catch_up_with_primary()
    assert dict(sec.items()) == ref
    # Keys in rocksdict's order (ints by value) on the secondary too.
    assert list(sec.keys())[:3] == [1, 2, 4]
    with pytest.raises(Exception, match="secondary"):
        sec[1] = 2
    with pytest.raises(Exception, match="secondary"):
        primary.try_catch_up_with_primary()
    assert repr(shale.AccessType.secondary("/x")) == 'AccessType.secondary("/x")'
    sec.close()
    primary.close()


def test_shale_secondary_of_a_rocksdict_primary(db_path, tmp_path, rocksdict):
    r = rocksdict.Rdict(db_path)
    for i in range(500):
        r[i] = str(i)
    r.flush()
    sec = shale.Rdict(db_path, access_type=shale.AccessType.secondary(str(tmp_path / "sec")))
    assert dict(sec.items()) == {i: str(i) for i in range(500)}
    for i in range(0, 500, 2):
        del r[i]
    r[1000] = "wal only"
    sec.try_catch_up_with_primary()
    want = {i: str(i) for i in range(1, 500, 2)}
    want[1000] = "wal only"
    assert dict(sec.items()) == want
    sec.close()
    r.close()


def test_rocksdict_secondary_of_a_shale_primary(db_path, tmp_path, rocksdict):
    primary = shale.Rdict(db_path)
    for i in range(500):
        primary[i] = [i]
    primary.flush(True)
    primary[-5] = "wal only"
    sec = rocksdict.Rdict(db_path, access_type=rocksdict.AccessType.secondary(str(tmp_path / "sec")))
    sec.try_catch_up_with_primary()
    want = {i: [i] for i in range(500)}
    want[-5] = "wal only"
    assert dict(sec.items()) == want
    sec.close()
    primary.close()
