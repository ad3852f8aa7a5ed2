"""Universal and FIFO compaction from Python (rocksdict's option classes), and databases of
either style exchanged with PyPI's rocksdict (RocksDB 9.x) both ways."""

import glob
import os
import time

import pytest

import shale

ITEMS = {b"k%05d" % i: (b"v%05d" % i) * 20 for i in range(6000)}


def universal_options(mod, raw=True):
    o = mod.Options(raw_mode=raw)
    o.set_compaction_style(mod.DBCompactionStyle.universal())
    u = mod.UniversalCompactOptions()
    u.size_ratio = 10
    u.min_merge_width = 2
    u.max_size_amplification_percent = 150
    u.stop_style = mod.UniversalCompactionStopStyle.similar()
    o.set_universal_compaction_options(u)
    o.set_write_buffer_size(64 * 1024)
    o.set_level_zero_file_num_compaction_trigger(2)
    return o


def fifo_options(mod, limit, raw=True):
    o = mod.Options(raw_mode=raw)
    o.set_compaction_style(mod.DBCompactionStyle.fifo())
    f = mod.FifoCompactOptions()
    f.max_table_files_size = limit
    o.set_fifo_compaction_options(f)
    o.set_write_buffer_size(64 * 1024)
    return o


def options_file(path):
    name = max(glob.glob(os.path.join(path, "OPTIONS-*")))
    with open(name) as f:
        return f.read()


def fill(db, items, every=500):
    for i, (k, v) in enumerate(items):
        db[k] = v
        if i % every == every - 1:
            db.flush()
    db.flush()


def test_option_classes_have_rocksdbs_defaults_and_reject_negatives(db_path):
    u = shale.UniversalCompactOptions()
    assert (u.size_ratio, u.min_merge_width, u.max_size_amplification_percent) == (1, 2, 200)
    assert u.compression_size_percent == -1
    assert u.stop_style == shale.UniversalCompactionStopStyle.total()
    assert shale.FifoCompactOptions().max_table_files_size == 1 << 30
    u.min_merge_width = -1
    with pytest.raises(ValueError, match="min_merge_width"):
        shale.Options().set_universal_compaction_options(u)
    # Contradicting widths are refused when the database opens, naming the option.
    o = shale.Options()
    o.set_compaction_style(shale.DBCompactionStyle.universal())
    u = shale.UniversalCompactOptions()
    u.min_merge_width, u.max_merge_width = 5, 3
    o.set_universal_compaction_options(u)
    with pytest.raises(shale.InvalidArgument, match="merge_width"):
        shale.Rdict(db_path, o)
    o = shale.Options()
    o.set_compaction_style(shale.DBCompactionStyle.fifo())
    f = shale.FifoCompactOptions()
    f.max_table_files_size = 0
    o.set_fifo_compaction_options(f)
    with pytest.raises(shale.InvalidArgument, match="max_table_files_size"):
        shale.Rdict(db_path, o)


def test_universal_db_from_shale_opens_in_rocksdict(db_path, rocksdict):
    db = shale.Rdict(db_path, universal_options(shale))
    fill(db, ITEMS.items())
    db.close()
    text = options_file(db_path)
    assert "compaction_style=kCompactionStyleUniversal" in text, text
    assert "stop_style=kCompactionStopStyleSimilarSize" in text, text
    assert "size_ratio=10" in text, text

    r = rocksdict.Rdict(db_path, universal_options(rocksdict))
    assert dict(r.items()) == ITEMS
    r[b"zz-rocksdict"] = b"1"
    r.close()
    db = shale.Rdict(db_path, universal_options(shale))
    assert db[b"zz-rocksdict"] == b"1" and db[b"k00042"] == ITEMS[b"k00042"]
    db.close()


def test_universal_db_from_rocksdict_opens_in_shale(db_path, rocksdict):
    r = rocksdict.Rdict(db_path, universal_options(rocksdict))
    fill(r, ITEMS.items())
    r.close()
    db = shale.Rdict(db_path, universal_options(shale))
    assert dict(db.items()) == ITEMS
    # Shale keeps compacting it with the universal style: more data, then a full compaction.
    fill(db, ((b"n%05d" % i, b"x" * 50) for i in range(3000)))
    db.compact_range(None, None)
    assert db[b"n02999"] == b"x" * 50 and db[b"k05999"] == ITEMS[b"k05999"]
    db.close()
    assert "compaction_style=kCompactionStyleUniversal" in options_file(db_path)


def test_fifo_db_from_rocksdict_opens_in_shale_which_keeps_the_newest(db_path, rocksdict):
    limit = 256 * 1024
    r = rocksdict.Rdict(db_path, fifo_options(rocksdict, limit))
    fill(r, ITEMS.items())
    r.close()
    db = shale.Rdict(db_path, fifo_options(shale, limit))
    # What RocksDB kept (it may have dropped its oldest files already) is a suffix of the write
    # order, values intact.
    got = dict(db.items())
    assert got
    first = min(got)
    assert got == {k: v for k, v in ITEMS.items() if k >= first}
    # Writing more in Shale makes it delete the oldest files (in the background) until the
    # table files fit the limit again; the newest data stays.
    fill(db, ((b"z%05d" % i, b"y" * 100) for i in range(6000)))
    deadline = time.monotonic() + 60
    while db.property_int_value("rocksdb.total-sst-files-size") > limit:
        assert time.monotonic() < deadline, "FIFO never brought the tables under the limit"
        time.sleep(0.05)
    assert db[b"z05999"] == b"y" * 100
    assert db.get(first) is None
    db.close()


def test_fifo_db_from_shale_opens_in_rocksdict(db_path, rocksdict):
    limit = 10 << 20
    db = shale.Rdict(db_path, fifo_options(shale, limit))
    fill(db, ITEMS.items())
    db.close()
    text = options_file(db_path)
    assert "compaction_style=kCompactionStyleFIFO" in text, text
    assert "max_table_files_size=%d" % limit in text, text
    r = rocksdict.Rdict(db_path, fifo_options(rocksdict, limit))
    assert dict(r.items()) == ITEMS
    r.close()
