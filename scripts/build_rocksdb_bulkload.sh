#!/usr/bin/env bash
# Builds scripts/rocksdb/bulkload.cc (RocksDB's SstFileWriter + IngestExternalFile, timed as
# `shale bench --benchmarks=fillseqingest`) against the RocksDB 11.8.1 libraries that
# scripts/build_rocksdb_bench.sh builds (it is run first; it returns at once when already done).
#
#   usage: scripts/build_rocksdb_bulkload.sh [OUT_DIR]    (OUT_DIR as build_rocksdb_bench.sh's)
#   result: OUT_DIR/rocksdb_bulkload, whose path is printed on the last line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench}
BIN=$OUT/rocksdb_bulkload
. "$HERE/rocksdb/anchor_libs.sh"
g++ -std=c++20 -O2 -march=native -DNDEBUG -DOS_LINUX -DROCKSDB_PLATFORM_POSIX -I"$SRC/include" \
  "$HERE/rocksdb/bulkload.cc" -o "$BIN.tmp" "${libs[@]}" -lpthread -ldl
mv "$BIN.tmp" "$BIN"
echo "$BIN"
