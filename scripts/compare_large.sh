#!/usr/bin/env bash
# The large-database comparison: Shale vs RocksDB 11.8.1's db_bench, identical flags, one
# process per tool running fillrandom, overwrite, readrandom, readwhilewriting, seekrandom on a
# database several times larger than the memtable budget, with --statistics (write amplification)
# and peak RSS from /usr/bin/time.
#   usage: scripts/compare_large.sh [DIR]  (default $TMPDIR or /tmp, /shale-compare-large; removed
#          and recreated per tool)   env: NUM (10000000) READS (1000000) SHALE
#          ROCKSDB_DB_BENCH or ANCHOR (default: where scripts/build_rocksdb_bench.sh puts it)
#          EXTRA (more flags for both tools, e.g. --cache_index_and_filter_blocks=1)
#          BENCHMARKS (default: the five above and stats; e.g. fillrandom,overwrite,stats for
#          write amplification on overwrite alone)
#          CSV, SVG: where the results go as CSV and as a chart (default: in the logs' directory)
# It ends with each tool's total compaction + flush writes and their ratio to flush writes
# (the W-Amp of the stats' Sum row), computed from the exact byte counts.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-${TMPDIR:-/tmp}/shale-compare-large}
NUM=${NUM:-10000000}
READS=${READS:-1000000}
SHALE=${SHALE:-target/release/shale}
ANCHOR=${ROCKSDB_DB_BENCH:-${ANCHOR:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench/db_bench}}
[ -x "$SHALE" ] || cargo build --release -p shale-cli
BENCHMARKS=${BENCHMARKS:-fillrandom,overwrite,readrandom,readwhilewriting,seekrandom,stats}
FLAGS="--benchmarks=$BENCHMARKS
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
  du -sb "$DIR/db" | cut -f1 > "$out/$tool.size"
  rm -rf "$DIR"
done
echo "# $(date -u '+%F %T') UTC  num=$NUM reads=$READS  logs: $out"
printf "%-18s %12s %12s %8s\n" benchmark shale anchor ratio
CSV=${CSV:-$out/compare_large.csv}
echo "workload,tool,ops_per_sec" >"$CSV"
for b in ${BENCHMARKS//,/ }; do
  [ "$b" = stats ] && continue
  s=$(grep -E "^$b " "$out/shale.txt" | awk '{print $5}' || true); a=$(grep -E "^$b " "$out/anchor.txt" 2>/dev/null | awk '{print $5}' || true)
  r=$(awk -v s="${s:-0}" -v a="${a:-0}" 'BEGIN{ if (a>0) printf "%.2fx", s/a; else print "-"}')
  printf "%-18s %12s %12s %8s\n" "$b" "${s:--}" "${a:--}" "$r"
  if [ -n "$s" ]; then echo "$b,Shale,$s" >>"$CSV"; fi
  if [ -n "$a" ]; then echo "$b,RocksDB 11.8.1,$a" >>"$CSV"; fi
done
SVG=${SVG:-${CSV%.csv}.svg}
python3 scripts/chart.py "$CSV" "$SVG" --title "Shale vs RocksDB, $NUM keys on disk (compare_large.sh)" \
  && echo "# csv: $CSV  chart: $SVG"
for tool in shale anchor; do
  [ -f "$out/$tool.err" ] && echo "$tool peak RSS: $(grep 'Maximum resident' "$out/$tool.err" | awk '{print $6}') KiB, database $(cat "$out/$tool.size" 2>/dev/null) bytes"
done
# Write amplification: (flush + compaction writes) / flush writes, in GiB.
sw=$(awk '/^ Sum /{print $7; exit}' "$out/shale.txt" 2>/dev/null); sf=$(awk '/^  L0 /{print $8; exit}' "$out/shale.txt" 2>/dev/null)
ac=$(awk '/rocksdb.compact.write.bytes COUNT/{print $4}' "$out/anchor.txt" 2>/dev/null); af=$(awk '/rocksdb.flush.write.bytes COUNT/{print $4}' "$out/anchor.txt" 2>/dev/null)
awk -v sw="${sw:-0}" -v sf="${sf:-0}" -v ac="${ac:-0}" -v af="${af:-0}" 'BEGIN{
  if (sf > 0) printf "shale  writes %.3f GiB, flushed %.3f GiB, W-Amp %.3f\n", sw, sf, sw/sf;
  g = 1024*1024*1024; if (af > 0) printf "anchor writes %.3f GiB, flushed %.3f GiB, W-Amp %.3f\n", (ac+af)/g, af/g, (ac+af)/af }'
