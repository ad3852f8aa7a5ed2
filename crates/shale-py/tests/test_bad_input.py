"""Bad input: Python exceptions, never a crash of the interpreter."""

import pytest

import shale
from shale import Options, Rdict, WriteBatch


def test_str_where_bytes_are_needed_in_raw_mode(db_path):
    db = Rdict(db_path, Options(raw_mode=True))
    with pytest.raises(TypeError):
        db["str key"] = b"v"
    with pytest.raises(TypeError):
        db[b"k"] = "str value"
    with pytest.raises(TypeError):
        db[1]
    with pytest.raises(TypeError):
        db.get(None)
    with pytest.raises(TypeError):
        "k" in db
    with pytest.raises(TypeError):
        list(db.keys(from_key="k"))
    with pytest.raises(TypeError):
        db.iter().seek("k")
    with pytest.raises(TypeError):
        db.delete_range("a", b"b")
    wb = WriteBatch(raw_mode=True)
    with pytest.raises(TypeError):
        wb.put("k", b"v")
    # A batch of the other mode would write another encoding.
    with pytest.raises(ValueError):
        db.write(WriteBatch())
    with pytest.raises(TypeError):
        db.write("not a batch")
    db[b"k"] = b"v"
    assert db[b"k"] == b"v"
    db.close()


def test_unpicklable_value(db_path):
    db = Rdict(db_path)
    with pytest.raises(Exception):
        db["lambda"] = lambda: 1
    assert "lambda" not in db
    db.close()


def test_use_after_close(db_path):
    db = Rdict(db_path)
    db["a"] = 1
    it = db.iter()
    it.seek_to_first()
    keys = db.keys()
    snap = db.snapshot()
    db.close()
    db.close()  # closing twice is fine
    for f in [
        lambda: db["a"],
        lambda: db.__setitem__("a", 2),
        lambda: db.get("a"),
        lambda: "a" in db,
        lambda: db.delete("a"),
        lambda: list(db.keys()),
        lambda: db.flush(),
        lambda: db.compact_range(None, None),
        lambda: db.property_value("rocksdb.stats"),
        lambda: db.snapshot(),
        lambda: db.write(WriteBatch()),
        lambda: it.valid(),
        lambda: it.next(),
        lambda: it.key(),
        lambda: next(keys),
        lambda: snap["a"],
        lambda: list(snap.items()),
    ]:
        with pytest.raises(shale.DbClosedError):
            f()
    assert issubclass(shale.DbClosedError, shale.ShaleError)
    # The database is closed for real: it opens again.
    db = Rdict(db_path)
    assert db["a"] == 1
    db.close()


def test_unknown_option_and_bad_option_values():
    with pytest.raises(ValueError, match="unknown option"):
        Options(no_such_option=1)
    opts = Options()
    with pytest.raises(ValueError, match="unknown option"):
        opts.set_option("write_bufer_size", 1)
    with pytest.raises(TypeError):
        opts.set_write_buffer_size("large")
    with pytest.raises(OverflowError):
        opts.set_write_buffer_size(-1)
    with pytest.raises(ValueError):
        opts.set_compression_type("lzma")
    with pytest.raises(ValueError):
        opts.set_log_level("loud")
    with pytest.raises(AttributeError):
        opts.set_nothing(1)


def test_invalid_options_fail_the_open(db_path):
    opts = Options()
    opts.set_num_levels(1)
    with pytest.raises(shale.InvalidArgument):
        Rdict(db_path, opts)


def test_error_classes():
    for name in ["Corruption", "InvalidArgument", "IOError", "NotSupported", "Busy", "NotFound", "Incomplete"]:
        assert issubclass(getattr(shale, name), shale.ShaleError)
    assert issubclass(shale.ShaleError, Exception)


def test_corrupt_encoding_is_an_error_not_a_crash(db_path):
    db = Rdict(db_path, Options(raw_mode=True))
    db[b"\x02k"] = b"\x09garbage"
    db[b"\x02e"] = b""
    db.close()
    db = Rdict(db_path, Options(raw_mode=False))
    with pytest.raises(shale.ShaleError):
        db["k"]
    # An empty stored value is what a plain read of an entity without a default column
    # returns: rocksdict decodes it as "", and so does Shale.
    assert db["e"] == ""
    db.close()
