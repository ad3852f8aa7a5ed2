#!/usr/bin/env bash
# Builds the performance anchor: RocksDB 11.8.1's own `db_bench`, compiled for this machine's CPU
# (as RocksDB's default PORTABLE=0 build is, and as Shale's builds are), so that
# docs/performance.md compares Shale with an equally tuned RocksDB. Debian's `db_bench`
# (RocksDB 7.8) is a portable build whose CRC32C runs in software: fine for the compatibility
# tests, not for speed comparisons.
#
#   usage: scripts/build_rocksdb_bench.sh [OUT_DIR]
#          OUT_DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench
#   result: OUT_DIR/db_bench, whose path is printed on the last line of output.
#           scripts/compare.sh and the other comparison scripts look there by default
#           (or wherever ROCKSDB_DB_BENCH points).
#   env:   JOBS     parallel C++ compiles (default: the number of CPUs)
#          FORCE=1  rebuild even if OUT_DIR/db_bench already works
#
# How: the RocksDB sources come from the crates.io package librocksdb-sys 0.19.0+11.8.1 (which
# bundles RocksDB 11.8.1, Snappy, LZ4 and ZSTD). A throwaway cargo project that depends on that
# exact version makes cargo download it and build the static libraries (librocksdb.a and the
# codecs); then g++ compiles db_bench's own sources from the same tree and links them against
# those libraries. Needs: cargo, g++, libclang (for the crate's bindgen) and gflags; on a Debian
# machine the missing packages are installed with apt-get (as root or through sudo).
# Takes about 25 minutes on 2 cores, once; about 3 GB of disk in OUT_DIR/build (removable after).
set -euo pipefail

CRATE_VERSION=0.19.0
ROCKSDB_VERSION=11.8.1
OUT=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/shale/rocksdb-bench}
BIN=$OUT/db_bench
WORK=$OUT/build
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

say() { echo "build_rocksdb_bench: $*" >&2; }
die() { say "$*"; exit 1; }

# A db_bench is usable if it runs a tiny workload to the end.
works() {
  local probe
  probe=$(mktemp -d "${TMPDIR:-/tmp}/db_bench_probe.XXXXXX")
  "$1" --benchmarks=fillseq --num=1000 --db="$probe/db" >/dev/null 2>&1
  local rc=$?
  rm -rf "$probe"
  return $rc
}

mkdir -p "$OUT"
if [ -x "$BIN" ] && [ "${FORCE:-0}" != 1 ] && works "$BIN"; then
  say "already built"
  echo "$BIN"
  exit 0
fi

# --- 1. system packages --------------------------------------------------------------------
command -v cargo >/dev/null || die "cargo not found (install Rust first: https://rustup.rs)"
need=()
command -v g++ >/dev/null || need+=(g++)
if command -v dpkg >/dev/null; then
  dpkg -s libclang-dev >/dev/null 2>&1 || need+=(clang libclang-dev)
  dpkg -s libgflags-dev >/dev/null 2>&1 || need+=(libgflags-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "need root or sudo to install: ${need[*]}"
    sudo=sudo
  fi
  say "installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

# --- 2. RocksDB and codec static libraries through librocksdb-sys -------------------------
mkdir -p "$WORK/src"
cat >"$WORK/Cargo.toml" <<EOF
[package]
name = "shale-rocksdb-bench-libs"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
librocksdb-sys = { version = "=$CRATE_VERSION", default-features = false, features = ["snappy", "lz4", "zstd", "bindgen-runtime"] }

[profile.release]
opt-level = 3

[workspace]
EOF
echo 'fn main() {}' >"$WORK/src/main.rs"
say "building librocksdb-sys $CRATE_VERSION (RocksDB $ROCKSDB_VERSION) for this CPU; this is the long part"
# target-cpu=native makes cargo report this CPU's features, from which the crate's build script
# picks its -m flags (SSE4.2, PCLMUL, AVX2, ...).
(cd "$WORK" && CARGO_TARGET_DIR="$WORK/target" RUSTFLAGS="-C target-cpu=native" cargo build --release -q)

# Where cargo unpacked the crate: its manifest path, from cargo metadata.
manifest=$(cd "$WORK" && cargo metadata --format-version 1 2>/dev/null |
  grep -o "\"manifest_path\":\"[^\"]*librocksdb-sys-$CRATE_VERSION[^\"]*/Cargo.toml\"" | head -n 1 |
  sed 's/^"manifest_path":"//; s/"$//')
[ -n "$manifest" ] || die "cannot find the librocksdb-sys $CRATE_VERSION sources"
SRC=$(dirname "$manifest")/rocksdb
[ -f "$SRC/tools/db_bench_tool.cc" ] || die "no RocksDB tree at $SRC"

built=$WORK/target/release/build
find_one() { find "$built" -name "$1" -print -quit; }
libs=()
for lib in librocksdb.a libsnappy.a liblz4.a libzstd.a; do
  f=$(find_one "$lib")
  [ -n "$f" ] || die "$lib missing from the cargo build"
  libs+=("$f")
done
# Compile against the codec headers of the bundled libraries, not the system's (if any).
includes=(-I"$SRC" -I"$SRC/include" -I"$SRC/.." -I"$SRC/../snappy")
for h in zstd.h lz4.h; do
  f=$(find_one "$h")
  [ -n "$f" ] || die "$h missing from the cargo build"
  includes+=(-I"$(dirname "$f")")
done

# --- 3. db_bench itself ---------------------------------------------------------------------
# The platform macros RocksDB's own Makefile defines on x86-64 Linux, plus the codecs above.
defines=(-DNDEBUG -DOS_LINUX -DROCKSDB_PLATFORM_POSIX -DROCKSDB_LIB_IO_POSIX
  -DROCKSDB_SCHED_GETCPU_PRESENT -DROCKSDB_AUXV_GETAUXVAL_PRESENT -DROCKSDB_FALLOCATE_PRESENT
  -DROCKSDB_RANGESYNC_PRESENT -D_FILE_OFFSET_BITS=64 -D_LARGEFILE64_SOURCE=1
  -DHAVE_UINT128_EXTENSION -DHAVE_ALIGNED_NEW -DGFLAGS=1 -DSNAPPY=1 -DLZ4=1 -DZSTD=1)
cxxflags=(-std=c++20 -O2 -march=native "${defines[@]}" "${includes[@]}")
sources=(tools/db_bench.cc tools/db_bench_tool.cc tools/simulated_hybrid_file_system.cc
  tools/tool_hooks.cc test_util/testutil.cc)
objs=()
running=0
for s in "${sources[@]}"; do
  o="$WORK/$(basename "$s" .cc).o"
  objs+=("$o")
  rm -f "$o"
  say "compiling $s"
  g++ "${cxxflags[@]}" -c "$SRC/$s" -o "$o" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true
for o in "${objs[@]}"; do [ -f "$o" ] || die "compiling $(basename "$o" .o).cc failed"; done

say "linking"
# Tolerate symbols defined both in the tool objects and in librocksdb.a (the first one wins).
g++ -o "$BIN.tmp" "${objs[@]}" "${libs[@]}" -lgflags -lpthread -ldl -Wl,--allow-multiple-definition
mv "$BIN.tmp" "$BIN"
works "$BIN" || die "$BIN was built but does not run a small fillseq"
say "done (the build directory $WORK can be removed)"
echo "$BIN"
