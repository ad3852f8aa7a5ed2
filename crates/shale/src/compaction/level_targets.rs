//! Level size targets, compaction scores and pending-compaction bytes, as RocksDB's
//! `VersionStorageInfo` computes them (`CalculateBaseBytes`, `ComputeCompactionScore`,
//! `EstimateCompactionBytesNeeded`). Pure functions of a version and the options.

use std::collections::HashSet;

use crate::lsm::version::Version;

/// Size targets and triggers the picker needs (a pure function of these and the version).
#[derive(Debug, Clone)]
pub(crate) struct PickerConfig {
    pub l0_trigger: usize,
    pub max_bytes_for_level_base: u64,
    pub multiplier: f64,
    /// `level_compaction_dynamic_level_bytes`.
    pub dynamic: bool,
    pub target_file_size_base: u64,
    pub target_file_size_multiplier: u64,
    pub pri: crate::options::CompactionPri,
    /// `max_compaction_bytes` with 0 replaced by its default (25 x `target_file_size_base`).
    pub max_compaction_bytes: u64,
    /// A trivial move out of L1+ may take up to 4 adjacent files (RocksDB's
    /// `TryExtendNonL0TrivialMove`); off with `compression_per_level`, as in RocksDB.
    pub multi_file_moves: bool,
    /// Leveled TTL: files whose oldest ancestor is older than this many seconds move down
    /// (0: never).
    pub ttl: u64,
    /// Leveled periodic compaction: files older than this many seconds are rewritten (0: never).
    pub periodic_secs: u64,
    /// The current time, seconds since the epoch (the caller's clock; 0 in tests that do not
    /// use the time-triggered picks).
    pub now: u64,
}

impl PickerConfig {
    pub(crate) fn from_options(opts: &crate::options::Options) -> PickerConfig {
        PickerConfig {
            l0_trigger: opts.level0_file_num_compaction_trigger,
            max_bytes_for_level_base: opts.max_bytes_for_level_base,
            multiplier: opts.max_bytes_for_level_multiplier,
            dynamic: opts.level_compaction_dynamic_level_bytes,
            target_file_size_base: opts.target_file_size_base,
            target_file_size_multiplier: opts.target_file_size_multiplier,
            pri: opts.compaction_pri,
            max_compaction_bytes: opts.effective_max_compaction_bytes(),
            multi_file_moves: opts.compression_per_level.is_empty(),
            ttl: opts.ttl,
            periodic_secs: opts.periodic_compaction_seconds,
            now: 0,
        }
    }
    /// Static level targets, as the tests of the original picker use them.
    #[cfg(test)]
    pub(crate) fn fixed(l0_trigger: usize, base: u64, multiplier: f64) -> PickerConfig {
        PickerConfig {
            l0_trigger,
            max_bytes_for_level_base: base,
            multiplier,
            dynamic: false,
            target_file_size_base: 64 << 20,
            target_file_size_multiplier: 1,
            pri: crate::options::CompactionPri::default(),
            max_compaction_bytes: 25 * (64 << 20),
            multi_file_moves: true,
            ttl: 0,
            periodic_secs: 0,
            now: 0,
        }
    }
}

/// RocksDB scales scores above 1 by this so that other factors can lower a score without
/// letting it drop under the trigger.
const SCORE_SCALE: f64 = 10.0;

/// Per-level size targets of one version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LevelTargets {
    /// The level L0 compacts into (1 without dynamic level bytes).
    pub base_level: usize,
    /// Target bytes per level; `u64::MAX` for levels that must not be compacted by size
    /// (L0 and, with dynamic level bytes, the levels above the base level).
    pub max_bytes: Vec<u64>,
}

impl LevelTargets {
    pub(crate) fn max_bytes_for_level(&self, level: usize) -> u64 {
        self.max_bytes.get(level).copied().unwrap_or(u64::MAX)
    }
}

fn mul(a: u64, m: f64) -> u64 {
    let r = a as f64 * m;
    if r >= u64::MAX as f64 {
        u64::MAX
    } else {
        r as u64
    }
}

/// RocksDB's `VersionStorageInfo::CalculateBaseBytes`.
pub(crate) fn compute_targets(v: &Version, cfg: &PickerConfig) -> LevelTargets {
    let n = v.num_levels();
    let mut max_bytes = vec![u64::MAX; n];
    if !cfg.dynamic {
        let mut b = cfg.max_bytes_for_level_base;
        for (l, m) in max_bytes.iter_mut().enumerate().skip(1) {
            if l > 1 {
                b = mul(b, cfg.multiplier);
            }
            *m = b;
        }
        return LevelTargets {
            base_level: 1,
            max_bytes,
        };
    }
    let mut max_level_size = 0u64;
    let mut first_non_empty = None;
    for l in 1..n {
        let size = v.level_bytes(l);
        if size > 0 && first_non_empty.is_none() {
            first_non_empty = Some(l);
        }
        max_level_size = max_level_size.max(size);
    }
    let first_non_empty = match first_non_empty {
        // No data below L0: L0 compacts into the last level directly.
        None => {
            return LevelTargets {
                base_level: n - 1,
                max_bytes,
            }
        }
        Some(l) => l,
    };
    let base_max = cfg.max_bytes_for_level_base;
    let base_min = (base_max as f64 / cfg.multiplier) as u64;
    // Make the last level's target its actual size and divide upwards.
    let mut cur = max_level_size;
    for _ in (first_non_empty..n - 1).rev() {
        cur = (cur as f64 / cfg.multiplier) as u64;
    }
    let mut base_level = first_non_empty;
    let base_size = if cur <= base_min {
        // The first non-empty level would get a target below the minimum: keep it as the base.
        base_min + 1
    } else {
        while base_level > 1 && cur > base_max {
            base_level -= 1;
            cur = (cur as f64 / cfg.multiplier) as u64;
        }
        if cur > base_max {
            base_max
        } else {
            cur.max(1)
        }
    };
    let mut size = base_size;
    for (l, m) in max_bytes.iter_mut().enumerate().skip(base_level) {
        if l > base_level {
            size = mul(size, cfg.multiplier);
        }
        // No level target below the base size: L1+ smaller than L0 would starve L0.
        *m = size.max(base_max);
    }
    LevelTargets { base_level, max_bytes }
}

/// RocksDB's `ComputeCompactionScore` for leveled compaction: L0 by file count (and size),
/// other levels by bytes over target, de-prioritised by the bytes about to come down into them.
/// The last level scores 0. Files in `busy` are not counted.
pub(crate) fn compute_scores(v: &Version, cfg: &PickerConfig, t: &LevelTargets, busy: &HashSet<u64>) -> Vec<f64> {
    let n = v.num_levels();
    let mut scores = vec![0.0; n];
    if n < 2 {
        return scores;
    }
    let mut downcompact = 0.0f64;
    for (level, score) in scores.iter_mut().enumerate().take(n - 1) {
        let mut s;
        if level == 0 {
            let mut runs = 0usize;
            let mut size = 0u64;
            for f in &v.files[0] {
                downcompact += f.meta.file_size as f64;
                if !busy.contains(&f.number()) {
                    size += f.meta.file_size;
                    runs += 1;
                }
            }
            s = runs as f64 / cfg.l0_trigger as f64;
            if cfg.dynamic {
                if size >= cfg.max_bytes_for_level_base {
                    s = s.max(1.01);
                }
                let base_target = t.max_bytes_for_level(t.base_level);
                if size > base_target {
                    let base_size = v.level_bytes(t.base_level);
                    s = s.max(size as f64 / base_size.max(base_target) as f64);
                }
                // Only with dynamic level sizes is an over-full L0 scaled above every other level,
                // as in RocksDB. With static sizes an L1 further over its target goes first, so
                // L1 drains before the next L0 -> L1 merges into it (less rewriting of L1).
                if s > 1.0 {
                    s *= SCORE_SCALE;
                }
            } else {
                s = s.max(size as f64 / cfg.max_bytes_for_level_base as f64);
            }
        } else {
            let target = t.max_bytes_for_level(level);
            if target == u64::MAX {
                *score = 0.0;
                continue;
            }
            let total = v.level_bytes(level);
            let not_busy: u64 = v.files[level]
                .iter()
                .filter(|f| !busy.contains(&f.number()))
                .map(|f| f.meta.file_size)
                .sum();
            if !cfg.dynamic || not_busy < target {
                s = not_busy as f64 / target as f64;
            } else {
                s = not_busy as f64 / (target as f64 + downcompact) * SCORE_SCALE;
            }
            if cfg.dynamic && total > target {
                downcompact += (total - target) as f64;
            }
        }
        *score = s;
    }
    scores
}

/// RocksDB's `EstimateCompactionBytesNeeded`: bytes compactions must rewrite to bring every
/// level under its target (drives the pending-compaction-bytes stalls).
pub(crate) fn estimate_pending_compaction_bytes(v: &Version, cfg: &PickerConfig, t: &LevelTargets) -> u64 {
    let n = v.num_levels();
    if n < 2 {
        return 0;
    }
    let l0 = v.level_bytes(0);
    let mut need = 0u64;
    let l0_triggered = v.num_files(0) >= cfg.l0_trigger || l0 >= cfg.max_bytes_for_level_base;
    if l0_triggered {
        need += l0;
    }
    let mut next = 0u64;
    for level in t.base_level..n - 1 {
        let mut size = v.level_bytes(level);
        if level == t.base_level && l0_triggered {
            need += size;
        }
        size += next;
        next = 0;
        let target = t.max_bytes_for_level(level);
        if size > target {
            let excess = size - target;
            let ratio = v.level_bytes(level + 1) as f64 / size as f64;
            need = need.saturating_add((excess as f64 * (ratio + 1.0)) as u64);
            next = excess;
        }
    }
    need
}

/// Target size of the files a compaction writes into `level` (RocksDB's `MaxFileSizeForLevel`
/// as this issue specifies it: `target_file_size_base * multiplier^(level - base_level)`).
pub(crate) fn target_file_size(cfg: &PickerConfig, base_level: usize, level: usize) -> u64 {
    let mut s = cfg.target_file_size_base;
    for _ in base_level.max(1)..level {
        s = s.saturating_mul(cfg.target_file_size_multiplier);
    }
    s
}

/// Most grandparent bytes one output file may overlap before it is cut (RocksDB's
/// `ShouldStopBefore` uses `max_compaction_bytes`).
pub(crate) fn max_grandparent_overlap(cfg: &PickerConfig) -> u64 {
    cfg.max_compaction_bytes
}
