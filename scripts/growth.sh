#!/usr/bin/env bash
# The growth table of docs/performance.md: scripts/compare_large.sh at several database sizes
# with one fixed memory budget (32 MiB block cache holding the index and filter blocks,
# 2 x 64 MiB memtables), both engines, identical flags; prints each size's table, peak RSS and
# database size.
#   usage: scripts/growth.sh [DIR]   env: SIZES (default "1000000 10000000 100000000"),
#          READS (default 500000, the same at every size), BENCHMARKS
#          (default fillrandom,readrandom,seekrandom,stats), EXTRA (more flags)
set -euo pipefail
cd "$(dirname "$0")/.."
for n in ${SIZES:-1000000 10000000 100000000}; do
  NUM=$n READS=${READS:-500000} BENCHMARKS=${BENCHMARKS:-fillrandom,readrandom,seekrandom,stats} \
    EXTRA="--cache_index_and_filter_blocks=1 ${EXTRA:-}" scripts/compare_large.sh "${1:-/tmp/shale-growth}"
done
