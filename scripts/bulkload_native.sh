#!/usr/bin/env bash
# Bulk load, Shale vs RocksDB 11.8.1, both native: `shale bench --benchmarks=fillseqingest`
# against scripts/rocksdb/bulkload.cc (RocksDB's SstFileWriter + IngestExternalFile), the same
# keys, value size, file cut and compression, runs interleaved; prints each run and the medians.
#
#   usage: scripts/bulkload_native.sh [NUM=10000000] [DIR=/tmp] [ROUNDS=3] [COMPRESSION=none]
#   env:   SHALE (default target/release/shale), ROCKSDB_BULKLOAD (default: built by
#          scripts/build_rocksdb_bulkload.sh), VALUE_SIZE (100), FILE_BYTES (67108864)
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=${1:-10000000}
DIR=${2:-/tmp}
ROUNDS=${3:-3}
COMP=${4:-none}
VALUE_SIZE=${VALUE_SIZE:-100}
FILE_BYTES=${FILE_BYTES:-67108864}
SHALE=${SHALE:-target/release/shale}
[ -x "$SHALE" ] || cargo build --release -p shale-cli
RB=${ROCKSDB_BULKLOAD:-$(scripts/build_rocksdb_bulkload.sh | tail -n 1)}
mbs() { sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
s_all=(); r_all=()
for i in $(seq "$ROUNDS"); do
  s=$("$SHALE" bench --benchmarks=fillseqingest --num="$NUM" --value_size="$VALUE_SIZE" \
    --compression_type="$COMP" --target_file_size_base="$FILE_BYTES" --db="$DIR/bulk-shale" | grep '^fillseqingest')
  echo "shale   $s"
  s_all+=("$(echo "$s" | mbs)")
  rm -rf "$DIR/bulk-shale"
  r=$("$RB" "$DIR/bulk-rocksdb" "$NUM" 16 "$VALUE_SIZE" "$FILE_BYTES" "$COMP" | grep '^fillseqingest')
  echo "rocksdb $r"
  r_all+=("$(echo "$r" | mbs)")
  rm -rf "$DIR/bulk-rocksdb"
done
sm=$(printf '%s\n' "${s_all[@]}" | median)
rm_=$(printf '%s\n' "${r_all[@]}" | median)
echo "median MB/s: shale $sm  rocksdb $rm_  ratio $(awk -v a="$sm" -v b="$rm_" 'BEGIN {printf "%.2f", a / b}')x  (num=$NUM, $COMP)"
