//! The names of RocksDB's `PerfContext` counters (`include/rocksdb/perf_context.h`, facebook/rocksdb
//! at 1dfa729) and the `rocksdb` crate's `PerfMetric`.

/// The counters of RocksDB's `PerfContext`, in its order (`DEF_PERF_CONTEXT_METRICS`).
pub(crate) const FIELDS: [&str; 120] = [
    "user_key_comparison_count",
    "block_cache_hit_count",
    "block_read_count",
    "block_read_byte",
    "block_read_time",
    "block_read_cpu_time",
    "block_cache_index_hit_count",
    "block_cache_standalone_handle_count",
    "block_cache_real_handle_count",
    "index_block_read_count",
    "block_cache_filter_hit_count",
    "filter_block_read_count",
    "compression_dict_block_read_count",
    "block_cache_index_read_byte",
    "block_cache_filter_read_byte",
    "block_cache_compression_dict_read_byte",
    "block_cache_read_byte",
    "secondary_cache_hit_count",
    "compressed_sec_cache_insert_real_count",
    "compressed_sec_cache_insert_dummy_count",
    "compressed_sec_cache_uncompressed_bytes",
    "compressed_sec_cache_compressed_bytes",
    "block_checksum_time",
    "block_decompress_time",
    "block_decompress_count",
    "get_read_bytes",
    "multiget_read_bytes",
    "iter_read_bytes",
    "blob_cache_hit_count",
    "blob_cache_read_byte",
    "blob_read_count",
    "blob_read_byte",
    "blob_read_time",
    "blob_checksum_time",
    "blob_decompress_time",
    "internal_key_skipped_count",
    "internal_delete_skipped_count",
    "internal_recent_skipped_count",
    "internal_merge_count",
    "internal_merge_point_lookup_count",
    "internal_range_del_reseek_count",
    "get_snapshot_time",
    "get_from_memtable_time",
    "get_from_memtable_count",
    "get_post_process_time",
    "get_from_output_files_time",
    "seek_on_memtable_time",
    "seek_on_memtable_count",
    "next_on_memtable_count",
    "prev_on_memtable_count",
    "seek_child_seek_time",
    "seek_child_seek_count",
    "seek_min_heap_time",
    "seek_max_heap_time",
    "seek_internal_seek_time",
    "find_next_user_entry_time",
    "write_wal_time",
    "write_memtable_time",
    "write_delay_time",
    "write_scheduling_flushes_compactions_time",
    "write_pre_and_post_process_time",
    "write_thread_wait_nanos",
    "db_mutex_lock_nanos",
    "db_condition_wait_nanos",
    "merge_operator_time_nanos",
    "read_index_block_nanos",
    "read_filter_block_nanos",
    "new_table_block_iter_nanos",
    "new_table_iterator_nanos",
    "block_seek_nanos",
    "find_table_nanos",
    "bloom_memtable_hit_count",
    "bloom_memtable_miss_count",
    "bloom_sst_hit_count",
    "bloom_sst_miss_count",
    "key_lock_wait_time",
    "key_lock_wait_count",
    "env_new_sequential_file_nanos",
    "env_new_random_access_file_nanos",
    "env_new_writable_file_nanos",
    "env_reuse_writable_file_nanos",
    "env_new_random_rw_file_nanos",
    "env_new_directory_nanos",
    "env_file_exists_nanos",
    "env_get_children_nanos",
    "env_get_children_file_attributes_nanos",
    "env_delete_file_nanos",
    "env_create_dir_nanos",
    "env_create_dir_if_missing_nanos",
    "env_delete_dir_nanos",
    "env_get_file_size_nanos",
    "env_get_file_modification_time_nanos",
    "env_rename_file_nanos",
    "env_link_file_nanos",
    "env_lock_file_nanos",
    "env_unlock_file_nanos",
    "env_new_logger_nanos",
    "get_cpu_nanos",
    "iter_next_cpu_nanos",
    "iter_prev_cpu_nanos",
    "iter_seek_cpu_nanos",
    "iter_next_count",
    "iter_prev_count",
    "iter_seek_count",
    "encrypt_data_nanos",
    "decrypt_data_nanos",
    "number_async_seek",
    "file_ingestion_nanos",
    "file_ingestion_blocking_live_writes_nanos",
    "data_block_read_byte",
    "index_block_read_byte",
    "filter_block_read_byte",
    "compression_dict_block_read_byte",
    "metadata_block_read_byte",
    "multiscan_prepare_count",
    "multiscan_blocks_prefetched",
    "multiscan_blocks_from_cache",
    "multiscan_prefetch_bytes",
    "multiscan_io_requests",
    "multiscan_io_coalesced_nonadjacent",
];

/// Index of each counter in [`FIELDS`].
#[allow(dead_code)]
pub(crate) mod field {
    pub(crate) const USER_KEY_COMPARISON_COUNT: usize = 0;
    pub(crate) const BLOCK_CACHE_HIT_COUNT: usize = 1;
    pub(crate) const BLOCK_READ_COUNT: usize = 2;
    pub(crate) const BLOCK_READ_BYTE: usize = 3;
    pub(crate) const BLOCK_READ_TIME: usize = 4;
    pub(crate) const BLOCK_READ_CPU_TIME: usize = 5;
    pub(crate) const BLOCK_CACHE_INDEX_HIT_COUNT: usize = 6;
    pub(crate) const BLOCK_CACHE_STANDALONE_HANDLE_COUNT: usize = 7;
    pub(crate) const BLOCK_CACHE_REAL_HANDLE_COUNT: usize = 8;
    pub(crate) const INDEX_BLOCK_READ_COUNT: usize = 9;
    pub(crate) const BLOCK_CACHE_FILTER_HIT_COUNT: usize = 10;
    pub(crate) const FILTER_BLOCK_READ_COUNT: usize = 11;
    pub(crate) const COMPRESSION_DICT_BLOCK_READ_COUNT: usize = 12;
    pub(crate) const BLOCK_CACHE_INDEX_READ_BYTE: usize = 13;
    pub(crate) const BLOCK_CACHE_FILTER_READ_BYTE: usize = 14;
    pub(crate) const BLOCK_CACHE_COMPRESSION_DICT_READ_BYTE: usize = 15;
    pub(crate) const BLOCK_CACHE_READ_BYTE: usize = 16;
    pub(crate) const SECONDARY_CACHE_HIT_COUNT: usize = 17;
    pub(crate) const COMPRESSED_SEC_CACHE_INSERT_REAL_COUNT: usize = 18;
    pub(crate) const COMPRESSED_SEC_CACHE_INSERT_DUMMY_COUNT: usize = 19;
    pub(crate) const COMPRESSED_SEC_CACHE_UNCOMPRESSED_BYTES: usize = 20;
    pub(crate) const COMPRESSED_SEC_CACHE_COMPRESSED_BYTES: usize = 21;
    pub(crate) const BLOCK_CHECKSUM_TIME: usize = 22;
    pub(crate) const BLOCK_DECOMPRESS_TIME: usize = 23;
    pub(crate) const BLOCK_DECOMPRESS_COUNT: usize = 24;
    pub(crate) const GET_READ_BYTES: usize = 25;
    pub(crate) const MULTIGET_READ_BYTES: usize = 26;
    pub(crate) const ITER_READ_BYTES: usize = 27;
    pub(crate) const BLOB_CACHE_HIT_COUNT: usize = 28;
    pub(crate) const BLOB_CACHE_READ_BYTE: usize = 29;
    pub(crate) const BLOB_READ_COUNT: usize = 30;
    pub(crate) const BLOB_READ_BYTE: usize = 31;
    pub(crate) const BLOB_READ_TIME: usize = 32;
    pub(crate) const BLOB_CHECKSUM_TIME: usize = 33;
    pub(crate) const BLOB_DECOMPRESS_TIME: usize = 34;
    pub(crate) const INTERNAL_KEY_SKIPPED_COUNT: usize = 35;
    pub(crate) const INTERNAL_DELETE_SKIPPED_COUNT: usize = 36;
    pub(crate) const INTERNAL_RECENT_SKIPPED_COUNT: usize = 37;
    pub(crate) const INTERNAL_MERGE_COUNT: usize = 38;
    pub(crate) const INTERNAL_MERGE_POINT_LOOKUP_COUNT: usize = 39;
    pub(crate) const INTERNAL_RANGE_DEL_RESEEK_COUNT: usize = 40;
    pub(crate) const GET_SNAPSHOT_TIME: usize = 41;
    pub(crate) const GET_FROM_MEMTABLE_TIME: usize = 42;
    pub(crate) const GET_FROM_MEMTABLE_COUNT: usize = 43;
    pub(crate) const GET_POST_PROCESS_TIME: usize = 44;
    pub(crate) const GET_FROM_OUTPUT_FILES_TIME: usize = 45;
    pub(crate) const SEEK_ON_MEMTABLE_TIME: usize = 46;
    pub(crate) const SEEK_ON_MEMTABLE_COUNT: usize = 47;
    pub(crate) const NEXT_ON_MEMTABLE_COUNT: usize = 48;
    pub(crate) const PREV_ON_MEMTABLE_COUNT: usize = 49;
    pub(crate) const SEEK_CHILD_SEEK_TIME: usize = 50;
    pub(crate) const SEEK_CHILD_SEEK_COUNT: usize = 51;
    pub(crate) const SEEK_MIN_HEAP_TIME: usize = 52;
    pub(crate) const SEEK_MAX_HEAP_TIME: usize = 53;
    pub(crate) const SEEK_INTERNAL_SEEK_TIME: usize = 54;
    pub(crate) const FIND_NEXT_USER_ENTRY_TIME: usize = 55;
    pub(crate) const WRITE_WAL_TIME: usize = 56;
    pub(crate) const WRITE_MEMTABLE_TIME: usize = 57;
    pub(crate) const WRITE_DELAY_TIME: usize = 58;
    pub(crate) const WRITE_SCHEDULING_FLUSHES_COMPACTIONS_TIME: usize = 59;
    pub(crate) const WRITE_PRE_AND_POST_PROCESS_TIME: usize = 60;
    pub(crate) const WRITE_THREAD_WAIT_NANOS: usize = 61;
    pub(crate) const DB_MUTEX_LOCK_NANOS: usize = 62;
    pub(crate) const DB_CONDITION_WAIT_NANOS: usize = 63;
    pub(crate) const MERGE_OPERATOR_TIME_NANOS: usize = 64;
    pub(crate) const READ_INDEX_BLOCK_NANOS: usize = 65;
    pub(crate) const READ_FILTER_BLOCK_NANOS: usize = 66;
    pub(crate) const NEW_TABLE_BLOCK_ITER_NANOS: usize = 67;
    pub(crate) const NEW_TABLE_ITERATOR_NANOS: usize = 68;
    pub(crate) const BLOCK_SEEK_NANOS: usize = 69;
    pub(crate) const FIND_TABLE_NANOS: usize = 70;
    pub(crate) const BLOOM_MEMTABLE_HIT_COUNT: usize = 71;
    pub(crate) const BLOOM_MEMTABLE_MISS_COUNT: usize = 72;
    pub(crate) const BLOOM_SST_HIT_COUNT: usize = 73;
    pub(crate) const BLOOM_SST_MISS_COUNT: usize = 74;
    pub(crate) const KEY_LOCK_WAIT_TIME: usize = 75;
    pub(crate) const KEY_LOCK_WAIT_COUNT: usize = 76;
    pub(crate) const ENV_NEW_SEQUENTIAL_FILE_NANOS: usize = 77;
    pub(crate) const ENV_NEW_RANDOM_ACCESS_FILE_NANOS: usize = 78;
    pub(crate) const ENV_NEW_WRITABLE_FILE_NANOS: usize = 79;
    pub(crate) const ENV_REUSE_WRITABLE_FILE_NANOS: usize = 80;
    pub(crate) const ENV_NEW_RANDOM_RW_FILE_NANOS: usize = 81;
    pub(crate) const ENV_NEW_DIRECTORY_NANOS: usize = 82;
    pub(crate) const ENV_FILE_EXISTS_NANOS: usize = 83;
    pub(crate) const ENV_GET_CHILDREN_NANOS: usize = 84;
    pub(crate) const ENV_GET_CHILDREN_FILE_ATTRIBUTES_NANOS: usize = 85;
    pub(crate) const ENV_DELETE_FILE_NANOS: usize = 86;
    pub(crate) const ENV_CREATE_DIR_NANOS: usize = 87;
    pub(crate) const ENV_CREATE_DIR_IF_MISSING_NANOS: usize = 88;
    pub(crate) const ENV_DELETE_DIR_NANOS: usize = 89;
    pub(crate) const ENV_GET_FILE_SIZE_NANOS: usize = 90;
    pub(crate) const ENV_GET_FILE_MODIFICATION_TIME_NANOS: usize = 91;
    pub(crate) const ENV_RENAME_FILE_NANOS: usize = 92;
    pub(crate) const ENV_LINK_FILE_NANOS: usize = 93;
    pub(crate) const ENV_LOCK_FILE_NANOS: usize = 94;
    pub(crate) const ENV_UNLOCK_FILE_NANOS: usize = 95;
    pub(crate) const ENV_NEW_LOGGER_NANOS: usize = 96;
    pub(crate) const GET_CPU_NANOS: usize = 97;
    pub(crate) const ITER_NEXT_CPU_NANOS: usize = 98;
    pub(crate) const ITER_PREV_CPU_NANOS: usize = 99;
    pub(crate) const ITER_SEEK_CPU_NANOS: usize = 100;
    pub(crate) const ITER_NEXT_COUNT: usize = 101;
    pub(crate) const ITER_PREV_COUNT: usize = 102;
    pub(crate) const ITER_SEEK_COUNT: usize = 103;
    pub(crate) const ENCRYPT_DATA_NANOS: usize = 104;
    pub(crate) const DECRYPT_DATA_NANOS: usize = 105;
    pub(crate) const NUMBER_ASYNC_SEEK: usize = 106;
    pub(crate) const FILE_INGESTION_NANOS: usize = 107;
    pub(crate) const FILE_INGESTION_BLOCKING_LIVE_WRITES_NANOS: usize = 108;
    pub(crate) const DATA_BLOCK_READ_BYTE: usize = 109;
    pub(crate) const INDEX_BLOCK_READ_BYTE: usize = 110;
    pub(crate) const FILTER_BLOCK_READ_BYTE: usize = 111;
    pub(crate) const COMPRESSION_DICT_BLOCK_READ_BYTE: usize = 112;
    pub(crate) const METADATA_BLOCK_READ_BYTE: usize = 113;
    pub(crate) const MULTISCAN_PREPARE_COUNT: usize = 114;
    pub(crate) const MULTISCAN_BLOCKS_PREFETCHED: usize = 115;
    pub(crate) const MULTISCAN_BLOCKS_FROM_CACHE: usize = 116;
    pub(crate) const MULTISCAN_PREFETCH_BYTES: usize = 117;
    pub(crate) const MULTISCAN_IO_REQUESTS: usize = 118;
    pub(crate) const MULTISCAN_IO_COALESCED_NONADJACENT: usize = 119;
}

/// A metric of [`PerfContext`](super::PerfContext) (the `rocksdb` crate's `PerfMetric`).
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(i32)]
pub enum PerfMetric {
    /// User-key comparisons made by the comparator on this thread.
    UserKeyComparisonCount = 0,
    /// Data blocks served from the block cache.
    BlockCacheHitCount = 1,
    /// Blocks read from SST files (cache misses that went to the file).
    BlockReadCount = 2,
    /// Bytes of blocks read from SST files.
    BlockReadByte = 3,
    /// Nanoseconds spent reading blocks from SST files.
    BlockReadTime = 4,
    /// Nanoseconds spent verifying block checksums (not counted by Shale: stays 0).
    BlockChecksumTime = 5,
    /// Nanoseconds spent decompressing blocks (not counted by Shale: stays 0).
    BlockDecompressTime = 6,
    /// Bytes of values returned by point lookups (`get` and friends).
    GetReadBytes = 7,
    /// Bytes of values returned by `multi_get`.
    MultigetReadBytes = 8,
    /// Bytes of keys and values returned by iterators.
    IterReadBytes = 9,
    /// Internal entries (older versions, hidden or obsolete keys) an iterator stepped over.
    InternalKeySkippedCount = 10,
    /// Tombstones an iterator stepped over.
    InternalDeleteSkippedCount = 11,
    /// Entries newer than the iterator's snapshot that it stepped over.
    /// Not counted by Shale: stays 0.
    InternalRecentSkippedCount = 12,
    /// Merge operands an iterator or lookup had to combine (not counted by Shale: stays 0).
    InternalMergeCount = 13,
    /// Nanoseconds spent taking the snapshot (sequence number) for a lookup.
    GetSnapshotTime = 14,
    /// Nanoseconds a point lookup spent in the memtables.
    GetFromMemtableTime = 15,
    /// Memtables consulted by point lookups.
    GetFromMemtableCount = 16,
    /// Nanoseconds spent after a lookup found its answer (releasing references, copying out).
    /// Not counted by Shale: stays 0.
    GetPostProcessTime = 17,
    /// Nanoseconds a point lookup spent in SST files.
    GetFromOutputFilesTime = 18,
    /// Nanoseconds an iterator seek spent in the memtables (not counted by Shale: stays 0).
    SeekOnMemtableTime = 19,
    /// Memtable seeks made by iterators.
    SeekOnMemtableCount = 20,
    /// Memtable `next` steps made by iterators.
    NextOnMemtableCount = 21,
    /// Memtable `prev` steps made by iterators.
    PrevOnMemtableCount = 22,
    /// Nanoseconds spent seeking the child iterators of a merging iterator.
    /// Not counted by Shale: stays 0.
    SeekChildSeekTime = 23,
    /// Child-iterator seeks made by merging iterators.
    SeekChildSeekCount = 24,
    /// Nanoseconds spent building the min-heap of a forward merging iterator.
    /// Not counted by Shale: stays 0.
    SeekMinHeapTime = 25,
    /// Nanoseconds spent building the max-heap of a backward merging iterator.
    /// Not counted by Shale: stays 0.
    SeekMaxHeapTime = 26,
    /// Nanoseconds spent in the internal (below user-key) seek of an iterator.
    /// Not counted by Shale: stays 0.
    SeekInternalSeekTime = 27,
    /// Nanoseconds an iterator spent finding the next visible user entry.
    /// Not counted by Shale: stays 0.
    FindNextUserEntryTime = 28,
    /// Nanoseconds a write spent appending to the WAL.
    WriteWalTime = 29,
    /// Nanoseconds a write spent inserting into the memtables.
    WriteMemtableTime = 30,
    /// Nanoseconds a write was delayed or stopped by write stalls.
    WriteDelayTime = 31,
    /// Nanoseconds a write spent outside the WAL and memtable (queueing, preparing, finishing).
    /// Not counted by Shale: stays 0.
    WritePreAndPostProcessTime = 32,
    /// Nanoseconds spent acquiring the DB mutex (Shale times only the write path's room check).
    DbMutexLockNanos = 33,
    /// Nanoseconds spent waiting on the DB's condition variable (not counted by Shale: stays 0).
    DbConditionWaitNanos = 34,
    /// Nanoseconds spent inside the merge operator.
    MergeOperatorTimeNanos = 35,
    /// Nanoseconds spent reading index blocks from SST files (not counted by Shale: stays 0).
    ReadIndexBlockNanos = 36,
    /// Nanoseconds spent reading filter blocks from SST files (not counted by Shale: stays 0).
    ReadFilterBlockNanos = 37,
    /// Nanoseconds spent creating iterators over table blocks (not counted by Shale: stays 0).
    NewTableBlockIterNanos = 38,
    /// Nanoseconds spent creating iterators over SST files (table readers).
    /// Not counted by Shale: stays 0.
    NewTableIteratorNanos = 39,
    /// Nanoseconds spent seeking inside data blocks (not counted by Shale: stays 0).
    BlockSeekNanos = 40,
    /// Nanoseconds spent finding and opening table files (table cache lookups).
    FindTableNanos = 41,
    /// Memtable bloom-filter probes that let the key through.
    BloomMemtableHitCount = 42,
    /// Memtable bloom-filter probes that ruled the key out.
    BloomMemtableMissCount = 43,
    /// SST bloom-filter probes that let the key through.
    BloomSstHitCount = 44,
    /// SST bloom-filter probes that ruled the key out.
    BloomSstMissCount = 45,
    /// Nanoseconds a transaction waited for a key lock (not counted by Shale: stays 0).
    KeyLockWaitTime = 46,
    /// Key-lock waits of transactions (not counted by Shale: stays 0).
    KeyLockWaitCount = 47,
    /// Nanoseconds spent in the file system opening sequential files.
    /// Not counted by Shale: stays 0.
    EnvNewSequentialFileNanos = 48,
    /// Nanoseconds spent in the file system opening random-access files.
    /// Not counted by Shale: stays 0.
    EnvNewRandomAccessFileNanos = 49,
    /// Nanoseconds spent in the file system creating writable files.
    /// Not counted by Shale: stays 0.
    EnvNewWritableFileNanos = 50,
    /// Nanoseconds spent in the file system reusing writable files (not counted by Shale: stays 0).
    EnvReuseWritableFileNanos = 51,
    /// Nanoseconds spent in the file system opening random read-write files.
    /// Not counted by Shale: stays 0.
    EnvNewRandomRwFileNanos = 52,
    /// Nanoseconds spent in the file system opening directories (not counted by Shale: stays 0).
    EnvNewDirectoryNanos = 53,
    /// Nanoseconds spent in the file system checking whether files exist.
    /// Not counted by Shale: stays 0.
    EnvFileExistsNanos = 54,
    /// Nanoseconds spent in the file system listing directories (not counted by Shale: stays 0).
    EnvGetChildrenNanos = 55,
    /// Nanoseconds spent in the file system listing directories with file attributes.
    /// Not counted by Shale: stays 0.
    EnvGetChildrenFileAttributesNanos = 56,
    /// Nanoseconds spent in the file system deleting files (not counted by Shale: stays 0).
    EnvDeleteFileNanos = 57,
    /// Nanoseconds spent in the file system creating directories (not counted by Shale: stays 0).
    EnvCreateDirNanos = 58,
    /// Nanoseconds spent in the file system creating directories that may already exist.
    /// Not counted by Shale: stays 0.
    EnvCreateDirIfMissingNanos = 59,
    /// Nanoseconds spent in the file system deleting directories (not counted by Shale: stays 0).
    EnvDeleteDirNanos = 60,
    /// Nanoseconds spent in the file system asking for file sizes (not counted by Shale: stays 0).
    EnvGetFileSizeNanos = 61,
    /// Nanoseconds spent in the file system asking for modification times.
    /// Not counted by Shale: stays 0.
    EnvGetFileModificationTimeNanos = 62,
    /// Nanoseconds spent in the file system renaming files (not counted by Shale: stays 0).
    EnvRenameFileNanos = 63,
    /// Nanoseconds spent in the file system hard-linking files (not counted by Shale: stays 0).
    EnvLinkFileNanos = 64,
    /// Nanoseconds spent in the file system locking files (not counted by Shale: stays 0).
    EnvLockFileNanos = 65,
    /// Nanoseconds spent in the file system unlocking files (not counted by Shale: stays 0).
    EnvUnlockFileNanos = 66,
    /// Nanoseconds spent in the file system creating info loggers (not counted by Shale: stays 0).
    EnvNewLoggerNanos = 67,
    /// Not a metric: the number of metrics; [`PerfContext::metric`](super::PerfContext::metric) returns 0 for it.
    TotalMetricCount = 68,
}

impl PerfMetric {
    /// The counter this metric reads (None: `TotalMetricCount`).
    pub(crate) fn field(self) -> Option<usize> {
        Some(match self {
            PerfMetric::UserKeyComparisonCount => field::USER_KEY_COMPARISON_COUNT,
            PerfMetric::BlockCacheHitCount => field::BLOCK_CACHE_HIT_COUNT,
            PerfMetric::BlockReadCount => field::BLOCK_READ_COUNT,
            PerfMetric::BlockReadByte => field::BLOCK_READ_BYTE,
            PerfMetric::BlockReadTime => field::BLOCK_READ_TIME,
            PerfMetric::BlockChecksumTime => field::BLOCK_CHECKSUM_TIME,
            PerfMetric::BlockDecompressTime => field::BLOCK_DECOMPRESS_TIME,
            PerfMetric::GetReadBytes => field::GET_READ_BYTES,
            PerfMetric::MultigetReadBytes => field::MULTIGET_READ_BYTES,
            PerfMetric::IterReadBytes => field::ITER_READ_BYTES,
            PerfMetric::InternalKeySkippedCount => field::INTERNAL_KEY_SKIPPED_COUNT,
            PerfMetric::InternalDeleteSkippedCount => field::INTERNAL_DELETE_SKIPPED_COUNT,
            PerfMetric::InternalRecentSkippedCount => field::INTERNAL_RECENT_SKIPPED_COUNT,
            PerfMetric::InternalMergeCount => field::INTERNAL_MERGE_COUNT,
            PerfMetric::GetSnapshotTime => field::GET_SNAPSHOT_TIME,
            PerfMetric::GetFromMemtableTime => field::GET_FROM_MEMTABLE_TIME,
            PerfMetric::GetFromMemtableCount => field::GET_FROM_MEMTABLE_COUNT,
            PerfMetric::GetPostProcessTime => field::GET_POST_PROCESS_TIME,
            PerfMetric::GetFromOutputFilesTime => field::GET_FROM_OUTPUT_FILES_TIME,
            PerfMetric::SeekOnMemtableTime => field::SEEK_ON_MEMTABLE_TIME,
            PerfMetric::SeekOnMemtableCount => field::SEEK_ON_MEMTABLE_COUNT,
            PerfMetric::NextOnMemtableCount => field::NEXT_ON_MEMTABLE_COUNT,
            PerfMetric::PrevOnMemtableCount => field::PREV_ON_MEMTABLE_COUNT,
            PerfMetric::SeekChildSeekTime => field::SEEK_CHILD_SEEK_TIME,
            PerfMetric::SeekChildSeekCount => field::SEEK_CHILD_SEEK_COUNT,
            PerfMetric::SeekMinHeapTime => field::SEEK_MIN_HEAP_TIME,
            PerfMetric::SeekMaxHeapTime => field::SEEK_MAX_HEAP_TIME,
            PerfMetric::SeekInternalSeekTime => field::SEEK_INTERNAL_SEEK_TIME,
            PerfMetric::FindNextUserEntryTime => field::FIND_NEXT_USER_ENTRY_TIME,
            PerfMetric::WriteWalTime => field::WRITE_WAL_TIME,
            PerfMetric::WriteMemtableTime => field::WRITE_MEMTABLE_TIME,
            PerfMetric::WriteDelayTime => field::WRITE_DELAY_TIME,
            PerfMetric::WritePreAndPostProcessTime => field::WRITE_PRE_AND_POST_PROCESS_TIME,
            PerfMetric::DbMutexLockNanos => field::DB_MUTEX_LOCK_NANOS,
            PerfMetric::DbConditionWaitNanos => field::DB_CONDITION_WAIT_NANOS,
            PerfMetric::MergeOperatorTimeNanos => field::MERGE_OPERATOR_TIME_NANOS,
            PerfMetric::ReadIndexBlockNanos => field::READ_INDEX_BLOCK_NANOS,
            PerfMetric::ReadFilterBlockNanos => field::READ_FILTER_BLOCK_NANOS,
            PerfMetric::NewTableBlockIterNanos => field::NEW_TABLE_BLOCK_ITER_NANOS,
            PerfMetric::NewTableIteratorNanos => field::NEW_TABLE_ITERATOR_NANOS,
            PerfMetric::BlockSeekNanos => field::BLOCK_SEEK_NANOS,
            PerfMetric::FindTableNanos => field::FIND_TABLE_NANOS,
            PerfMetric::BloomMemtableHitCount => field::BLOOM_MEMTABLE_HIT_COUNT,
            PerfMetric::BloomMemtableMissCount => field::BLOOM_MEMTABLE_MISS_COUNT,
            PerfMetric::BloomSstHitCount => field::BLOOM_SST_HIT_COUNT,
            PerfMetric::BloomSstMissCount => field::BLOOM_SST_MISS_COUNT,
            PerfMetric::KeyLockWaitTime => field::KEY_LOCK_WAIT_TIME,
            PerfMetric::KeyLockWaitCount => field::KEY_LOCK_WAIT_COUNT,
            PerfMetric::EnvNewSequentialFileNanos => field::ENV_NEW_SEQUENTIAL_FILE_NANOS,
            PerfMetric::EnvNewRandomAccessFileNanos => field::ENV_NEW_RANDOM_ACCESS_FILE_NANOS,
            PerfMetric::EnvNewWritableFileNanos => field::ENV_NEW_WRITABLE_FILE_NANOS,
            PerfMetric::EnvReuseWritableFileNanos => field::ENV_REUSE_WRITABLE_FILE_NANOS,
            PerfMetric::EnvNewRandomRwFileNanos => field::ENV_NEW_RANDOM_RW_FILE_NANOS,
            PerfMetric::EnvNewDirectoryNanos => field::ENV_NEW_DIRECTORY_NANOS,
            PerfMetric::EnvFileExistsNanos => field::ENV_FILE_EXISTS_NANOS,
            PerfMetric::EnvGetChildrenNanos => field::ENV_GET_CHILDREN_NANOS,
            PerfMetric::EnvGetChildrenFileAttributesNanos => field::ENV_GET_CHILDREN_FILE_ATTRIBUTES_NANOS,
            PerfMetric::EnvDeleteFileNanos => field::ENV_DELETE_FILE_NANOS,
            PerfMetric::EnvCreateDirNanos => field::ENV_CREATE_DIR_NANOS,
            PerfMetric::EnvCreateDirIfMissingNanos => field::ENV_CREATE_DIR_IF_MISSING_NANOS,
            PerfMetric::EnvDeleteDirNanos => field::ENV_DELETE_DIR_NANOS,
            PerfMetric::EnvGetFileSizeNanos => field::ENV_GET_FILE_SIZE_NANOS,
            PerfMetric::EnvGetFileModificationTimeNanos => field::ENV_GET_FILE_MODIFICATION_TIME_NANOS,
            PerfMetric::EnvRenameFileNanos => field::ENV_RENAME_FILE_NANOS,
            PerfMetric::EnvLinkFileNanos => field::ENV_LINK_FILE_NANOS,
            PerfMetric::EnvLockFileNanos => field::ENV_LOCK_FILE_NANOS,
            PerfMetric::EnvUnlockFileNanos => field::ENV_UNLOCK_FILE_NANOS,
            PerfMetric::EnvNewLoggerNanos => field::ENV_NEW_LOGGER_NANOS,
            PerfMetric::TotalMetricCount => return None,
        })
    }
}
