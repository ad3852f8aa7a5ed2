"""Several Python threads writing at once (the GIL is released in the engine)."""

import threading

from shale import Options, Rdict, WriteBatch


def test_threads_write_concurrently(db_path):
    opts = Options(raw_mode=True, write_buffer_size=256 << 10)
    db = Rdict(db_path, opts)
    threads, per_thread = 8, 3000
    errors = []

    def writer(t):
        try:
            for i in range(per_thread):
                if i % 100 == 0:
                    wb = WriteBatch(raw_mode=True)
                    wb.put(b"t%d-batch-%05d" % (t, i), b"b")
                    wb.put(b"t%d-batch2-%05d" % (t, i), b"b")
                    db.write(wb)
                db[b"t%d-%05d" % (t, i)] = b"%d" % (t * per_thread + i) * 10
                if i % 500 == 0:
                    assert db[b"t%d-%05d" % (t, i)] == b"%d" % (t * per_thread + i) * 10
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def reader():
        try:
            for _ in range(20):
                ks = list(db.keys())
                assert ks == sorted(ks)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    ts.append(threading.Thread(target=reader))
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for t in range(threads):
        for i in range(per_thread):
            assert db[b"t%d-%05d" % (t, i)] == b"%d" % (t * per_thread + i) * 10
    assert len(list(db.keys())) == threads * per_thread + threads * (per_thread // 100) * 2
    files = sum(db.property_int_value(f"rocksdb.num-files-at-level{level}") for level in range(7))
    assert files >= 1, "the writes went through memtable switches and flushes"
    db.close()
    db = Rdict(db_path, Options(raw_mode=True))
    assert db[b"t7-02999"] == b"%d" % (7 * per_thread + 2999) * 10
    db.close()


def test_one_iterator_shared_by_threads_never_deadlocks(db_path):
    """Threads pulling from the same keys() view: each entry comes out once; a thread that
    finds the view busy gets RuntimeError, never a hang."""
    db = Rdict(db_path)  # non-raw: decoding runs pickle, outside the iterator's lock
    n = 20000
    for i in range(n):
        db[i] = ("value", i)
    view = db.items()
    got, busy, errors = [], [0], []

    def pull():
        try:
            while True:
                try:
                    item = next(view)
                except StopIteration:
                    return
                except RuntimeError:
                    busy[0] += 1
                    continue
                got.append(item)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=pull) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
        assert not t.is_alive(), "an iterator shared by threads hung"
    assert not errors, errors
    assert sorted(got) == [(i, ("value", i)) for i in range(n)]
    db.close()
