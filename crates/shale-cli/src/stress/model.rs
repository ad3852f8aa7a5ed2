//! What the stress tests share: random numbers, the keys and values of the workload (derived
//! from a key and a value id, so any value read can be checked), the expected state (the
//! oracle, described in `crate::stress`), randomized options and the deliberately broken file
//! system. `run` (the stress run), `crash`, `power_loss`, `power_loss_mt`, `fault_fs` and `raft`
//! import it; it imports none of them.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use shale::fs::FileSystem;
use shale::fs::ForwardingFs;
use shale::fs::WritableFile;
use shale::{
    ChecksumType, DBCompactionStyle, DBCompressionType, FifoCompactOptions, Options, UniversalCompactOptions,
    UniversalCompactionStopStyle,
};

use crate::flags::Flags;

// ---------------------------------------------------------------------------------------------
// Random numbers, keys and values.

/// splitmix64.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub const MAX_VID: u32 = (1 << 31) - 1;

pub fn key_bytes(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

#[allow(dead_code)]
pub fn key_of(b: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(b).ok().map(u64::from_be_bytes)
}

/// First key of the no-overwrite region (single_delete keys).
pub fn sd_start(max_key: u64) -> u64 {
    max_key - max_key / 8
}

/// The key written to the DB for logical key `k` holding value id `vid`. In the no-overwrite
/// region the value id is part of the key (`k` big-endian ++ `vid` big-endian), so a Put whose
/// outcome is in doubt and the Put after it never hit the same DB key: at most one Put between
/// two SingleDeletes, RocksDB's SingleDelete contract. A later run with the same seed draws the
/// same value ids and may put again a DB key the first run put and single-deleted (Put,
/// SingleDelete, Put, SingleDelete: within the contract; the engine's test of that sequence is
/// `stress_regressions::single_delete_under_a_second_put_still_deletes_the_first_put`).
pub fn phys_key(k: u64, vid: u32, max_key: u64) -> Vec<u8> {
    let mut v = key_bytes(k).to_vec();
    if k >= sd_start(max_key) {
        v.extend_from_slice(&vid.to_be_bytes());
    }
    v
}

/// Parse a DB key: the logical key and, in the no-overwrite region, the value id in the key.
pub fn parse_phys(b: &[u8], max_key: u64) -> Option<(u64, Option<u32>)> {
    let k = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
    if k >= max_key {
        return None;
    }
    match (k >= sd_start(max_key), b.len()) {
        (false, 8) => Some((k, None)),
        (true, 12) => Some((k, Some(u32::from_be_bytes(b[8..12].try_into().ok()?)))),
        _ => None,
    }
}

fn base(k: u64, vid: u32) -> u64 {
    mix(k ^ 0xA5A5_5A5A_0000_0001).wrapping_add(vid as u64)
}

/// Padding after the 8-byte counter: none for a third of the value ids (merge results and
/// merge targets), up to 99 bytes otherwise, or with `--large_value_one_in` sometimes 4 KiB to
/// 1 MiB.
pub fn pad_len(k: u64, vid: u32) -> usize {
    let h = mix(k.wrapping_mul(31) ^ ((vid as u64) << 32) ^ 0x5BD1_E995);
    let large = LARGE_VALUE_ONE_IN.load(std::sync::atomic::Ordering::Relaxed);
    if h.is_multiple_of(3) {
        0
    } else if large > 0 && (h >> 40).is_multiple_of(large) {
        4096 + ((h >> 8) % (1 << 20)) as usize
    } else {
        ((h >> 8) % 100) as usize
    }
}

/// `--large_value_one_in`: 0, or 1 in about this many padded values is 4 KiB to 1 MiB long.
static LARGE_VALUE_ONE_IN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `--wal_mapped_appends` for this process (-1: by the seed).
static WAL_MAPPED: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(-1);

fn mapped_flag() -> i64 {
    WAL_MAPPED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Set `--wal_mapped_appends` for this process.
pub fn set_wal_mapped_flag(m: i64) {
    WAL_MAPPED.store(m, std::sync::atomic::Ordering::Relaxed);
}

/// Set `--large_value_one_in` for this process (before any value is made or checked).
pub fn set_large_value_one_in(n: u64) {
    LARGE_VALUE_ONE_IN.store(n, std::sync::atomic::Ordering::Relaxed);
}

/// The value of key `k` with value id `vid` (1..=MAX_VID).
pub fn value_of(k: u64, vid: u32) -> Vec<u8> {
    let mut v = base(k, vid).to_le_bytes().to_vec();
    let n = pad_len(k, vid);
    let c = (mix(k ^ vid as u64) & 0xff) as u8;
    v.extend((0..n).map(|i| c.wrapping_add((i / 7) as u8)));
    v
}

/// The value id of a well-formed value of key `k`.
pub fn decode_value(k: u64, v: &[u8]) -> Option<u32> {
    let b = u64::from_le_bytes(v.get(..8)?.try_into().ok()?);
    let vid = b.wrapping_sub(base(k, 0));
    if vid == 0 || vid > MAX_VID as u64 {
        return None;
    }
    (value_of(k, vid as u32) == v).then_some(vid as u32)
}

/// The `uint64add` operand that turns the value (k, old) into (k, new); `new` must have no pad.
pub fn merge_operand(k: u64, old: u32, new: u32) -> [u8; 8] {
    let prev = if old != 0 && pad_len(k, old) == 0 {
        base(k, old)
    } else {
        0
    };
    base(k, new).wrapping_sub(prev).to_le_bytes()
}

pub fn describe(k: u64, v: Option<&[u8]>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => match decode_value(k, v) {
            Some(id) => format!("value id {id} ({} bytes)", v.len()),
            None => {
                let hex: String = v.iter().take(24).map(|b| format!("{b:02x}")).collect();
                format!(
                    "garbage {} bytes: {hex}{}",
                    v.len(),
                    if v.len() > 24 { "..." } else { "" }
                )
            }
        },
    }
}

pub fn vid_desc(vid: u32) -> String {
    if vid == 0 {
        "absent".into()
    } else {
        format!("value id {vid}")
    }
}

/// A random new value id; `no_pad` for a merge result.
pub fn new_vid(rng: &mut Rng, k: u64, no_pad: bool) -> u32 {
    loop {
        let v = 1 + (rng.next() % MAX_VID as u64) as u32;
        if !no_pad || pad_len(k, v) == 0 {
            return v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The expected state.

const MAGIC: &[u8; 8] = b"SHXSTAT1";
const HDR: u64 = 64;
const PENDING: u64 = 1 << 63;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub committed: u32,
    /// The value id being written when the process stopped, if any.
    pub pending: Option<u32>,
}

impl Entry {
    fn decode(x: u64) -> Entry {
        Entry {
            committed: x as u32,
            pending: (x & PENDING != 0).then_some(((x >> 32) as u32) & MAX_VID),
        }
    }
    fn encode(self) -> u64 {
        match self.pending {
            Some(n) => PENDING | ((n as u64) << 32) | self.committed as u64,
            None => self.committed as u64,
        }
    }
    pub fn describe(self) -> String {
        match self.pending {
            Some(n) => format!(
                "{} or {} (write pending at the crash)",
                vid_desc(self.committed),
                vid_desc(n)
            ),
            None => vid_desc(self.committed),
        }
    }
}

/// The file-backed expected state: an in-memory copy plus a pwrite per change.
pub struct Expected {
    file: File,
    mem: Vec<AtomicU64>,
    lossy: AtomicBool,
}

impl Expected {
    /// Open (or create, all keys absent) the expected state for `max_key` keys in each of
    /// `families` column families (the entry of key `k` of family `c` is slot `c * max_key + k`).
    pub fn open(path: &Path, max_key: u64, families: u64) -> Result<(Expected, bool), String> {
        let existed = path.exists();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("cannot open expected state {}: {e}", path.display()))?;
        let slots = max_key * families;
        let len = HDR + 8 * slots;
        let mut mem = Vec::with_capacity(max_key as usize);
        let mut lossy = false;
        if existed {
            let mut data = vec![0u8; file.metadata().map_err(|e| e.to_string())?.len() as usize];
            file.read_exact_at(&mut data, 0)
                .map_err(|e| format!("cannot read expected state {}: {e}", path.display()))?;
            if data.len() < HDR as usize || &data[..8] != MAGIC {
                return Err(format!("{} is not an expected-state file", path.display()));
            }
            let mk = u64::from_le_bytes(data[8..16].try_into().unwrap());
            // Files of one family (written before families existed) hold 0 here.
            let nf = u64::from_le_bytes(data[24..32].try_into().unwrap()).max(1);
            if mk != max_key || nf != families || data.len() as u64 != len {
                return Err(format!(
                    "expected state {} is for --max_key={mk} --column_families={nf}, not --max_key={max_key} \
                     --column_families={families} (use --destroy_db_initially)",
                    path.display()
                ));
            }
            lossy = data[16] != 0;
            for c in data[HDR as usize..].chunks_exact(8) {
                mem.push(AtomicU64::new(u64::from_le_bytes(c.try_into().unwrap())));
            }
        } else {
            let mut hdr = vec![0u8; HDR as usize];
            hdr[..8].copy_from_slice(MAGIC);
            hdr[8..16].copy_from_slice(&max_key.to_le_bytes());
            if families > 1 {
                hdr[24..32].copy_from_slice(&families.to_le_bytes());
            }
            file.set_len(len).map_err(|e| e.to_string())?;
            file.write_all_at(&hdr, 0).map_err(|e| e.to_string())?;
            file.sync_all().map_err(|e| e.to_string())?;
            mem.extend((0..slots).map(|_| AtomicU64::new(0)));
        }
        Ok((
            Expected {
                file,
                mem,
                lossy: AtomicBool::new(lossy),
            },
            existed,
        ))
    }

    pub fn get(&self, k: u64) -> Entry {
        Entry::decode(self.mem[k as usize].load(Ordering::Acquire))
    }

    fn store(&self, k: u64, e: Entry) -> Result<(), String> {
        let x = e.encode();
        self.mem[k as usize].store(x, Ordering::Release);
        self.file
            .write_all_at(&x.to_le_bytes(), HDR + 8 * k)
            .map_err(|e| format!("expected state write: {e}"))
    }

    /// Before the DB write.
    pub fn set_pending(&self, k: u64, new: u32) -> Result<(), String> {
        let c = self.get(k).committed;
        self.store(
            k,
            Entry {
                committed: c,
                pending: Some(new),
            },
        )
    }

    /// After the DB acknowledged it.
    pub fn commit(&self, k: u64, new: u32) -> Result<(), String> {
        self.store(
            k,
            Entry {
                committed: new,
                pending: None,
            },
        )
    }

    pub fn lossy(&self) -> bool {
        self.lossy.load(Ordering::Acquire)
    }

    pub fn set_lossy(&self, v: bool) -> Result<(), String> {
        self.lossy.store(v, Ordering::Release);
        self.file.write_all_at(&[v as u8], 16).map_err(|e| e.to_string())?;
        self.file.sync_data().map_err(|e| e.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Randomized options.

#[derive(Clone, Debug)]
pub struct RunCfg {
    /// 0 never, 1 every write, 2 one write in 16.
    pub sync: u8,
    pub disable_wal: bool,
    /// PlainTable files: no delete_range, iterators move forward only.
    pub plain: bool,
    /// Bytes of the fixed prefix extractor (0: none; `--prefix_size`).
    pub prefix: usize,
    pub desc: String,
}

#[allow(clippy::field_reassign_with_default)] // one randomized field per line reads best here
pub fn random_options(seed: u64, sync_flag: i64, dwal_flag: i64, dyn_flag: i64) -> (Options, RunCfg) {
    let mut r = Rng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x0123);
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(r.pick(&[16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20]));
    o.set_max_write_buffer_number(2 + r.below(3) as i32);
    let mut bbo = o.get_block_based_options();
    bbo.set_block_size(r.pick(&[256, 1024, 4096, 16384]));
    bbo.set_block_restart_interval(r.pick(&[1, 4, 16]));
    o.set_compression_type(r.pick(&[
        DBCompressionType::None,
        DBCompressionType::Snappy,
        DBCompressionType::Zlib,
        DBCompressionType::Bz2,
        DBCompressionType::Lz4,
        DBCompressionType::Lz4hc,
        DBCompressionType::Zstd,
    ]));
    bbo.set_checksum_type(r.pick(&[
        ChecksumType::NoChecksum,
        ChecksumType::CRC32c,
        ChecksumType::XxHash,
        ChecksumType::XxHash64,
        ChecksumType::XXH3,
    ]));
    bbo.set_format_version(2 + r.below(5) as i32);
    bbo.set_bloom_filter(r.pick(&[0.0, 10.0]), false);
    bbo.set_lru_cache_capacity(r.pick(&[0, 1 << 20, 8 << 20]));
    // Index layout and cache placement from a stream of their own, so the choices above keep
    // their seeds: a partitioned index (and filters) of tiny to default partitions, index and
    // filter blocks in the cache or not, with or without a high-priority pool.
    let mut ri = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x1d3);
    let partitioned = ri.below(3) == 0;
    let partition_filters = partitioned && ri.below(2) == 0;
    let metadata_block_size = ri.pick(&[0usize, 128, 4096]);
    if partitioned {
        bbo.set_index_type(shale::BlockBasedIndexType::TwoLevelIndexSearch);
        bbo.set_partition_filters(partition_filters);
        bbo.set_metadata_block_size(metadata_block_size);
    }
    let cache_meta = ri.below(2) == 0;
    bbo.set_cache_index_and_filter_blocks(cache_meta);
    bbo.set_cache_high_pri_pool_ratio(ri.pick(&[0.0, 0.5]));
    let layout = format!(
        " partitioned_index={partitioned} partition_filters={partition_filters} \
         metadata_block_size={metadata_block_size} cache_index_and_filter_blocks={cache_meta}"
    );
    o.set_block_based_table_factory(&bbo);
    o.set_level_zero_file_num_compaction_trigger(2 + r.below(3) as i32);
    o.set_target_file_size_base(r.pick(&[64 << 10, 256 << 10, 2 << 20]));
    o.set_max_bytes_for_level_base(r.pick(&[256 << 10, 1 << 20, 8 << 20]));
    o.set_max_subcompactions(1 + r.below(2) as u32);
    o.set_level_compaction_dynamic_level_bytes(r.below(4) != 0);
    if dyn_flag >= 0 {
        o.set_level_compaction_dynamic_level_bytes(dyn_flag == 1);
    }
    o.set_custom_merge_operator(shale::merge_operator::merge_operator_by_name("uint64add").expect("uint64add"));
    let sync = match sync_flag {
        -1 => r.pick(&[0u8, 0, 1, 2, 2]),
        s => s as u8,
    };
    let disable_wal = match dwal_flag {
        -1 => r.below(6) == 0,
        d => d == 1,
    };
    let sync = if disable_wal { 0 } else { sync };
    let style = random_compaction_style(seed, &mut o);
    if o.validate().is_err() {
        {
            let mut bbo = o.get_block_based_options();
            bbo.set_checksum_type(ChecksumType::CRC32c);
            o.set_block_based_table_factory(&bbo);
        }
    }
    let desc = format!(
        "write_buffer_size={} max_write_buffer_number={} block_size={} restart_interval={} compression={:?} \
         checksum={:?} format_version={} bloom_bits={} block_cache={} l0_trigger={} target_file_size={} \
         level_base={} subcompactions={} dynamic_levels={} sync={} disable_wal={} compaction_style={}",
        o.get_write_buffer_size(),
        o.get_max_write_buffer_number(),
        o.get_block_size(),
        o.get_block_restart_interval(),
        o.get_compression(),
        o.get_checksum_type(),
        o.get_format_version(),
        o.get_bloom_bits_per_key(),
        o.get_block_cache_capacity(),
        o.get_level0_file_num_compaction_trigger(),
        o.get_target_file_size_base(),
        o.get_max_bytes_for_level_base(),
        o.get_max_subcompactions(),
        o.get_level_compaction_dynamic_level_bytes(),
        ["never", "always", "1/16"][sync as usize],
        disable_wal,
        style
    ) + &layout;
    // Groups insert their followers' batches in parallel (RocksDB's default), or not.
    let concurrent = r.below(4) != 0;
    o.set_allow_concurrent_memtable_write(concurrent);
    // With parallel inserts: groups one after the other, pipelined (the next group's WAL write
    // overlaps this group's inserts) or unordered (published at the WAL write).
    let (pipelined, unordered) = match (concurrent, r.below(3)) {
        (false, _) => (false, false),
        (true, 0) => (false, false),
        (true, 1) => (true, false),
        (true, _) => (false, true),
    };
    o.set_enable_pipelined_write(pipelined);
    o.set_unordered_write(unordered);
    // WAL records copied into a mapping (the default) or written with `pwrite`, from a stream
    // of their own (so the other options a seed draws do not depend on it).
    let mapped = match mapped_flag() {
        -1 => !mix(seed ^ 0x003A_99ED).is_multiple_of(4),
        m => m == 1,
    };
    o.set_wal_mapped_appends(mapped);
    let desc = format!(
        "{desc} concurrent_memtable_write={concurrent} enable_pipelined_write={pipelined} unordered_write={unordered} \
         wal_mapped_appends={mapped}"
    );
    (
        o,
        RunCfg {
            sync,
            disable_wal,
            plain: false,
            prefix: 0,
            desc,
        },
    )
}

/// The compaction style of a seed and its options (from a stream of its own, so the other
/// options a seed draws do not depend on the style). FIFO keeps a size limit no
/// run reaches and no TTL: the oracle expects every acknowledged write to stay, so FIFO runs
/// exercise its picker, intra-L0 merges and stall rules, not its deletions
/// (`tests/engine/compaction_styles.rs` tests those). Returns the description.
fn random_compaction_style(seed: u64, o: &mut Options) -> String {
    let mut r = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5717);
    match r.below(3) {
        0 => {
            o.set_compaction_style(DBCompactionStyle::Level);
            format!("level{}", random_triggers(&mut r, o, false))
        }
        1 => {
            let mut u = UniversalCompactOptions::default();
            u.set_size_ratio(r.pick(&[0, 1, 10]));
            u.set_min_merge_width(2);
            u.set_max_merge_width(r.pick(&[4, i32::MAX]));
            u.set_max_size_amplification_percent(r.pick(&[25, 200]));
            let stop = r.pick(&[
                UniversalCompactionStopStyle::Total,
                UniversalCompactionStopStyle::Similar,
            ]);
            u.set_stop_style(stop);
            let trivial = r.below(2) == 0;
            u.set_allow_trivial_move(trivial);
            o.set_compaction_style(DBCompactionStyle::Universal);
            o.set_universal_compaction_options(&u);
            format!("universal({u:?}){}", random_triggers(&mut r, o, true))
        }
        _ => {
            let mut f = FifoCompactOptions::default();
            f.set_max_table_files_size(1 << 40);
            f.set_allow_compaction(r.below(2) == 0);
            o.set_compaction_style(DBCompactionStyle::Fifo);
            o.set_fifo_compaction_options(&f);
            // FIFO's TTL deletes files whose data is older than `ttl`: a family copies the
            // default family's options, whose leveled style may have drawn `ttl = 2`, and the
            // oracle cannot follow deletions by age.
            o.set_ttl(0);
            format!("fifo({f:?})")
        }
    }
}

/// Drawn after a style's own options (so those do not depend on these for a seed): one run in two
/// marks files dense in deletions (`add_compact_on_deletion_collector_factory`), one in three
/// compacts files older than 1 or 2 seconds (`periodic_compaction_seconds`), and under leveled
/// one in four moves files whose data is older than 2 seconds down (`ttl`). Returns the
/// description.
fn random_triggers(r: &mut Rng, o: &mut Options, universal: bool) -> String {
    let mut d = String::new();
    if r.below(2) == 0 {
        let window = r.pick(&[16usize, 128, 1000]);
        let trigger = r.pick(&[4usize, 32]);
        let ratio = r.pick(&[0.0, 0.5]);
        o.add_compact_on_deletion_collector_factory(window, trigger, ratio);
        d += &format!(" deletion_collector=({window},{trigger},{ratio})");
    }
    // Both need block-based tables (a run's plain tables reset them, `run`).
    let block_based = matches!(o.get_table_factory(), shale::options::TableFactory::BlockBased);
    if r.below(3) == 0 && block_based {
        let secs = r.pick(&[1u64, 2]);
        o.set_periodic_compaction_seconds(secs);
        d += &format!(" periodic_compaction_seconds={secs}");
    }
    if !universal && r.below(4) == 0 && block_based {
        o.set_ttl(2);
        d += " ttl=2";
    }
    d
}

// ---------------------------------------------------------------------------------------------
// Column families.

/// The number of column families of a run: the flag, or (-1) one picked by the seed (one run in
/// two has one family, the others 2 to 4).
pub fn num_families(flag: i64, seed: u64) -> u64 {
    if flag > 0 {
        return flag as u64;
    }
    [1, 1, 1, 2, 3, 4][(mix(seed ^ 0xCF5E_ED00) % 6) as usize]
}

/// The name of family `i`: `default`, then `cf1`, `cf2`, ...
pub fn cf_name(i: u64) -> String {
    if i == 0 {
        "default".into()
    } else {
        format!("cf{i}")
    }
}

/// The options of family `i` > 0: the run's options (table format, merge operator, checksums)
/// with a write buffer size and a compaction style of its own, drawn from the seed.
pub fn family_options(base: &Options, seed: u64, i: u64) -> (Options, String) {
    let mut o = base.clone();
    let mut r = Rng::new(seed ^ i.wrapping_mul(0xD1B5_4A32_D192_ED03));
    o.set_write_buffer_size(r.pick(&[16 << 10, 64 << 10, 256 << 10, 1 << 20]));
    let style = random_compaction_style(seed ^ (i << 48), &mut o);
    let desc = format!(
        "{}(write_buffer_size={} {style})",
        cf_name(i),
        o.get_write_buffer_size()
    );
    (o, desc)
}

/// Open the stress DB with `opts` (the default family) and families `1..n` with `fam`: with one
/// family exactly as before families existed (`DB::open`).
pub fn open_families(opts: &Options, path: &Path, fam: &[Options]) -> shale::error::Result<shale::DB> {
    if fam.is_empty() {
        return shale::DB::open(opts, path);
    }
    let mut o = opts.clone();
    o.create_missing_column_families(true);
    let descs = fam
        .iter()
        .enumerate()
        .map(|(i, f)| shale::ColumnFamilyDescriptor::new(cf_name(i as u64 + 1), f.clone()));
    shale::DB::open_cf_descriptors(&o, path, descs)
}

// ---------------------------------------------------------------------------------------------
// Deliberately broken durability (to show the crash tests catch it).

/// Wraps a file system and breaks one durability step of WAL files (`*.log`).
pub struct BuggyFs {
    pub inner: Arc<dyn FileSystem>,
    /// "wal_no_sync": sync() of a WAL only flushes; "wal_no_flush": WAL bytes stay in a user-space
    /// buffer until sync().
    pub bug: String,
}

struct BuggyFile {
    inner: Box<dyn WritableFile>,
    bug: String,
    buf: Vec<u8>,
    size: u64,
}

impl WritableFile for BuggyFile {
    fn append(&mut self, data: &[u8]) -> shale::error::Result<()> {
        self.size += data.len() as u64;
        if self.bug == "wal_no_flush" {
            self.buf.extend_from_slice(data);
            Ok(())
        } else {
            self.inner.append(data)
        }
    }
    fn flush(&mut self) -> shale::error::Result<()> {
        if self.bug == "wal_no_flush" {
            Ok(())
        } else {
            self.inner.flush()
        }
    }
    fn sync(&mut self) -> shale::error::Result<()> {
        if self.bug == "wal_no_sync" {
            return self.inner.flush();
        }
        if !self.buf.is_empty() {
            self.inner.append(&std::mem::take(&mut self.buf))?;
        }
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.size
    }
}

impl ForwardingFs for BuggyFs {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn new_writable(&self, p: &Path) -> shale::error::Result<Box<dyn WritableFile>> {
        let w = self.inner.new_writable(p)?;
        if p.extension().is_some_and(|e| e == "log") {
            Ok(Box::new(BuggyFile {
                inner: w,
                bug: self.bug.clone(),
                buf: Vec::new(),
                size: 0,
            }))
        } else {
            Ok(w)
        }
    }
}

pub fn expected_path(fl: &Flags) -> PathBuf {
    match fl.str("expected_values_path") {
        "" => PathBuf::from(format!("{}.expected", fl.str("db").trim_end_matches('/'))),
        p => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_roundtrip_and_merge_operands_add_up() {
        let mut r = Rng::new(1);
        for k in [0u64, 1, 77, 1 << 40] {
            let a = new_vid(&mut r, k, false);
            assert_eq!(decode_value(k, &value_of(k, a)), Some(a));
            assert_eq!(decode_value(k + 1, &value_of(k, a)), None);
            let b = new_vid(&mut r, k, true);
            assert_eq!(value_of(k, b).len(), 8);
            let op = merge_operand(k, a, b);
            let existing = value_of(k, a);
            let prev = if existing.len() == 8 {
                u64::from_le_bytes(existing[..8].try_into().unwrap())
            } else {
                0
            };
            let res = prev.wrapping_add(u64::from_le_bytes(op)).to_le_bytes();
            assert_eq!(decode_value(k, &res), Some(b));
        }
    }

    /// A family copies the default family's options: a FIFO family must not keep a `ttl` drawn
    /// for a leveled default family, or FIFO deletes acknowledged data by age and the run fails
    /// (`MISMATCH ... expected value ..., actual absent` in a FIFO family, seed 539).
    #[test]
    fn fifo_families_never_delete_by_age() {
        let mut inherited = 0;
        for seed in 0..400u64 {
            let (base, _) = random_options(seed, -1, -1, -1);
            for i in 1..4 {
                let (o, desc) = family_options(&base, seed, i);
                if o.get_compaction_style() == DBCompactionStyle::Fifo {
                    assert_eq!(o.get_ttl(), 0, "seed {seed}: {desc}");
                    inherited += usize::from(base.get_ttl() > 0);
                }
            }
        }
        assert!(
            inherited > 0,
            "no seed has a FIFO family under a default family with a ttl"
        );
    }

    #[test]
    fn entries_encode() {
        for e in [
            Entry {
                committed: 0,
                pending: None,
            },
            Entry {
                committed: MAX_VID,
                pending: Some(0),
            },
            Entry {
                committed: 5,
                pending: Some(MAX_VID),
            },
        ] {
            assert_eq!(Entry::decode(e.encode()), e);
        }
    }
}
