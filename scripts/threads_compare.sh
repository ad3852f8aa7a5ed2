#!/usr/bin/env bash
# Write throughput against the number of writer threads: Shale builds and RocksDB's db_bench,
# identical flags, one process per tool, thread count and repetition, tools interleaved.
#
#   usage: scripts/threads_compare.sh [DIR] [REPS] [THREADS]
#     DIR     -> database directory base (default /dev/shm)   REPS -> default 2
#     THREADS -> thread counts (default "1 2 4")
#   env:  TOOLS="name=/path/to/shale-or-db_bench ..." (default: this checkout and the anchor)
#         BENCHES=fillrandom,overwrite  NUM=500000 (per thread, as db_bench)  EXTRA="--sync=1 ..."
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=${1:-/dev/shm}
REPS=${2:-2}
THREADS=${3:-"1 2 4"}
NUM=${NUM:-500000}
BENCHES=${BENCHES:-fillrandom,overwrite}
ANCHOR=${ROCKSDB_DB_BENCH:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench/db_bench}
TOOLS=${TOOLS:-"shale=$HERE/target/release/shale rocksdb=$ANCHOR"}
FLAGS="--num=$NUM --value_size=100 --compression_type=none --bloom_bits=10 --cache_size=33554432
  --write_buffer_size=67108864 --max_write_buffer_number=2 --max_background_jobs=2 ${EXTRA:-}"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/threads.XXXXXX")
echo "# $(date -u '+%F %T UTC')  dir=$BASE reps=$REPS threads=$THREADS benches=$BENCHES"
echo "# flags: $(echo $FLAGS)"
for spec in $TOOLS; do echo "# ${spec%%=*}: ${spec#*=}"; done
for r in $(seq 1 "$REPS"); do
  for t in $THREADS; do
    for spec in $TOOLS; do
      name=${spec%%=*}; bin=${spec#*=}
      case "$(basename "$bin")" in shale*) cmd="$bin bench" ;; *) cmd="$bin" ;; esac
      db="$BASE/threads-$name-$$"
      rm -rf "$db"
      # shellcheck disable=SC2086
      $cmd --benchmarks="$BENCHES" --threads="$t" --db="$db" $FLAGS >"$OUT/$name.$t.$r.log" 2>&1 || echo "WARN: $name t=$t run $r failed" >&2
      rm -rf "$db"
      awk -v n="$name" -v t="$t" '/^[a-z]+ +:.*ops\/sec/ {for(i=1;i<=NF;i++) if($i=="ops/sec") print n, t, $1, $(i-1)}' "$OUT/$name.$t.$r.log" >>"$OUT/all.txt"
    done
  done
done
printf "%-12s %7s" benchmark threads
for spec in $TOOLS; do printf " %12s" "${spec%%=*}"; done
echo
for b in ${BENCHES//,/ }; do
  for t in $THREADS; do
    printf "%-12s %7s" "$b" "$t"
    for spec in $TOOLS; do
      n=${spec%%=*}
      m=$(awk -v n="$n" -v t="$t" -v b="$b" '$1==n && $2==t && $3==b {print $4}' "$OUT/all.txt" | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}')
      printf " %12s" "$m"
    done
    echo
  done
done
echo "# logs: $OUT"
