#!/usr/bin/env bash
# Throughput and tail latency (P99, P99.9) of Shale builds against RocksDB's db_bench, on disk,
# with identical flags, one process per tool and repetition, tools interleaved.
#
#   usage: scripts/latency_compare.sh [DIR] [REPS]
#     DIR   -> where the databases go (default ${TMPDIR:-/tmp}: a disk, not tmpfs)
#     REPS  -> repetitions per tool (default 3); medians are reported
#   env:  TOOLS="name=/path/to/shale-or-db_bench ..."  (a path ending in /shale runs `shale bench`;
#           default: this checkout's release build and the RocksDB anchor)
#         BENCHES=fillrandom,readwhilewriting   NUM=1000000   EXTRA="--flag=..."
#
# The flags make compactions run during the workload (4 MiB memtables and files, 16 MiB L1), so
# the write latencies include writes that meet a memtable switch, a flush or a compaction.
# readwhilewriting's histogram is the readers' (as db_bench's); fillrandom's is the writes'.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=${1:-${TMPDIR:-/tmp}}
REPS=${2:-3}
NUM=${NUM:-1000000}
BENCHES=${BENCHES:-fillrandom,readwhilewriting}
ANCHOR=${ROCKSDB_DB_BENCH:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench/db_bench}
TOOLS=${TOOLS:-"shale=$HERE/target/release/shale rocksdb=$ANCHOR"}
FLAGS="--num=$NUM --value_size=100 --compression_type=none --bloom_bits=10 --cache_size=33554432
  --write_buffer_size=4194304 --target_file_size_base=4194304 --max_bytes_for_level_base=16777216
  --max_write_buffer_number=2 --max_background_jobs=2 --open_files=-1 --threads=1 --histogram=1
  --duration=0 ${EXTRA:-}"

OUT=${REPORT_ONLY:-}
if [ -n "$OUT" ]; then REPS=0; else OUT=$(mktemp -d "${TMPDIR:-/tmp}/latency.XXXXXX"); fi
echo "# $(date -u '+%F %T UTC')  dir=$BASE  reps=$REPS  benches=$BENCHES"
echo "# flags: $(echo $FLAGS)"
for spec in $TOOLS; do echo "# ${spec%%=*}: ${spec#*=}"; done
for r in $(seq 1 "$REPS"); do
  for spec in $TOOLS; do
    name=${spec%%=*}; bin=${spec#*=}
    case "$(basename "$bin")" in shale*) cmd="$bin bench" ;; *) cmd="$bin" ;; esac
    db="$BASE/latency-$name-$$"
    rm -rf "$db"
    # shellcheck disable=SC2086
    $cmd --benchmarks="$BENCHES" --db="$db" $FLAGS >"$OUT/$name.$r.log" 2>&1 || echo "WARN: $name run $r failed ($OUT/$name.$r.log)" >&2
    rm -rf "$db"
    # One line per benchmark: tool rep bench ops/s p99 p99.9
    awk -v t="$name" -v r="$r" '
      /^[a-z]+ +:.*ops\/sec/ { b=$1; for(i=1;i<=NF;i++) if($i=="ops/sec") ops[b]=$(i-1); order[++n]=b }
      /^Percentiles:/ && b!="" { for(i=1;i<=NF;i++){ if($i=="P99:") p99[b]=$(i+1); if($i=="P99.9:") p999[b]=$(i+1) } }
      END { for(k=1;k<=n;k++){ b=order[k]; print t, r, b, ops[b], p99[b], p999[b] } }' "$OUT/$name.$r.log" >>"$OUT/all.txt"
  done
done
echo
printf "%-18s %-10s %12s %10s %10s\n" benchmark tool "ops/s" "P99 us" "P99.9 us"
for b in ${BENCHES//,/ }; do
  for spec in $TOOLS; do
    name=${spec%%=*}
    awk -v t="$name" -v b="$b" '$1==t && $3==b {print $4, $5, $6}' "$OUT/all.txt" | sort -n >"$OUT/m"
    med() { awk -v c="$1" '{print $c}' "$OUT/m" | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
    printf "%-18s %-10s %12s %10s %10s\n" "$b" "$name" "$(med 1)" "$(med 2)" "$(med 3)"
  done
done
echo "# logs: $OUT"
