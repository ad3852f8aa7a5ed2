#!/usr/bin/env bash
# Issue 3's large-database comparison: Shale vs RocksDB 11.8.1's db_bench, identical flags, one
# process per tool running fillrandom, overwrite, readrandom, readwhilewriting, seekrandom on a
# database several times larger than the memtable budget, with --statistics (write amplification)
# and peak RSS from /usr/bin/time.
#   usage: scripts/compare_large.sh [DIR]     env: NUM (10000000) READS (1000000) SHALE ANCHOR
#          EXTRA (more flags for both tools, e.g. --cache_index_and_filter_blocks=1)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/work/tmp-large}
NUM=${NUM:-10000000}
READS=${READS:-1000000}
SHALE=${SHALE:-target/release/shale}
ANCHOR=${ANCHOR:-$HOME/.cache/rocksdb-anchor/db_bench}
[ -x "$SHALE" ] || cargo build --release -p shale-cli
FLAGS="--benchmarks=fillrandom,overwrite,readrandom,readwhilewriting,seekrandom,stats
 --num=$NUM --reads=$READS --value_size=100 --compression_type=none --bloom_bits=10
 --cache_size=33554432 --format_version=5 --write_buffer_size=67108864 --max_write_buffer_number=2
 --max_background_jobs=2 --open_files=-1 --threads=1 --seed=1 --statistics ${EXTRA:-}"
out=$(mktemp -d /tmp/compare-large.XXXXXX)
for tool in shale anchor; do
  bin=$SHALE; [ $tool = anchor ] && bin=$ANCHOR
  [ -x "${bin%% *}" ] || { echo "$tool: $bin not found, skipped"; continue; }
  rm -rf "$DIR"; mkdir -p "$DIR"
  if [ $tool = shale ]; then cmd="$bin bench"; else cmd="$bin"; fi
  /usr/bin/time -v $cmd $FLAGS --db="$DIR/db" > "$out/$tool.txt" 2> "$out/$tool.err" || { echo "$tool failed, see $out"; }
  rm -rf "$DIR"
done
echo "# $(date -u '+%F %T') UTC  num=$NUM reads=$READS  logs: $out"
printf "%-18s %12s %12s %8s\n" benchmark shale anchor ratio
for b in fillrandom overwrite readrandom readwhilewriting seekrandom; do
  s=$(grep -E "^$b " "$out/shale.txt" | awk '{print $5}'); a=$(grep -E "^$b " "$out/anchor.txt" 2>/dev/null | awk '{print $5}')
  r=$(awk -v s="${s:-0}" -v a="${a:-0}" 'BEGIN{ if (a>0) printf "%.2fx", s/a; else print "-"}')
  printf "%-18s %12s %12s %8s\n" "$b" "${s:--}" "${a:--}" "$r"
done
for tool in shale anchor; do
  [ -f "$out/$tool.err" ] && echo "$tool peak RSS: $(grep 'Maximum resident' "$out/$tool.err" | awk '{print $6}') KiB"
done
