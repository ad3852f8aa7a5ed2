"""Prefix extractors and prefix seek (rocksdict's SliceTransform, Options.set_prefix_extractor,
ReadOptions.set_prefix_same_as_start / set_total_order_seek), and compatibility both ways with
rocksdict: a database with prefix filters written by one opens in the other and prefix seeks
agree, key by key, with each other and with a model."""

import random

import pytest

import shale

# 60 prefixes of 3 bytes, up to 40 keys each, plus keys shorter than the prefix (outside a
# fixed extractor's domain)
RNG = random.Random(17)
KEYS = sorted(
    {b"p%02d" % p + b"-%03d" % RNG.randrange(1000) for p in range(0, 120, 2) for _ in range(RNG.randrange(1, 40))}
    | {b"a", b"p0", b"zz"}
)
# RocksDB's fixed extractor must not be asked for the prefix of a key outside its domain (it
# reads past the key: rocksdict's reverse prefix seek from b"p00" stops at b"p0", whose "prefix"
# then depends on the bytes that follow); the compatibility tests keep to keys in the domain.
IN_DOMAIN = [k for k in KEYS if len(k) >= 3]
TARGETS = [b"p%02d" % p + s for p in range(0, 121) for s in (b"", b"-500", b"-999")] + [b"p0", b"a", b"zz", b"q"]


def prefix_scan(db, mod, target, backwards=False, same_as_start=True, total_order=False):
    ro = mod.ReadOptions()
    ro.set_prefix_same_as_start(same_as_start)
    ro.set_total_order_seek(total_order)
    it = db.iter(ro)
    out = []
    if backwards:
        it.seek_for_prev(target)
    else:
        it.seek(target)
    while it.valid():
        out.append(it.key())
        it.prev() if backwards else it.next()
    return out


def model_scan(target, backwards=False, n=3, keys=KEYS):
    p = target[:n]
    if backwards:
        keys = [k for k in reversed(keys) if k <= target]
    else:
        keys = [k for k in keys if k >= target]
    out = []
    for k in keys:
        if k[:n] != p:
            break
        out.append(k)
    return out


def fill(db, keys=KEYS):
    """Half the keys in table files (two flushes), the rest in the memtable."""
    for i, k in enumerate(keys):
        db[k] = b"v" + k
        if i in (len(keys) // 4, len(keys) // 2):
            db.flush()


def shale_opts(n=3):
    o = shale.Options(raw_mode=True)
    o.set_prefix_extractor(shale.SliceTransform.create_fixed_prefix(n))
    o.set_memtable_prefix_bloom_ratio(0.1)
    return o


def rocksdict_opts(rocksdict, n=3):
    o = rocksdict.Options(raw_mode=True)
    o.set_prefix_extractor(rocksdict.SliceTransform.create_fixed_prefix(n))
    o.set_memtable_prefix_bloom_ratio(0.1)
    bbo = rocksdict.BlockBasedOptions()
    bbo.set_bloom_filter(10, False)
    o.set_block_based_table_factory(bbo)
    return o


def test_slice_transforms_carry_rocksdbs_names():
    assert shale.SliceTransform.create_fixed_prefix(8).name == "rocksdb.FixedPrefix.8"
    assert shale.SliceTransform.create_max_len_prefix(4).name == "rocksdb.CappedPrefix.4"
    assert shale.SliceTransform.create_noop().name == "rocksdb.Noop"
    assert "FixedPrefix.2" in repr(shale.SliceTransform.create_fixed_prefix(2))
    with pytest.raises(OverflowError):
        shale.SliceTransform.create_fixed_prefix(-1)
    with pytest.raises(ValueError, match="memtable_prefix_bloom_ratio"):
        shale.Options().set_memtable_prefix_bloom_ratio(-0.5)


def test_prefix_seek_follows_the_model(db_path):
    db = shale.Rdict(db_path, shale_opts())
    fill(db)
    for t in TARGETS:
        assert prefix_scan(db, shale, t) == model_scan(t), t
        assert prefix_scan(db, shale, t, backwards=True) == model_scan(t, backwards=True), t
        # total order: everything from the target on
        assert prefix_scan(db, shale, t, same_as_start=False, total_order=True) == [k for k in KEYS if k >= t]
    # a capped extractor: keys shorter than the cap are their own prefix
    db.close()
    o = shale.Options(raw_mode=True)
    o.set_prefix_extractor(shale.SliceTransform.create_max_len_prefix(2))
    db = shale.Rdict(db_path, o)
    for t in TARGETS:
        assert prefix_scan(db, shale, t) == model_scan(t, n=2), t
    db.close()


def test_rocksdict_prefix_db_opens_in_shale(db_path, rocksdict):
    r = rocksdict.Rdict(db_path, rocksdict_opts(rocksdict))
    fill(r, IN_DOMAIN)
    r.flush()
    theirs = {t: (prefix_scan(r, rocksdict, t), prefix_scan(r, rocksdict, t, backwards=True)) for t in TARGETS}
    r.close()
    for t, (fwd, back) in theirs.items():
        assert fwd == model_scan(t, keys=IN_DOMAIN), t
    db = shale.Rdict(db_path, shale_opts())
    for t, (fwd, back) in theirs.items():
        assert prefix_scan(db, shale, t) == fwd, t
        assert prefix_scan(db, shale, t, backwards=True) == back, t
        assert [db.get(k) for k in fwd] == [b"v" + k for k in fwd]
    # Shale adds keys in its own files; rocksdict's prefix seeks still agree with the model
    for p in range(1, 121, 2):
        db[b"p%02d-777" % p] = b"new"
    db.flush()
    db.close()
    added = sorted(IN_DOMAIN + [b"p%02d-777" % p for p in range(1, 121, 2)])
    r = rocksdict.Rdict(db_path, rocksdict_opts(rocksdict))
    for t in TARGETS:
        want = [k for k in added if k >= t and k[:3] == t[:3]]
        assert prefix_scan(r, rocksdict, t) == want, t
    r.close()


def test_shale_prefix_db_opens_in_rocksdict(db_path, rocksdict):
    db = shale.Rdict(db_path, shale_opts())
    fill(db, IN_DOMAIN)
    db.flush()
    ours = {t: (prefix_scan(db, shale, t), prefix_scan(db, shale, t, backwards=True)) for t in TARGETS}
    db.close()
    r = rocksdict.Rdict(db_path, rocksdict_opts(rocksdict))
    for t, (fwd, back) in ours.items():
        assert fwd == model_scan(t, keys=IN_DOMAIN), t
        assert prefix_scan(r, rocksdict, t) == fwd, t
        assert prefix_scan(r, rocksdict, t, backwards=True) == back, t
        assert prefix_scan(r, rocksdict, t, same_as_start=False, total_order=True) == [k for k in IN_DOMAIN if k >= t]
    r.close()


def test_another_extractor_is_never_wrong(db_path, rocksdict):
    """Files rocksdict built with a 3-byte extractor, read by Shale with a 2-byte one: their
    prefix filters cannot be used, and no key is missed."""
    r = rocksdict.Rdict(db_path, rocksdict_opts(rocksdict))
    fill(r, IN_DOMAIN)
    r.flush()
    r.close()
    db = shale.Rdict(db_path, shale_opts(n=2))
    for t in TARGETS:
        assert prefix_scan(db, shale, t) == model_scan(t, n=2, keys=IN_DOMAIN), t
    db.close()
