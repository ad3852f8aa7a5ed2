import os
import sys

import pytest


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "db")


@pytest.fixture
def rocksdict():
    """PyPI's rocksdict (RocksDB 9.x) for the compatibility tests. Missing: the test is skipped
    with a loud message, or fails when SHALE_REQUIRE_ROCKSDB=1 (as in CI)."""
    try:
        import rocksdict as r
    except ImportError as e:
        msg = (
            "*** rocksdict is NOT installed: the compatibility tests with RocksDB did not run "
            f"({e}); `pip install rocksdict` ***"
        )
        print(msg, file=sys.stderr)
        if os.environ.get("SHALE_REQUIRE_ROCKSDB") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return r
