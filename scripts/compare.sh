#!/usr/bin/env bash
# Compare `shale bench` with RocksDB's db_bench on the same workloads and identical flags.
#
#   usage: scripts/compare.sh [shm|disk|DIR] [REPS]
#     shm   -> databases under /dev/shm   (default)
#     disk  -> databases under /tmp (or $DISK_DIR)
#     REPS  -> repetitions per tool (default 3); tools are interleaved, medians reported
#   env:  SHALE=path/to/shale
#         ROCKSDB_DB_BENCH (or ANCHOR)=path/to/db_bench: RocksDB 11.8.1 built for this CPU; default
#         where scripts/build_rocksdb_bench.sh puts it
#         DEBIAN=/usr/bin/db_bench (RocksDB 7.8)   NUM=1000000   BENCHES=fillseq,...
#         EXTRA="--flag=..." appended to every tool's command line
#         CSV=path (default $OUT/compare.csv) and SVG=path (default: the CSV's name with .svg):
#         the medians as CSV and a chart of them (scripts/chart.py)
#
# Each repetition runs one process per tool with
#   --benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq
# (so readrandom/readseq read the DB that overwrite left, as db_bench's default list does).
# If the anchor is absent, the script says so and compares with Debian's db_bench only.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
WHERE=${1:-shm}
REPS=${2:-3}
case "$WHERE" in
  shm) BASE=/dev/shm ;;
  disk) BASE=${DISK_DIR:-/tmp} ;;
  *) BASE=$WHERE ;;
esac
NUM=${NUM:-1000000}
BENCHES=${BENCHES:-fillseq,fillrandom,overwrite,readrandom,readseq}
SHALE=${SHALE:-$HERE/target/release/shale}
ANCHOR=${ROCKSDB_DB_BENCH:-${ANCHOR:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench/db_bench}}
DEBIAN=${DEBIAN:-/usr/bin/db_bench}
FLAGS="--num=$NUM --value_size=100 --compression_type=none --bloom_bits=-1 --cache_size=33554432
  --format_version=5 --checksum_type=4 --write_buffer_size=67108864 --max_write_buffer_number=2
  --max_background_jobs=2 --open_files=-1 --threads=1 --histogram=0 ${EXTRA:-}"

if [ ! -x "$SHALE" ]; then
  (cd "$HERE" && cargo build --release -q -p shale-cli) || { echo "cannot build shale" >&2; exit 1; }
fi
TOOLS=(shale)
declare -A BIN=([shale]="$SHALE bench")
if [ -x "$ANCHOR" ]; then
  TOOLS+=(anchor); BIN[anchor]="$ANCHOR"
else
  echo "NOTE: the anchor ($ANCHOR) is absent: comparing with Debian's db_bench only" >&2
fi
if [ -x "$DEBIAN" ]; then TOOLS+=(debian); BIN[debian]="$DEBIAN"; fi
[ ${#TOOLS[@]} -ge 2 ] || { echo "no db_bench found to compare with" >&2; exit 1; }

OUT=$(mktemp -d "${TMPDIR:-/tmp}/compare.XXXXXX")
echo "# $(date -u '+%F %T UTC')  dir=$BASE  reps=$REPS  num=$NUM"
echo "# flags: $(echo $FLAGS)"
for t in "${TOOLS[@]}"; do echo "# $t: ${BIN[$t]}"; done
for r in $(seq 1 "$REPS"); do
  for t in "${TOOLS[@]}"; do
    db="$BASE/compare-$t-$$"
    rm -rf "$db"
    # shellcheck disable=SC2086
    ${BIN[$t]} --benchmarks="$BENCHES" --db="$db" $FLAGS >"$OUT/$t.$r.log" 2>&1 || echo "WARN: $t run $r failed (see $OUT/$t.$r.log)" >&2
    rm -rf "$db"
    grep -E '^[a-z]+ +:.*ops/sec' "$OUT/$t.$r.log" | awk -v t="$t" -v r="$r" '{for(i=1;i<=NF;i++) if($i=="ops/sec") print t, r, $1, $(i-1)}' >>"$OUT/all.txt"
    echo "  run $r $t: $(awk -v t="$t" -v r="$r" '$1==t && $2==r {printf "%s=%s ", $3, $4}' "$OUT/all.txt")" >&2
  done
done
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2)}'; }
printf "%-11s" "benchmark"; for t in "${TOOLS[@]}"; do printf " %12s" "$t"; done
for t in "${TOOLS[@]:1}"; do printf " %13s" "shale/$t"; done; echo
declare -A LABEL=([shale]="Shale" [anchor]="RocksDB 11.8.1" [debian]="RocksDB 7.8 (Debian)")
CSV=${CSV:-$OUT/compare.csv}
echo "workload,tool,ops_per_sec" >"$CSV"
IFS=, read -ra BL <<<"$BENCHES"
for b in "${BL[@]}"; do
  printf "%-11s" "$b"
  declare -A M=()
  for t in "${TOOLS[@]}"; do
    M[$t]=$(awk -v t="$t" -v b="$b" '$1==t && $3==b {print $4}' "$OUT/all.txt" | median)
    printf " %12s" "${M[$t]}"
    echo "$b,${LABEL[$t]},${M[$t]}" >>"$CSV"
  done
  for t in "${TOOLS[@]:1}"; do
    awk -v s="${M[shale]}" -v o="${M[$t]}" 'BEGIN {if (o>0) printf " %12.2fx", s/o; else printf " %13s", "n/a"}'
  done
  echo
done
echo "# logs: $OUT"
# The medians as CSV and an SVG chart (ratio of Shale to the first other tool on each group).
SVG=${SVG:-${CSV%.csv}.svg}
python3 "$HERE/scripts/chart.py" "$CSV" "$SVG" --title "Shale vs RocksDB, $NUM keys ($WHERE), median of $REPS" \
  && echo "# csv: $CSV  chart: $SVG"
