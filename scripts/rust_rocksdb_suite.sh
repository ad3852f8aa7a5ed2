#!/usr/bin/env bash
# Runs the test suite of the `rocksdb` crate (rust-rocksdb) 0.25.0 against Shale, the way a user
# would switch: a scratch crate that renames the dependency
#     rocksdb = { package = "shale", path = "<repo>/crates/shale" }
# and compiles the crate's own `tests/` unchanged. The tests are the crate authors' text: they
# are downloaded at run time by `cargo fetch` (from crates.io, into $CARGO_HOME) and copied into
# the scratch crate, never into this repository.
#
#   scripts/rust_rocksdb_suite.sh            run and report (exit 0 whatever the results)
#   scripts/rust_rocksdb_suite.sh --check    also exit 1 if a function listed in
#                                            scripts/rust_rocksdb_suite.pass no longer passes
#   scripts/rust_rocksdb_suite.sh --update   rewrite scripts/rust_rocksdb_suite.pass from this run
#
# Environment:
#   SUITE_DIR         scratch directory (the crates, logs, errors/, summary.tsv); default: a new
#                     mktemp directory, kept after the run (its build directory is removed)
#   SUITE_TARGET_DIR  CARGO_TARGET_DIR of the scratch crate; default: $SUITE_DIR/target. Point
#                     it at a lasting directory (.ci/run: target/rust-rocksdb-suite) to keep builds.
#   SUITE_TIMEOUT     seconds one test file may run before it is killed (default 300)
#
# Each `tests/*.rs` file is its own test target: it is compiled (`cargo test --test NAME
# --no-run`), and if that succeeds run (`cargo test --test NAME -- --test-threads=2`); the
# harness's `test NAME ... ok|FAILED|ignored` lines give each function's result. Every test
# function of a file that does not compile counts as `no-compile`. Test functions are counted
# from the source (the rule: scripts/rust_rocksdb_suite.py's docstring): 0.25.0 has 205
# `#[test]` functions in 22 files, 2 of them `#[ignore]`d by its authors, so the total reported
# is "N of 203 pass". The functions that call trybuild (expected compile failures in
# tests/fail/, compared with the stderr of the crate's pinned rustc) count as one function each.
#
# Output: a table per file, the totals, and for files that do not compile the names the compiler
# errors cite, those in the most files first: what to add to the API next. rustc stops at the
# first failing pass, so these are the first layer of what is missing, not all of it. In
# $SUITE_DIR: logs/NAME.build.txt (compiler output), errors/NAME.txt (its first 40 errors),
# logs/NAME.run.log and .run.err (test output), summary.tsv (every function with its status:
# pass, fail, no-compile or ignored). Needs cargo, python3 (3.11 or later) and `timeout`.
set -euo pipefail

ROCKSDB_VERSION=0.25.0
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
HELPER="$HERE/rust_rocksdb_suite.py"
PASS_FILE="$HERE/rust_rocksdb_suite.pass"

MODE=report
case "${1:-}" in
  "") ;;
  --check) MODE=check ;;
  --update) MODE=update ;;
  *) echo "usage: $0 [--check|--update]" >&2; exit 2 ;;
esac

if [ -n "${SUITE_DIR:-}" ]; then
  mkdir -p "$SUITE_DIR"
  SUITE_DIR="$(cd "$SUITE_DIR" && pwd)"
  CREATED_DIR=""
else
  SUITE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/rust-rocksdb-suite.XXXXXX")"
  CREATED_DIR="$SUITE_DIR"
fi
export CARGO_TARGET_DIR="${SUITE_TARGET_DIR:-$SUITE_DIR/target}"
mkdir -p "$CARGO_TARGET_DIR"
CARGO_TARGET_DIR="$(cd "$CARGO_TARGET_DIR" && pwd)"
if [ -n "$CREATED_DIR" ] && [ "$CARGO_TARGET_DIR" = "$CREATED_DIR/target" ]; then
  # A build directory nobody can reuse: drop it at exit, keep the reports.
  trap 'rm -rf "$CREATED_DIR/target"' EXIT
fi
TIMEOUT="${SUITE_TIMEOUT:-300}"
export CARGO_TERM_COLOR=never
echo "rust-rocksdb $ROCKSDB_VERSION suite against $REPO/crates/shale"
echo "scratch directory: $SUITE_DIR (build directory: $CARGO_TARGET_DIR)"

# 1. A throwaway crate whose only use is to make `cargo fetch` download the rocksdb package's
#    source (never built: it is C++ behind librocksdb-sys).
FETCH="$SUITE_DIR/fetch"
mkdir -p "$FETCH/src"
: >"$FETCH/src/lib.rs"
cat >"$FETCH/Cargo.toml" <<EOF
[package]
name = "rust-rocksdb-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
rocksdb = { version = "=$ROCKSDB_VERSION", default-features = false }
EOF
cargo fetch --quiet --manifest-path "$FETCH/Cargo.toml"
SRC="$(python3 "$HELPER" locate "$FETCH" "$ROCKSDB_VERSION")"
[ -d "$SRC/tests" ] || { echo "error: no tests/ in $SRC" >&2; exit 1; }
echo "rocksdb $ROCKSDB_VERSION source: $SRC"

# 2. The scratch crate: `rocksdb` is Shale; the dev-dependencies and feature names are the
#    fetched crate's; its tests/ copied unchanged (timestamps kept, so reruns reuse the builds).
CRATE="$SUITE_DIR/crate"
mkdir -p "$CRATE/src"
: >"$CRATE/src/lib.rs"
python3 "$HELPER" manifest "$SRC" "$REPO/crates/shale" >"$SUITE_DIR/Cargo.toml.new"
if ! cmp -s "$SUITE_DIR/Cargo.toml.new" "$CRATE/Cargo.toml"; then
  mv "$SUITE_DIR/Cargo.toml.new" "$CRATE/Cargo.toml"
else
  rm "$SUITE_DIR/Cargo.toml.new"
fi
# Shale's dependencies at the versions the repository tests them with.
[ -f "$CRATE/Cargo.lock" ] || cp "$REPO/Cargo.lock" "$CRATE/Cargo.lock"
rm -rf "$CRATE/tests"
cp -Rp "$SRC/tests" "$CRATE/tests"
chmod -R u+w "$CRATE/tests"

# 3. Compile, then run, each test file.
LOGS="$SUITE_DIR/logs"
rm -rf "$LOGS" "$SUITE_DIR/errors" "$SUITE_DIR/summary.tsv"
mkdir -p "$LOGS"
cd "$CRATE"
for t in $(python3 "$HELPER" tests "$CRATE/tests"); do
  start=$SECONDS
  rc=0
  cargo test --test "$t" --no-run --message-format=json >"$LOGS/$t.build.json" \
    2>"$LOGS/$t.build.log" || rc=$?
  echo "$rc" >"$LOGS/$t.build.rc"
  if [ "$rc" != 0 ]; then
    printf '%-45s does not compile (%ds)\n' "$t" $((SECONDS - start))
    continue
  fi
  built=$((SECONDS - start))
  rc=0
  # The harness's result lines are on stdout; cargo's and trybuild's output on stderr.
  timeout -k 10 "$TIMEOUT" cargo test --test "$t" -- --test-threads=2 >"$LOGS/$t.run.log" \
    2>"$LOGS/$t.run.err" || rc=$?
  echo "$rc" >"$LOGS/$t.run.rc"
  printf '%-45s compiled (%ds), ran (%ds): %s\n' "$t" "$built" $((SECONDS - start - built)) \
    "$(grep -E '^test result:' "$LOGS/$t.run.log" | tail -1 || echo "exit $rc, no result line")"
done
cd "$REPO"

# 4. and 5. The table, the summary, the missing names, the ratchet.
python3 "$HELPER" report "$SUITE_DIR" "$CRATE/tests" "$PASS_FILE" "$MODE"
