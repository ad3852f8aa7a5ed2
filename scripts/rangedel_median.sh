#!/bin/bash
# RocksDB's cached range-tombstone experiment, REPS interleaved runs per N of Shale and
# RocksDB 11.8.1's db_bench with identical flags, medians of readrandom ops/sec.
# env: REPS (5) THREADS (1) WRITES (500000) READS (100000) NS ("0 1 10 100 1000") SHALE
# ROCKSDB_DB_BENCH or ANCHOR (default: where scripts/build_rocksdb_bench.sh puts db_bench)
# 32 threads: THREADS=32 WRITES=15000 READS=20000 NS="0 1 10 100" scripts/rangedel_median.sh
cd "$(dirname "$0")/.."
SHALE=${SHALE:-target/release/shale}; ANCHOR=${ROCKSDB_DB_BENCH:-${ANCHOR:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench/db_bench}}
REPS=${REPS:-5}; THREADS=${THREADS:-1}; WRITES=${WRITES:-500000}; READS=${READS:-100000}
NS=${NS:-0 1 10 100 1000}
COMMON="--benchmarks=fillrandom,readrandom --writes_per_range_tombstone=1 --max_write_buffer_number=100 --min_write_buffer_number_to_merge=100 --writes=$WRITES --reads=$READS --threads=$THREADS --compression_type=none --format_version=5 --seed=1"
med() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
printf "%-6s %10s %10s %7s   shale runs | anchor runs\n" N shale anchor ratio
for n in $NS; do
  s=(); a=()
  for r in $(seq $REPS); do
    rm -rf /dev/shm/rdm; s+=($($SHALE bench $COMMON --max_num_range_tombstones=$n --db=/dev/shm/rdm 2>/dev/null | grep -E '^readrandom ' | awk '{print $5}'))
    rm -rf /dev/shm/rdm; a+=($($ANCHOR $COMMON --max_num_range_tombstones=$n --db=/dev/shm/rdm 2>/dev/null | grep -E '^readrandom ' | awk '{print $5}'))
  done
  ms=$(printf "%s\n" "${s[@]}" | med); ma=$(printf "%s\n" "${a[@]}" | med)
  printf "%-6s %10s %10s %7s   %s | %s\n" $n $ms $ma $(awk -v x=$ms -v y=$ma 'BEGIN{printf "%.2f", x/y}') "${s[*]}" "${a[*]}"
done
rm -rf /dev/shm/rdm
