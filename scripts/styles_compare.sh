#!/usr/bin/env bash
# Universal and FIFO compaction, Shale vs RocksDB 11.8.1's db_bench with
# identical flags, one process per tool and style, 10M keys on disk.
#   usage: scripts/styles_compare.sh [DIR] [OUT]  (DIR: scratch database, default /tmp/shale-styles;
#          OUT: where the logs go, default a new /tmp/styles.XXXXXX)
#   env: NUM (10000000) STYLES ("universal fifo") SHALE ANCHOR (as scripts/compare_large.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp/shale-styles}
OUT=${2:-$(mktemp -d /tmp/styles.XXXXXX)}
NUM=${NUM:-10000000}
SHALE=${SHALE:-target/release/shale}
ANCHOR=${ROCKSDB_DB_BENCH:-${ANCHOR:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench/db_bench}}
[ -x "$SHALE" ] || cargo build --release -p shale-cli
B="--benchmarks=fillrandom,overwrite,readrandom,seekrandom,stats --num=$NUM --reads=1000000
 --value_size=100 --compression_type=none --bloom_bits=10 --cache_size=33554432"
for style in ${STYLES:-universal fifo}; do
  case $style in
    universal) S="--compaction_style=1";;
    fifo) S="--compaction_style=2 --fifo_compaction_max_table_files_size_mb=1024";;
  esac
  for tool in shale anchor; do
    rm -rf "$DIR"
    if [ $tool = shale ]; then "$SHALE" bench --db="$DIR" $B $S > "$OUT/$tool-$style.out" 2>&1
    else "$ANCHOR" --db="$DIR" $B $S > "$OUT/$tool-$style.out" 2>&1; fi
    echo "final size MB: $(du -sm "$DIR" | cut -f1)" >> "$OUT/$tool-$style.out"
  done
done
rm -rf "$DIR"
cd "$OUT" && grep -E "^(fillrandom|overwrite|readrandom|seekrandom) | Sum|final size" ./*.out
