#!/usr/bin/env bash
# RocksDB's cached range-tombstone experiment, Shale vs RocksDB's db_bench, identical
# flags, one after the other, on /dev/shm:
#   --benchmarks=fillrandom,readrandom --writes_per_range_tombstone=1 --max_write_buffer_number=100
#   --min_write_buffer_number_to_merge=100 --writes=500000 --reads=100000 --max_num_range_tombstones=N
# usage: scripts/rangedel_bench.sh [N...]     (default: 0 1 10 100 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
SHALE=${SHALE:-target/release/shale}
ANCHOR=${ROCKSDB_DB_BENCH:-${ANCHOR:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench/db_bench}}
DIR=${DIR:-/dev/shm/shale-rangedel}
THREADS=${THREADS:-1}
WRITES=${WRITES:-500000}
READS=${READS:-100000}
[ -x "$SHALE" ] || cargo build --release -p shale-cli
[ -x "$ANCHOR" ] || { echo "anchor db_bench not found at $ANCHOR (build it with scripts/build_rocksdb_bench.sh, or set ROCKSDB_DB_BENCH)"; ANCHOR=""; }
NS=${*:-0 1 10 100 1000}
COMMON="--benchmarks=fillrandom,readrandom --writes_per_range_tombstone=1 --max_write_buffer_number=100
 --min_write_buffer_number_to_merge=100 --writes=$WRITES --reads=$READS --threads=$THREADS
 --compression_type=none --format_version=5 --seed=1"
ops() { grep -E "^$1 " | head -1 | awk '{print $5}'; }
printf "%-6s %12s %12s %12s %12s %8s\n" N shale_fill anchor_fill shale_read anchor_read read_ratio
for n in $NS; do
  rm -rf "$DIR"; s=$($SHALE bench $COMMON --max_num_range_tombstones=$n --db="$DIR" 2>/dev/null)
  sf=$(echo "$s" | ops fillrandom); sr=$(echo "$s" | ops readrandom)
  af=-; ar=-; ratio=-
  if [ -n "$ANCHOR" ]; then
    rm -rf "$DIR"; a=$($ANCHOR $COMMON --max_num_range_tombstones=$n --db="$DIR" 2>/dev/null)
    af=$(echo "$a" | ops fillrandom); ar=$(echo "$a" | ops readrandom)
    ratio=$(awk -v a="$sr" -v b="$ar" 'BEGIN{printf "%.2f", a/b}')
  fi
  printf "%-6s %12s %12s %12s %12s %8s\n" "$n" "$sf" "$af" "$sr" "$ar" "$ratio"
done
rm -rf "$DIR"
