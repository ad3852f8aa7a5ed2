// RocksDB's own bulk-load path, timed the way `shale bench --benchmarks=fillseqingest` times
// Shale's: db_bench's fillseq keys (8-byte big-endian number padded with '0' to key_size) in
// order, values sliced from a fixed pseudo-random buffer, written with rocksdb::SstFileWriter
// into files cut at target_file_size_base bytes beside the DB, then one IngestExternalFile
// with move_files. Built by scripts/build_rocksdb_bulkload.sh against the anchor's RocksDB.
//
//   usage: rocksdb_bulkload DB_PATH NUM [KEY_SIZE=16] [VALUE_SIZE=100] [FILE_BYTES=67108864]
//                           [COMPRESSION=none|snappy|lz4|zstd]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_writer.h"

static void check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DB_PATH NUM [KEY_SIZE] [VALUE_SIZE] [FILE_BYTES] [COMPRESSION]\n", argv[0]);
    return 2;
  }
  const std::string db_path = argv[1];
  const uint64_t num = std::strtoull(argv[2], nullptr, 10);
  const size_t key_size = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 16;
  const size_t value_size = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 100;
  const uint64_t file_bytes = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 64ull << 20;
  const std::string comp = argc > 6 ? argv[6] : "none";

  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.compression = comp == "snappy" ? rocksdb::kSnappyCompression
                     : comp == "lz4"  ? rocksdb::kLZ4Compression
                     : comp == "zstd" ? rocksdb::kZSTD
                                      : rocksdb::kNoCompression;
  opts.bottommost_compression = opts.compression;
  rocksdb::DestroyDB(db_path, opts);
  const std::string staging = db_path + ".bulkload";
  std::system(("rm -rf '" + staging + "' && mkdir -p '" + staging + "'").c_str());

  // A value source like db_bench's: a 1 MiB buffer read in value_size windows.
  std::string buf(1 << 20, '\0');
  uint64_t x = 301;
  for (auto& c : buf) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    c = static_cast<char>(' ' + (x >> 33) % 95);
  }
  size_t pos = 0;

  auto t0 = std::chrono::steady_clock::now();
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), opts);
  std::vector<std::string> files;
  std::string key(key_size, '0');
  bool open = false;
  uint64_t bytes = 0;
  for (uint64_t k = 0; k < num; k++) {
    if (!open) {
      char name[32];
      std::snprintf(name, sizeof name, "/%06zu.sst", files.size());
      files.push_back(staging + name);
      check(writer.Open(files.back()), "SstFileWriter::Open");
      open = true;
    }
    size_t n = key_size < 8 ? key_size : 8;
    for (size_t i = 0; i < n; i++) key[i] = static_cast<char>(k >> ((n - i - 1) * 8));
    if (pos + value_size > buf.size()) pos = 0;
    rocksdb::Slice v(buf.data() + pos, value_size);
    pos += value_size;
    check(writer.Put(key, v), "SstFileWriter::Put");
    bytes += key_size + value_size;
    if (file_bytes > 0 && writer.FileSize() >= file_bytes) {
      check(writer.Finish(), "SstFileWriter::Finish");
      open = false;
    }
  }
  if (open) check(writer.Finish(), "SstFileWriter::Finish");
  auto t1 = std::chrono::steady_clock::now();

  std::unique_ptr<rocksdb::DB> db;
  check(rocksdb::DB::Open(opts, db_path, &db), "DB::Open");
  auto t2 = std::chrono::steady_clock::now();
  rocksdb::IngestExternalFileOptions io;
  io.move_files = true;
  check(db->IngestExternalFile(files, io), "IngestExternalFile");
  auto t3 = std::chrono::steady_clock::now();
  std::string v;
  std::string last(key_size, '0');
  size_t n = key_size < 8 ? key_size : 8;
  for (size_t i = 0; i < n; i++) last[i] = static_cast<char>((num - 1) >> ((n - i - 1) * 8));
  check(db->Get(rocksdb::ReadOptions(), last, &v), "Get of the last key");
  db.reset();
  std::system(("rm -rf '" + staging + "'").c_str());

  double write = std::chrono::duration<double>(t1 - t0).count();
  double ingest = std::chrono::duration<double>(t3 - t2).count();
  double secs = write + ingest;
  std::printf("fillseqingest : %11.3f micros/op %ld ops/sec %.3f seconds %lu operations; %6.1f MB/s (%zu files; write %.3f s, ingest %.3f s)\n",
              secs * 1e6 / num, static_cast<long>(num / secs), secs, static_cast<unsigned long>(num),
              bytes / 1048576.0 / secs, files.size(), write, ingest);
  return 0;
}
