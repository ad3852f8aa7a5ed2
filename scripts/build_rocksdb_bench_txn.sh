#!/usr/bin/env bash
# Builds `db_bench_txn`: the anchor db_bench (scripts/build_rocksdb_bench.sh, RocksDB 11.8.1)
# relinked with test_util/transaction_test_util.cc compiled WITHOUT -DNDEBUG. RocksDB's
# RandomTransactionInserter names its transactions inside an assert()
# (`assert(txn_->SetName(name).ok())`), so in RocksDB's own release build the name is never set,
# every Prepare fails ("Cannot prepare a transaction that has not been named") and
# `--benchmarks=randomtransaction --transaction_db=1` cannot run. Only that one file (the
# benchmark's transaction driver, not the engine) is built with assertions on. The same file's
# debug-log line reads `txn->GetSnapshot()->GetSequenceNumber()`, a null pointer for an
# optimistic transaction (db_bench never gives it a snapshot), so
# `--optimistic_transaction_db=1` crashes every RocksDB build (7.8's too); the copy compiled
# here logs 0 when there is no snapshot. Nothing else in it changes.
#
#   usage: scripts/build_rocksdb_bench_txn.sh [OUT_DIR]   (OUT_DIR as build_rocksdb_bench.sh's)
#   result: OUT_DIR/db_bench_txn, whose path is printed on the last line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench}
. "$HERE/rocksdb/anchor_libs.sh"
for o in db_bench db_bench_tool simulated_hybrid_file_system tool_hooks testutil; do
  [ -f "$WORK/$o.o" ] || { echo "$WORK/$o.o missing (remove $OUT/db_bench and rebuild)" >&2; exit 1; }
done
defines=(-DOS_LINUX -DROCKSDB_PLATFORM_POSIX -DROCKSDB_LIB_IO_POSIX -DROCKSDB_SCHED_GETCPU_PRESENT
  -DROCKSDB_AUXV_GETAUXVAL_PRESENT -DROCKSDB_FALLOCATE_PRESENT -DROCKSDB_RANGESYNC_PRESENT
  -D_FILE_OFFSET_BITS=64 -D_LARGEFILE64_SOURCE=1 -DHAVE_UINT128_EXTENSION -DHAVE_ALIGNED_NEW
  -DGFLAGS=1 -DSNAPPY=1 -DLZ4=1 -DZSTD=1)
sed 's/txn->GetSnapshot()->GetSequenceNumber()/(txn->GetSnapshot() ? txn->GetSnapshot()->GetSequenceNumber() : 0)/' \
  "$SRC/test_util/transaction_test_util.cc" >"$WORK/transaction_test_util_patched.cc"
grep -q 'txn->GetSnapshot() ? ' "$WORK/transaction_test_util_patched.cc" ||
  { echo "the null-snapshot log line was not found in transaction_test_util.cc" >&2; exit 1; }
g++ -std=c++20 -O2 -march=native "${defines[@]}" -I"$SRC" -I"$SRC/include" -I"$SRC/test_util" \
  -c "$WORK/transaction_test_util_patched.cc" -o "$WORK/transaction_test_util_asserts.o"
# The object first: its definitions win over librocksdb.a's.
g++ -o "$OUT/db_bench_txn.tmp" "$WORK/transaction_test_util_asserts.o" \
  "$WORK"/{db_bench,db_bench_tool,simulated_hybrid_file_system,tool_hooks,testutil}.o "${libs[@]}" \
  -lgflags -lpthread -ldl -Wl,--allow-multiple-definition
mv "$OUT/db_bench_txn.tmp" "$OUT/db_bench_txn"
echo "$OUT/db_bench_txn"
