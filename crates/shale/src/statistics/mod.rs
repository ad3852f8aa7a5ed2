//! Database statistics, as RocksDB's `Statistics` (`Options::enable_statistics`): counters
//! ("tickers") and distributions ("histograms") under RocksDB's names, shared by every column
//! family of a DB and by every DB opened with the same `Options` (an `Arc`, as RocksDB's
//! `shared_ptr`).
//!
//! Cost design (see `docs/statistics.md`): every counter lives in one of a few cache-line-aligned
//! shards; a thread always writes the shard it was given on first use (round-robin), so two
//! threads share a cache line only when there are more threads than shards. A ticker is one
//! relaxed `fetch_add`; a histogram value a few. Reads (`get_ticker_count`, `ToString`) sum the
//! shards. When statistics are off the engine holds `None` and every recording site is one
//! branch on that `Option`.

use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// Defines a public enum of named variants (name table order), with `name()`, `iter()`,
/// `FromStr` and `Display` as the `rocksdb` crate's statistics enums have, and a count constant.
macro_rules! named_enum {
    (
        $(#[$m:meta])*
        $ty:ident, $count:ident {
            $($variant:ident = $name:literal,)+
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum $ty {
            $(#[doc = $name] $variant,)+
        }

        impl $ty {
            const ALL: &'static [$ty] = &[$($ty::$variant,)+];

            /// RocksDB's name of this variant (e.g. `rocksdb.block.cache.miss`).
            pub const fn name(&self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// Every variant, in the order of RocksDB's name table.
            pub fn iter() -> ::core::slice::Iter<'static, $ty> {
                Self::ALL.iter()
            }
        }

        /// The number of variants.
        pub(crate) const $count: usize = $ty::ALL.len();

        impl ::core::str::FromStr for $ty {
            type Err = $crate::statistics::NameParseError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err($crate::statistics::NameParseError),
                }
            }
        }

        impl ::core::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

mod names;
pub use names::{Histogram, Ticker};
use names::{HISTOGRAM_COUNT, TICKER_COUNT};

/// A string that names no ticker or histogram.
#[derive(Debug, Clone)]
pub struct NameParseError;

impl std::fmt::Display for NameParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unrecognized name")
    }
}

impl std::error::Error for NameParseError {}

/// How much is collected (RocksDB's `StatsLevel`; the default is `ExceptDetailedTimers`).
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
#[repr(u8)]
pub enum StatsLevel {
    /// Nothing is collected.
    DisableAll = 0,
    /// Tickers only: no histograms, no timers.
    ExceptHistogramOrTimers = 2,
    /// Tickers and histograms of sizes, no timing histograms.
    ExceptTimers,
    /// Everything but the time spent inside the DB mutex and on (de)compression (the default).
    ExceptDetailedTimers,
    /// Everything but the time spent waiting for the DB mutex.
    ExceptTimeForMutex,
    /// Everything.
    All,
}

impl StatsLevel {
    /// RocksDB's numbering (`kDisableAll` = 0 … `kAll` = 5).
    fn rank(self) -> u8 {
        match self {
            StatsLevel::DisableAll => 0,
            StatsLevel::ExceptHistogramOrTimers => 1,
            StatsLevel::ExceptTimers => 2,
            StatsLevel::ExceptDetailedTimers => 3,
            StatsLevel::ExceptTimeForMutex => 4,
            StatsLevel::All => 5,
        }
    }
}

const RANK_HISTOGRAMS: u8 = 2; // above kExceptHistogramOrTimers
const RANK_TIMERS: u8 = 3; // above kExceptTimers
const RANK_DETAILED: u8 = 4; // above kExceptDetailedTimers
const RANK_MUTEX: u8 = 5; // kAll

/// A histogram's summary (RocksDB's `HistogramData`), from `Options::get_histogram_data`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistogramData {
    median: f64,
    p95: f64,
    p99: f64,
    max: f64,
    min: f64,
    average: f64,
    std_dev: f64,
    count: u64,
    sum: u64,
}

impl HistogramData {
    /// An all-zero summary (what a histogram reports before any sample).
    pub fn new() -> HistogramData {
        HistogramData::default()
    }
    /// The 50th percentile, interpolated within RocksDB's buckets.
    pub fn median(&self) -> f64 {
        self.median
    }
    /// The mean of the samples (0 with none).
    pub fn average(&self) -> f64 {
        self.average
    }
    /// The 95th percentile, interpolated within the buckets.
    pub fn p95(&self) -> f64 {
        self.p95
    }
    /// The 99th percentile, interpolated within the buckets.
    pub fn p99(&self) -> f64 {
        self.p99
    }
    /// The largest sample (0 with none).
    pub fn max(&self) -> f64 {
        self.max
    }
    /// The smallest sample; with no samples the last bucket limit, as RocksDB reports it.
    pub fn min(&self) -> f64 {
        self.min
    }
    /// The sum of the samples.
    pub fn sum(&self) -> u64 {
        self.sum
    }
    /// The number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// The standard deviation of the samples (0 with none).
    pub fn std_dev(&self) -> f64 {
        self.std_dev
    }
}

/// RocksDB's histogram buckets (`HistogramBucketMapper`): upper limits 1, 2, then each 1.5 times
/// the last, cut to two significant digits, up to the largest `u64`.
const BUCKETS: usize = 109;

const fn bucket_limits() -> [u64; BUCKETS] {
    let mut out = [0u64; BUCKETS];
    out[0] = 1;
    out[1] = 2;
    let mut v = 2.0f64;
    let mut i = 2;
    while i < BUCKETS {
        v *= 1.5;
        let mut b = v as u64;
        let mut pow = 1u64;
        while b / 10 > 10 {
            b /= 10;
            pow *= 10;
        }
        out[i] = b * pow;
        i += 1;
    }
    out
}

static LIMITS: [u64; BUCKETS] = bucket_limits();

#[inline]
fn bucket_of(value: u64) -> usize {
    if value >= LIMITS[BUCKETS - 1] {
        BUCKETS - 1
    } else {
        LIMITS.partition_point(|&l| l < value)
    }
}

struct HistCells {
    buckets: [AtomicU64; BUCKETS],
    min: AtomicU64,
    max: AtomicU64,
    sum: AtomicU64,
    sum_squares: AtomicU64,
}

impl HistCells {
    fn new() -> HistCells {
        HistCells {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            sum_squares: AtomicU64::new(0),
        }
    }

    #[inline]
    fn add(&self, v: u64) {
        self.buckets[bucket_of(v)].fetch_add(1, Relaxed);
        // min/max: a racing update on the same shard may keep the other thread's value, as in
        // RocksDB (a shard is shared only when threads outnumber shards).
        if v < self.min.load(Relaxed) {
            self.min.store(v, Relaxed);
        }
        if v > self.max.load(Relaxed) {
            self.max.store(v, Relaxed);
        }
        self.sum.fetch_add(v, Relaxed);
        self.sum_squares.fetch_add(v.wrapping_mul(v), Relaxed);
    }

    fn clear(&self) {
        for b in &self.buckets {
            b.store(0, Relaxed);
        }
        self.min.store(u64::MAX, Relaxed);
        for c in [&self.max, &self.sum, &self.sum_squares] {
            c.store(0, Relaxed);
        }
    }
}

/// A merged, plain copy of one histogram.
struct HistSnapshot {
    buckets: [u64; BUCKETS],
    min: u64,
    max: u64,
    num: u64,
    sum: u64,
    sum_squares: u64,
}

impl HistSnapshot {
    fn percentile(&self, p: f64) -> f64 {
        let threshold = self.num as f64 * (p / 100.0);
        let mut cumulative = 0u64;
        for (b, &count) in self.buckets.iter().enumerate() {
            cumulative += count;
            if cumulative as f64 >= threshold {
                // interpolate linearly inside the bucket
                let left = if b == 0 { 0 } else { LIMITS[b - 1] };
                let right = LIMITS[b];
                let left_sum = cumulative - count;
                let pos = if count != 0 {
                    (threshold - left_sum as f64) / count as f64
                } else {
                    0.0
                };
                let r = left as f64 + (right - left) as f64 * pos;
                return r.max(self.min as f64).min(self.max as f64);
            }
        }
        self.max as f64
    }

    fn data(&self) -> HistogramData {
        let n = self.num as f64;
        let (average, std_dev) = if self.num == 0 {
            (0.0, 0.0)
        } else {
            let s = self.sum as f64;
            let var = (self.sum_squares as f64 * n - s * s) / (n * n);
            (s / n, var.max(0.0).sqrt())
        };
        HistogramData {
            median: self.percentile(50.0),
            p95: self.percentile(95.0),
            p99: self.percentile(99.0),
            max: self.max as f64,
            // an empty histogram's min is the last bucket limit, as RocksDB reports it
            min: if self.num == 0 {
                LIMITS[BUCKETS - 1] as f64
            } else {
                self.min as f64
            },
            average,
            std_dev,
            count: self.num,
            sum: self.sum,
        }
    }
}

/// One shard of every counter, on its own cache lines.
#[repr(align(128))]
struct Shard {
    tickers: [AtomicU64; TICKER_COUNT],
    hists: Box<[HistCells]>,
}

impl Shard {
    fn new() -> Shard {
        Shard {
            tickers: std::array::from_fn(|_| AtomicU64::new(0)),
            hists: (0..HISTOGRAM_COUNT).map(|_| HistCells::new()).collect(),
        }
    }
}

/// The statistics object an `Options` holds once `enable_statistics` is called.
pub(crate) struct Statistics {
    level: AtomicU8,
    shards: Box<[Shard]>,
    mask: usize,
}

impl std::fmt::Debug for Statistics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Statistics({} shards)", self.shards.len())
    }
}

/// A thread's shard number (assigned round-robin on first use).
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SLOT.with(|s| {
        let v = s.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT.fetch_add(1, Relaxed);
        s.set(v);
        v
    })
}

impl Statistics {
    pub(crate) fn new() -> Statistics {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        let n = (cores * 2).next_power_of_two().clamp(2, 32);
        Statistics {
            level: AtomicU8::new(StatsLevel::ExceptDetailedTimers.rank()),
            shards: (0..n).map(|_| Shard::new()).collect(),
            mask: n - 1,
        }
    }

    pub(crate) fn set_level(&self, level: StatsLevel) {
        self.level.store(level.rank(), Relaxed);
    }

    #[inline]
    fn shard(&self) -> &Shard {
        // `mask` is `shards.len() - 1`, so the index is always in range
        &self.shards[thread_slot() & self.mask]
    }

    /// This thread's shard, for several recordings of one operation (None: level `DisableAll`).
    #[inline]
    pub(crate) fn local(&self) -> Option<Local<'_>> {
        let level = self.level.load(Relaxed);
        (level != 0).then(|| Local {
            shard: self.shard(),
            level,
        })
    }

    /// Add `n` to a ticker.
    #[inline]
    pub(crate) fn tick(&self, t: Ticker, n: u64) {
        if self.level.load(Relaxed) == 0 {
            return;
        }
        self.shard().tickers[t as usize].fetch_add(n, Relaxed);
    }

    /// Add one value to a histogram of sizes or counts (not a time).
    #[inline]
    pub(crate) fn record(&self, h: Histogram, v: u64) {
        if self.level.load(Relaxed) < RANK_HISTOGRAMS {
            return;
        }
        self.shard().hists[h as usize].add(v);
    }

    /// Whether timing histograms are collected (RocksDB's `StopWatch` condition).
    #[inline]
    pub(crate) fn timers(&self) -> bool {
        self.level.load(Relaxed) >= RANK_TIMERS
    }

    /// Whether the detailed timers (compression, mutex) are collected.
    #[inline]
    pub(crate) fn detailed_timers(&self) -> bool {
        self.level.load(Relaxed) >= RANK_DETAILED
    }

    /// Whether the time spent waiting for the DB mutex is measured (level `All`).
    #[inline]
    pub(crate) fn mutex_timers(&self) -> bool {
        self.level.load(Relaxed) >= RANK_MUTEX
    }

    /// Add a time (in the histogram's unit) to a timing histogram.
    #[inline]
    pub(crate) fn record_time(&self, h: Histogram, v: u64) {
        if self.timers() {
            self.shard().hists[h as usize].add(v);
        }
    }

    pub(crate) fn ticker(&self, t: Ticker) -> u64 {
        self.shards
            .iter()
            .map(|s| s.tickers[t as usize].load(Relaxed))
            .fold(0u64, u64::wrapping_add)
    }

    fn snapshot(&self, h: Histogram) -> HistSnapshot {
        let mut out = HistSnapshot {
            buckets: [0; BUCKETS],
            min: u64::MAX,
            max: 0,
            num: 0,
            sum: 0,
            sum_squares: 0,
        };
        for s in self.shards.iter() {
            let c = &s.hists[h as usize];
            for (o, b) in out.buckets.iter_mut().zip(c.buckets.iter()) {
                *o += b.load(Relaxed);
            }
            out.min = out.min.min(c.min.load(Relaxed));
            out.max = out.max.max(c.max.load(Relaxed));
            out.sum = out.sum.wrapping_add(c.sum.load(Relaxed));
            out.sum_squares = out.sum_squares.wrapping_add(c.sum_squares.load(Relaxed));
        }
        // the count is the buckets' total (one counter less to update per value)
        out.num = out.buckets.iter().sum();
        out
    }

    pub(crate) fn histogram(&self, h: Histogram) -> HistogramData {
        self.snapshot(h).data()
    }

    /// Zero every ticker and histogram (RocksDB's `Statistics::Reset`).
    pub(crate) fn reset(&self) {
        for s in self.shards.iter() {
            for t in &s.tickers {
                t.store(0, Relaxed);
            }
            for h in s.hists.iter() {
                h.clear();
            }
        }
    }

    /// RocksDB's `StatisticsImpl::ToString`: one `<name> COUNT : <n>` line per ticker, then one
    /// `<name> P50 : <f> P95 : <f> P99 : <f> P100 : <f> COUNT : <n> SUM : <n>` line per
    /// histogram, in the order of RocksDB's name tables.
    pub(crate) fn to_string_rocksdb(&self) -> String {
        let mut out = String::with_capacity(32 * 1024);
        for t in Ticker::iter() {
            let _ = writeln!(out, "{} COUNT : {}", t.name(), self.ticker(*t));
        }
        for h in Histogram::iter() {
            let d = self.histogram(*h);
            let _ = writeln!(
                out,
                "{} P50 : {:.6} P95 : {:.6} P99 : {:.6} P100 : {:.6} COUNT : {} SUM : {}",
                h.name(),
                d.median,
                d.p95,
                d.p99,
                d.max,
                d.count,
                d.sum
            );
        }
        out
    }
}

/// One thread's shard, resolved once for the several counters of one operation.
pub(crate) struct Local<'a> {
    shard: &'a Shard,
    level: u8,
}

impl Local<'_> {
    #[inline]
    pub(crate) fn tick(&self, t: Ticker, n: u64) {
        self.shard.tickers[t as usize].fetch_add(n, Relaxed);
    }

    /// A histogram of sizes or counts.
    #[inline]
    pub(crate) fn record(&self, h: Histogram, v: u64) {
        if self.level >= RANK_HISTOGRAMS {
            self.shard.hists[h as usize].add(v);
        }
    }
}

/// The engine's handle: `None` when statistics are off.
pub(crate) type Stats = Option<Arc<Statistics>>;

/// Add `n` to ticker `t` if statistics are on.
#[inline]
pub(crate) fn tick(s: &Stats, t: Ticker, n: u64) {
    if let Some(s) = s {
        s.tick(t, n);
    }
}

/// Record `v` in histogram `h` if statistics are on.
#[inline]
#[allow(dead_code)]
pub(crate) fn record(s: &Stats, h: Histogram, v: u64) {
    if let Some(s) = s {
        s.record(h, v);
    }
}

/// Times an operation into a histogram of microseconds (RocksDB's `StopWatch`): started only
/// when statistics are on and their level collects timers.
pub(crate) struct StopWatch<'a> {
    stats: &'a Statistics,
    hist: Histogram,
    start: Instant,
}

impl<'a> StopWatch<'a> {
    #[inline]
    pub(crate) fn start(s: &'a Stats, hist: Histogram) -> Option<StopWatch<'a>> {
        match s {
            Some(st) if st.timers() => Some(StopWatch {
                stats: st,
                hist,
                start: Instant::now(),
            }),
            _ => None,
        }
    }

    /// Microseconds since the start.
    pub(crate) fn elapsed_micros(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }
}

impl Drop for StopWatch<'_> {
    fn drop(&mut self) {
        let us = self.elapsed_micros();
        self.stats.record_time(self.hist, us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_rocksdbs() {
        assert_eq!(&LIMITS[..12], &[1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110]);
        assert_eq!(LIMITS[BUCKETS - 1], 13_000_000_000_000_000_000);
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 0);
        assert_eq!(bucket_of(5), 4);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn tickers_sum_over_threads_and_histograms_summarize() {
        let s = Arc::new(Statistics::new());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        s.tick(Ticker::BytesWritten, 3);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.ticker(Ticker::BytesWritten), 12_000);
        for v in 1..=100 {
            s.record(Histogram::BytesPerWrite, v);
        }
        let d = s.histogram(Histogram::BytesPerWrite);
        assert_eq!((d.count(), d.sum(), d.max(), d.min()), (100, 5050, 100.0, 1.0));
        assert!((d.average() - 50.5).abs() < 1e-9);
        assert!(d.median() > 40.0 && d.median() < 60.0, "{}", d.median());
        assert!(d.p99() <= 100.0 && d.p99() > 90.0);
        s.set_level(StatsLevel::DisableAll);
        s.tick(Ticker::BytesWritten, 1);
        assert_eq!(s.ticker(Ticker::BytesWritten), 12_000);
        s.reset();
        assert_eq!(s.ticker(Ticker::BytesWritten), 0);
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(Ticker::iter().count(), TICKER_COUNT);
        assert_eq!(
            "rocksdb.block.cache.miss".parse::<Ticker>().ok(),
            Some(Ticker::BlockCacheMiss)
        );
        assert_eq!(Histogram::DbGet.to_string(), "rocksdb.db.get.micros");
        assert!("rocksdb.nope".parse::<Histogram>().is_err());
    }
}
