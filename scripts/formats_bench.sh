#!/usr/bin/env bash
# Shale vs RocksDB 11.8.1 (native db_bench) on PlainTable and CuckooTable point reads, and on
# the checksum micro-benchmarks: the tables of docs/performance.md ("Table formats").
#
# Both tools get identical flags. For each format each tool loads its own DB on /dev/shm once
# (fillseq,compact), then RUNS interleaved rounds run readrandom and multireadrandom on the
# existing DB (RocksDB, then Shale, per format). The checksum benchmarks run RUNS interleaved
# rounds too. Printed: the median ops/sec (MB/s for checksums) of each and the ratio
# Shale / RocksDB.
#
# Environment: SHALE (default target/release/shale; build it with
# `CARGO_BUILD_JOBS=1 cargo build --release -p shale-cli`), ROCKSDB_DB_BENCH or RDB (default: where
# scripts/build_rocksdb_bench.sh puts it), NUM (1000000), BATCH (multireadrandom --batch_size, 10),
# RUNS (3), DIR (/dev/shm/shale-formats-bench), OUT (raw outputs, /tmp/shale-formats-bench),
# FORMATS ("cuckoo plain"), CHECKSUMS (1: also run the checksum benchmarks).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHALE=${SHALE:-$ROOT/target/release/shale}
RDB=${ROCKSDB_DB_BENCH:-${RDB:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench/db_bench}}
NUM=${NUM:-1000000}
BATCH=${BATCH:-10}
RUNS=${RUNS:-3}
DIR=${DIR:-/dev/shm/shale-formats-bench}
OUT=${OUT:-/tmp/shale-formats-bench}
FORMATS=${FORMATS:-cuckoo plain}
CHECKSUMS=${CHECKSUMS:-1}

for t in "$SHALE" "$RDB"; do
    [ -x "$t" ] || { echo "missing executable: $t" >&2; exit 1; }
done
mkdir -p "$DIR" "$OUT"

COMMON="--num=$NUM --key_size=16 --value_size=100 --compression_type=none --threads=1 --seed=1"

format_flags() {
    case "$1" in
        cuckoo) echo "--use_cuckoo_table=1 --mmap_read=1" ;;
        plain) echo "--use_plain_table=1 --mmap_read=1 --prefix_size=8" ;;
        *) echo "unknown format $1" >&2; exit 1 ;;
    esac
}

# ops/sec (or MB/s with a third argument) of benchmark $2 in output file $1.
metric() {
    awk -v b="$2" -v unit="${3:-ops/sec}" '$1 == b && $2 == ":" {
        for (i = 3; i <= NF; i++) if ($i == unit || $i == unit ";") { print $(i - 1); exit }
    }' "$1"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

ratio() { awk -v s="$1" -v r="$2" 'BEGIN { if (r > 0) printf "%.2f", s / r; else print "n/a" }'; }

run_tool() { # tool-name binary outfile args...
    local name=$1 bin=$2 out=$3
    shift 3
    local sub=()
    [ "$name" = shale ] && sub=(bench)
    echo "+ $bin ${sub[*]} $*" >>"$OUT/commands.txt"
    "$bin" "${sub[@]}" "$@" >"$out" 2>"$out.err" || { echo "$name failed, see $out.err" >&2; tail -5 "$out.err" >&2; exit 1; }
}

: >"$OUT/commands.txt"
echo "| format | benchmark | RocksDB 11.8.1 ops/s (median of $RUNS) | Shale ops/s (median of $RUNS) | Shale / RocksDB |"
echo "|---|---|---:|---:|---:|"
for fmt in $FORMATS; do
    ff=$(format_flags "$fmt")
    for tool in rocksdb shale; do
        bin=$RDB
        [ "$tool" = shale ] && bin=$SHALE
        db="$DIR/$tool-$fmt"
        rm -rf "$db"
        # shellcheck disable=SC2086
        run_tool "$tool" "$bin" "$OUT/$tool-$fmt-load.txt" --benchmarks=fillseq,compact --db="$db" $COMMON $ff
    done
    for r in $(seq 1 "$RUNS"); do
        for tool in rocksdb shale; do
            bin=$RDB
            [ "$tool" = shale ] && bin=$SHALE
            # shellcheck disable=SC2086
            run_tool "$tool" "$bin" "$OUT/$tool-$fmt-read-$r.txt" --benchmarks=readrandom,multireadrandom \
                --use_existing_db=1 --batch_size="$BATCH" --db="$DIR/$tool-$fmt" $COMMON $ff
        done
    done
    for b in readrandom multireadrandom; do
        rm_=$(for r in $(seq 1 "$RUNS"); do metric "$OUT/rocksdb-$fmt-read-$r.txt" "$b"; done | median)
        sm=$(for r in $(seq 1 "$RUNS"); do metric "$OUT/shale-$fmt-read-$r.txt" "$b"; done | median)
        label=$b
        [ "$b" = multireadrandom ] && label="$b (batch $BATCH)"
        echo "| $fmt | $label | $rm_ | $sm | $(ratio "$sm" "$rm_") |"
    done
done

if [ "$CHECKSUMS" = 1 ]; then
    echo
    echo "| checksum | RocksDB 11.8.1 MB/s (median of $RUNS) | Shale MB/s (median of $RUNS) | Shale / RocksDB |"
    echo "|---|---:|---:|---:|"
    for r in $(seq 1 "$RUNS"); do
        for tool in rocksdb shale; do
            bin=$RDB
            [ "$tool" = shale ] && bin=$SHALE
            run_tool "$tool" "$bin" "$OUT/$tool-checksum-$r.txt" --benchmarks=crc32c,xxhash,xxhash64,xxh3 \
                --db="$DIR/checksum-$tool"
        done
    done
    for b in crc32c xxhash xxhash64 xxh3; do
        rm_=$(for r in $(seq 1 "$RUNS"); do metric "$OUT/rocksdb-checksum-$r.txt" "$b" MB/s; done | median)
        sm=$(for r in $(seq 1 "$RUNS"); do metric "$OUT/shale-checksum-$r.txt" "$b" MB/s; done | median)
        echo "| $b | $rm_ | $sm | $(ratio "$sm" "$rm_") |"
    done
fi
rm -rf "$DIR"
echo
echo "raw outputs and the exact commands: $OUT (commands.txt)"
