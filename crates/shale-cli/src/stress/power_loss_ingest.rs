//! Ingests in the power-loss tests (`shale stress --power_loss --ingest_external_file_one_in=N`)
//! and the oracle's rule for them (docs/reliability.md, "Ingests in the power-loss tests").
//!
//! An ingest is a step of the history that does not go through the WAL: once acknowledged it
//! is durable (its files, their directory entries and the MANIFEST edit are synced), whatever
//! happens to the unsynced WAL writes before it, although its sequence number is above theirs.
//! So after a power loss the recovered state must be, for some prefix length `p` of the
//! history, the state after applying in history order every WAL step before `p` and every
//! acknowledged ingest (before or after `p`); an ingest the power cut interrupted is applied
//! wholly or not at all. An ingest whose key range holds a key that a WAL step of this round
//! wrote in the same family also makes that step, and everything before it, durable: the step's
//! memtable was either switched already or is switched by the ingest's flush, and a memtable
//! switch syncs the WAL.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{ColumnFamily, IngestExternalFileOptions, Options, SstFileWriter, DB};

use super::hook_fs::Cutter;
use super::model::{key_bytes, new_vid, sd_start, value_of, Rng};
use super::power_loss::Step;

/// How a step of the history reached the DB.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Via {
    /// A write through the WAL: lost with the unsynced WAL tail.
    Wal,
    /// An acknowledged ingest: durable.
    Ingest,
    /// An ingest the power cut interrupted: wholly there or not at all.
    IngestInDoubt,
}

/// The external files of the power-loss ingests: on the test's `MemFs` (the DB's file system),
/// beside the DB.
pub(crate) const SCRATCH: &str = "/powerloss/ext";

/// The ingest settings of a power-loss test.
pub(crate) struct PlIngest {
    /// One write step in N is an ingest (0: none).
    pub one_in: u64,
    /// `--inject_bug=ingest_forget`: the history records the old values of an ingested file.
    pub bug_forget: bool,
    files: AtomicU64,
    pub done: AtomicU64,
}

impl PlIngest {
    pub(crate) fn new(one_in: u64, bug_forget: bool) -> PlIngest {
        PlIngest {
            one_in,
            bug_forget,
            files: AtomicU64::new(0),
            done: AtomicU64::new(0),
        }
    }

    /// Whether this step is an ingest (no random number is drawn when ingests are off, so the
    /// histories of runs without them keep their seeds).
    pub(crate) fn now(&self, rng: &mut Rng) -> bool {
        self.one_in > 0 && rng.below(self.one_in) == 0
    }
}

/// What one ingest step did.
pub(crate) enum Outcome {
    /// Acknowledged: the slots and their new value ids (0: deleted).
    Done(Step),
    /// The power was cut during the ingest call.
    InDoubt(Step),
    /// The power was cut while the external file was written: nothing reached the DB.
    Cut,
}

/// One ingest into a random family of up to 16 consecutive keys of the thread's share
/// (`part = (n, t)`: keys `k % n == t`) below the no-overwrite region: a new value for each, one
/// in five a deletion, written with `SstFileWriter` (the family's options, so through the
/// cutter), ingested by copy or by link (`move_files`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn pl_ingest(
    pi: &PlIngest,
    (db, hs): (&DB, &[Arc<ColumnFamily>]),
    fam_opts: &[&Options],
    rng: &mut Rng,
    state: &BTreeMap<u64, u32>,
    mk: u64,
    (n, t): (u64, u64),
    (cutter, fs): (&Cutter, &MemFs),
) -> Result<Outcome, String> {
    let vsd = sd_start(mk).saturating_sub(t).div_ceil(n);
    let cf = if hs.len() > 1 { rng.below(hs.len() as u64) } else { 0 };
    let lo = rng.below(vsd.max(1));
    let hi = (lo + 1 + rng.below(16)).min(vsd);
    let keys: Vec<u64> = (lo..hi).map(|v| v * n + t).collect();
    if keys.is_empty() {
        return Ok(Outcome::Done(Vec::new()));
    }
    let slot = |k: u64| cf * mk + k;
    let news: Vec<u32> = keys
        .iter()
        .map(|&k| {
            if rng.below(5) == 0 {
                0
            } else {
                new_vid(rng, slot(k), false)
            }
        })
        .collect();
    let file = Path::new(SCRATCH).join(format!("ingest-{}.sst", pi.files.fetch_add(1, Ordering::Relaxed)));
    let opts = fam_opts[cf as usize];
    let mut w = SstFileWriter::create(opts);
    let written = (|| -> shale::error::Result<()> {
        w.open(&file)?;
        for (&k, &v) in keys.iter().zip(&news) {
            if v == 0 {
                w.delete(key_bytes(k))?;
            } else {
                w.put(key_bytes(k), value_of(slot(k), v))?;
            }
        }
        w.finish()
    })();
    match written {
        Ok(()) => {}
        Err(_) if cutter.is_cut() => return Ok(Outcome::Cut),
        Err(e) => return Err(format!("writing an external file: {e}")),
    }
    let mut io = IngestExternalFileOptions::new();
    io.set_move_files(rng.below(2) == 0);
    let r = db.ingest_external_file_cf_opts(&hs[cf as usize], &io, vec![&file]);
    // The source (a copy's; a link's when the ingest failed) is the harness's to remove,
    // on the file system itself (not through the cutter).
    let _ = fs.remove_file(&file);
    // The bug: the history keeps the old values.
    let recorded: Vec<u32> = if pi.bug_forget {
        keys.iter()
            .map(|&k| state.get(&slot(k)).copied().unwrap_or(0))
            .collect()
    } else {
        news
    };
    let step: Step = keys.iter().map(|&k| slot(k)).zip(recorded).collect();
    match r {
        Ok(()) => {
            pi.done.fetch_add(1, Ordering::Relaxed);
            Ok(Outcome::Done(step))
        }
        Err(_) if cutter.is_cut() => Ok(Outcome::InDoubt(step)),
        Err(e) => Err(format!("ingest_external_file: {e}")),
    }
}

/// The index of the last WAL step before `steps.len()` that wrote a slot in the range of the
/// ingest `ing` (its slots are one family's, consecutive keys of a thread's share): that step
/// and every one before it are durable once the ingest is acknowledged.
pub(crate) fn overlapped_by(steps: &[(&Step, Via)], ing: &Step) -> Option<usize> {
    let lo = ing.iter().map(|s| s.0).min()?;
    let hi = ing.iter().map(|s| s.0).max()?;
    steps
        .iter()
        .rposition(|(st, via)| *via == Via::Wal && st.iter().any(|&(s, _)| (lo..=hi).contains(&s)))
}

/// Lengths `p` of the prefixes of the history `steps` such that `base` updated, in history
/// order, by the WAL steps before `p` and every acknowledged ingest equals `got` on the slots of
/// the thread (key `k = slot % mk` with `k % n == t`; `n = 1`: all), in increasing order. An
/// interrupted ingest (the last step) counts as applied or as absent.
pub(crate) fn matching_prefixes(
    base: &BTreeMap<u64, u32>,
    steps: &[(&Step, Via)],
    got: &BTreeMap<u64, u32>,
    part: (u64, u64, u64),
) -> Vec<usize> {
    if let Some(((_, Via::IngestInDoubt), rest)) = steps.split_last() {
        let mut with: Vec<(&Step, Via)> = steps.to_vec();
        with.last_mut().unwrap().1 = Via::Ingest;
        let mut out = matches(base, &with, got, part);
        out.extend(matches(base, rest, got, part));
        out.sort_unstable();
        out.dedup();
        return out;
    }
    matches(base, steps, got, part)
}

fn matches(
    base: &BTreeMap<u64, u32>,
    steps: &[(&Step, Via)],
    got: &BTreeMap<u64, u32>,
    (mk, n, t): (u64, u64, u64),
) -> Vec<usize> {
    let mine = |s: &u64| (*s % mk) % n == t;
    let differs = |st: &BTreeMap<u64, u32>, k: u64| st.get(&k) != got.get(&k);
    let set = |st: &mut BTreeMap<u64, u32>, k: u64, v: u32| {
        if v == 0 {
            st.remove(&k);
        } else {
            st.insert(k, v);
        }
    };
    // The last ingest of each slot: a WAL step before it never shows on that slot.
    let mut last_ingest: BTreeMap<u64, usize> = BTreeMap::new();
    let mut cur: BTreeMap<u64, u32> = base.iter().filter(|(k, _)| mine(k)).map(|(k, v)| (*k, *v)).collect();
    for (i, (st, via)) in steps.iter().enumerate() {
        if *via != Via::Wal {
            for &(k, v) in st.iter() {
                last_ingest.insert(k, i);
                set(&mut cur, k, v);
            }
        }
    }
    let mut ndiff = cur
        .keys()
        .chain(got.keys().filter(|k| mine(k)))
        .filter(|k| differs(&cur, **k))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut out = Vec::new();
    if ndiff == 0 {
        out.push(0);
    }
    for (i, (step, via)) in steps.iter().enumerate() {
        if *via == Via::Wal {
            for &(k, v) in step.iter() {
                if last_ingest.get(&k).is_some_and(|&j| j > i) {
                    continue;
                }
                let before = differs(&cur, k);
                set(&mut cur, k, v);
                ndiff = ndiff + differs(&cur, k) as usize - before as usize;
            }
        }
        if ndiff == 0 {
            out.push(i + 1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(kv: &[(u64, u32)]) -> BTreeMap<u64, u32> {
        kv.iter().copied().collect()
    }

    /// Without ingests the rule is the plain prefix rule; an acknowledged ingest shows whatever
    /// prefix of the WAL steps survived, and hides the WAL steps before it on its keys only.
    #[test]
    fn ingests_survive_lost_wal_writes_before_them() {
        let w1: Step = vec![(1, 10)];
        let w2: Step = vec![(2, 20), (3, 30)];
        let ing: Step = vec![(2, 21), (4, 41)];
        let w3: Step = vec![(4, 42)];
        let base = m(&[]);
        let part = (100, 1, 0);
        let wal_only = [(&w1, Via::Wal), (&w2, Via::Wal)];
        assert_eq!(matching_prefixes(&base, &wal_only, &m(&[(1, 10)]), part), vec![1]);
        let h = [(&w1, Via::Wal), (&w2, Via::Wal), (&ing, Via::Ingest), (&w3, Via::Wal)];
        // Everything lost but the ingest.
        assert_eq!(matching_prefixes(&base, &h, &m(&[(2, 21), (4, 41)]), part), vec![0]);
        // w1 and w2 survived: key 2 still shows the ingest (its number is above w2's).
        assert_eq!(
            matching_prefixes(&base, &h, &m(&[(1, 10), (2, 21), (3, 30), (4, 41)]), part),
            vec![2, 3]
        );
        // Everything survived: w3 is above the ingest on key 4.
        assert_eq!(
            matching_prefixes(&base, &h, &m(&[(1, 10), (2, 21), (3, 30), (4, 42)]), part),
            vec![4]
        );
        // The ingest lost: no prefix matches.
        assert!(matching_prefixes(&base, &h, &m(&[(1, 10), (2, 20), (3, 30)]), part).is_empty());
        // w2's value on key 2 shown although the ingest is above it: no prefix matches.
        assert!(matching_prefixes(&base, &h, &m(&[(1, 10), (2, 20), (3, 30), (4, 41)]), part).is_empty());
    }

    #[test]
    fn an_interrupted_ingest_is_all_or_nothing() {
        let w1: Step = vec![(1, 10)];
        let ing: Step = vec![(2, 21), (3, 31)];
        let h = [(&w1, Via::Wal), (&ing, Via::IngestInDoubt)];
        let part = (100, 1, 0);
        assert_eq!(matching_prefixes(&m(&[]), &h, &m(&[(1, 10)]), part), vec![1]);
        assert_eq!(matching_prefixes(&m(&[]), &h, &m(&[(2, 21), (3, 31)]), part), vec![0]);
        assert!(matching_prefixes(&m(&[]), &h, &m(&[(2, 21)]), part).is_empty());
    }

    #[test]
    fn an_ingest_makes_the_last_overlapping_wal_step_durable() {
        let a: Step = vec![(5, 1)];
        let b: Step = vec![(9, 1)];
        let c: Step = vec![(20, 1)];
        let ing: Step = vec![(4, 2), (6, 2)];
        let h = [(&a, Via::Wal), (&b, Via::Wal), (&ing, Via::Ingest), (&c, Via::Wal)];
        assert_eq!(overlapped_by(&h, &ing), Some(0));
        assert_eq!(overlapped_by(&h[1..], &ing), None);
        assert_eq!(overlapped_by(&h, &vec![(8, 1), (9, 3)]), Some(1));
    }
}
