# Sourced by the scripts that link extra programs against the anchor's RocksDB 11.8.1 (needs
# HERE = scripts/ and OUT = the anchor's directory): runs scripts/build_rocksdb_bench.sh (at once
# when already built), then sets WORK (its build directory), SRC (the RocksDB source tree of the
# librocksdb-sys crate) and libs (librocksdb.a and the codec archives, in link order).
"$HERE/build_rocksdb_bench.sh" "$OUT" >/dev/null
WORK=$OUT/build
built=$WORK/target/release/build
SRC=$(dirname "$(find "$HOME/.cargo/registry/src" -path '*librocksdb-sys-0.19.0*/rocksdb/include/rocksdb/db.h' -print -quit)")/../..
libs=()
for lib in librocksdb.a libsnappy.a liblz4.a libzstd.a; do
  f=$(find "$built" -name "$lib" -print -quit)
  [ -n "$f" ] || { echo "$lib missing from $built (remove $OUT/db_bench and rebuild)" >&2; exit 1; }
  libs+=("$f")
done
