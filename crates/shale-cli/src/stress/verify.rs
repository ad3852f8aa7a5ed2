//! Verification of the whole database against the expected state: at start (after a crash or a
//! clean close), after an injected fault, and at the end of a run; and the check of a bounded
//! scan (`scan_check`) the workload's reads use.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use shale::{ColumnFamily, ReadOptions, DB};

use super::model::{decode_value, describe, key_bytes, parse_phys, sd_start, value_of, vid_desc, Entry, Rng};
use super::run::{hex, Ctx};

/// Verify every key against the expected state (tolerating pending writes and, after a lossy
/// run, lost writes), settle what the DB holds, then check a full forward scan.
pub(crate) fn verify_all(ctx: &Ctx) -> Result<u64, String> {
    let g = ctx.db.read().unwrap();
    verify_db(ctx, g.as_ref().unwrap())
}

pub(crate) fn verify_db(ctx: &Ctx, db: &DB) -> Result<u64, String> {
    let lossy = ctx.exp.lossy();
    // The entries as the last run left them (before settling), for the check of batches across
    // families below.
    let before: Vec<Entry> = (0..ctx.max_key * ctx.fams).map(|s| ctx.exp.get(s)).collect();
    let mut settled = vec![0u32; before.len()];
    for cf in 0..ctx.fams {
        let h = ctx.handle(db, cf)?;
        verify_family(ctx, db, &h, cf, lossy, &mut settled)?;
    }
    if ctx.fams > 1 && !lossy {
        // A batch across families that was in flight (the same pending entry in every family)
        // survived in all of them or in none.
        for k in 0..ctx.max_key {
            let slots: Vec<u64> = (0..ctx.fams).map(|c| ctx.slot(c, k)).collect();
            let e0 = before[slots[0] as usize];
            if e0.pending.is_none() || slots.iter().any(|&s| before[s as usize] != e0) {
                continue;
            }
            let got: Vec<u32> = slots.iter().map(|&s| settled[s as usize]).collect();
            if got.iter().any(|&g| g != got[0]) {
                let list: Vec<String> = got.iter().map(|&g| vid_desc(g)).collect();
                ctx.fail(format!(
                    "MISMATCH in verification: key {k}: a batch across families was torn by the crash \
                     (it wrote {} in every family; the families hold: {})",
                    e0.describe(),
                    list.join(", ")
                ));
                return Err(format!("a batch across families is torn at key {k}"));
            }
        }
    }
    // Transactions that were committing: all or nothing.
    super::txn_files::check_inflight(ctx, &settled, lossy)?;
    if lossy {
        ctx.exp.set_lossy(false)?;
    }
    Ok(ctx.max_key * ctx.fams)
}

/// Verify (and settle) every key of family `cf`, then check a full forward scan of it. The
/// value ids held are put in `settled` (by slot).
fn verify_family(
    ctx: &Ctx,
    db: &DB,
    h: &ColumnFamily,
    cf: u64,
    lossy: bool,
    settled: &mut [u32],
) -> Result<(), String> {
    let mut bad = 0u64;
    let sd = sd_start(ctx.max_key);
    for k in 0..ctx.max_key {
        let slot = ctx.slot(cf, k);
        let e = ctx.exp.get(slot);
        // What the DB holds for k: Some(value id, 0 = absent) or None (not a valid value).
        let (got, actual) = if k < sd {
            let actual = db
                .get_cf(h, key_bytes(k))
                .map_err(|e| format!("get key {k} during verification: {e}"))?;
            let got = match &actual {
                None => Some(0),
                Some(v) => decode_value(slot, v),
            };
            (got, describe(slot, actual.as_deref()))
        } else {
            let mut ro = ReadOptions::default();
            ro.set_iterate_lower_bound(key_bytes(k).to_vec());
            ro.set_iterate_upper_bound(key_bytes(k + 1).to_vec());
            let mut it = db.raw_iterator_cf_opt(h, ro);
            it.seek_to_first();
            let mut found = Vec::new();
            while it.valid() && found.len() < 4 {
                found.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
                it.next();
            }
            it.status()
                .map_err(|e| format!("scan of key {k} during verification: {e}"))?;
            match found.as_slice() {
                [] => (Some(0), "absent".to_string()),
                [(key, v)] => match parse_phys(key, ctx.max_key) {
                    Some((_, Some(s))) if v.as_slice() == value_of(slot, s).as_slice() => {
                        (Some(s), format!("value id {s}"))
                    }
                    _ => (None, format!("key 0x{} with {}", hex(key), describe(slot, Some(v)))),
                },
                many => (None, format!("{} versions", many.len())),
            }
        };
        let ok = match got {
            Some(g) => g == e.committed || e.pending == Some(g) || lossy,
            None => false,
        };
        if !ok {
            bad += 1;
            if bad <= 20 {
                ctx.fail(format!(
                    "MISMATCH in verification: key {k} (0x{}){} expected {}{}, actual {actual}",
                    hex(&key_bytes(k)),
                    ctx.fam_desc(slot),
                    e.describe(),
                    if lossy { " (or any value: lossy run)" } else { "" },
                ));
            }
            continue;
        }
        let g = got.unwrap();
        settled[slot as usize] = g;
        if e.pending.is_some() || g != e.committed {
            ctx.exp.commit(slot, g)?;
        }
    }
    if bad > 0 {
        return Err(format!(
            "{bad} of {} keys{} do not match the expected state",
            ctx.max_key,
            ctx.fam_desc(ctx.slot(cf, 0))
        ));
    }
    // A full scan must show exactly the expected keys (below the transaction counters, which
    // sit above the key space: `txn`).
    let mut ro = ReadOptions::default();
    ro.set_iterate_upper_bound(key_bytes(ctx.max_key).to_vec());
    let mut it = db.raw_iterator_cf_opt(h, ro);
    it.seek_to_first();
    let mut next_k = 0u64;
    while it.valid() {
        let key = it.key().unwrap();
        let Some((k, suffix)) = parse_phys(key, ctx.max_key) else {
            return Err(format!("scan: unexpected key 0x{}", hex(key)));
        };
        if k < next_k {
            return Err(format!("scan: key {k} out of order"));
        }
        for missing in next_k..k {
            let c = ctx.exp.get(ctx.slot(cf, missing)).committed;
            if c != 0 {
                ctx.mismatch("verification scan", ctx.slot(cf, missing), vid_desc(c), None);
                return Err(format!("scan misses key {missing}"));
            }
        }
        let slot = ctx.slot(cf, k);
        let c = ctx.exp.get(slot).committed;
        if c == 0 || suffix.is_some_and(|s| s != c) || it.value().unwrap() != value_of(slot, c).as_slice() {
            ctx.mismatch("verification scan", slot, vid_desc(c), it.value());
            return Err(format!("scan disagrees at key {k}"));
        }
        next_k = k + 1;
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    for missing in next_k..ctx.max_key {
        let c = ctx.exp.get(ctx.slot(cf, missing)).committed;
        if c != 0 {
            ctx.mismatch("verification scan", ctx.slot(cf, missing), vid_desc(c), None);
            return Err(format!("scan misses key {missing}"));
        }
    }
    ctx.reads_checked.fetch_add(2 * ctx.max_key, Ordering::Relaxed);
    Ok(())
}

/// Scan `lo..hi` with iterator bounds (forward or backward, from the ends or from a seek) and
/// compare with `want`.
pub(crate) fn scan_check(
    ctx: &Ctx,
    (db, h, cf): (&DB, &ColumnFamily, u64),
    rng: &mut Rng,
    lo: u64,
    hi: u64,
    want: &[(u64, u32)],
    snap: Option<&shale::Snapshot>,
) -> Result<(), String> {
    let mut ro = ReadOptions::default();
    if let Some(s) = snap {
        ro.set_snapshot(s);
    }
    ro.set_iterate_lower_bound(key_bytes(lo).to_vec());
    ro.set_iterate_upper_bound(key_bytes(hi).to_vec());
    // The extractor stays as it is until the scan ends (`prefix`).
    let prefix_now = ctx.prefix.current();
    let n = *prefix_now;
    let mut mode = String::new();
    if n > 0 {
        // With a prefix extractor: a prefix seek that stays in the prefix when the range is in
        // one prefix, else total order with the filters where the bound allows, or without.
        let one_prefix = n <= 8 && key_bytes(lo)[..n] == key_bytes(hi - 1)[..n];
        let m = match rng.below(3) {
            0 if one_prefix => {
                ro.set_prefix_same_as_start(true);
                "prefix_same_as_start"
            }
            1 => {
                ro.set_total_order_seek(true);
                "total_order_seek"
            }
            _ => {
                ro.set_auto_prefix_mode(true);
                "auto_prefix_mode"
            }
        };
        mode = format!(", {n}-byte prefix extractor, {m}");
    }
    let mut it = db.raw_iterator_cf_opt(h, ro);
    // Plain tables iterate forward only (as in RocksDB).
    let forward = rng.below(2) == 0 || ctx.cfg.plain;
    let mut got = Vec::new();
    // Position from the bound itself or by a seek to a key within/around the range.
    let how = rng.below(3);
    mode.push_str(match (forward, how) {
        (_, 0) => ", from the bound",
        (true, _) => ", by seek",
        (false, _) => ", by seek_for_prev",
    });
    match (forward, how) {
        (true, 0) => it.seek_to_first(),
        (true, _) => it.seek(key_bytes(lo)),
        (false, 0) => it.seek_to_last(),
        (false, _) => {
            // At or before the greatest DB key of logical key hi - 1.
            let mut t = key_bytes(hi - 1).to_vec();
            t.extend_from_slice(&[0xff; 4]);
            it.seek_for_prev(t)
        }
    }
    while it.valid() {
        got.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        if got.len() > want.len() + 1 {
            break;
        }
        if forward {
            it.next()
        } else {
            it.prev()
        }
    }
    if ctx.read_ok("iterator", it.status())?.is_none() || (lo..hi).any(|k| ctx.in_doubt(ctx.slot(cf, k))) {
        return Ok(());
    }
    if !forward {
        got.reverse();
    }
    let what = if forward { "forward scan" } else { "backward scan" };
    let what = if snap.is_some() {
        format!("snapshot {what} [{lo}, {hi}){mode}")
    } else {
        format!("{what} [{lo}, {hi}){mode}")
    };
    ctx.reads_checked.fetch_add(want.len().max(1) as u64, Ordering::Relaxed);
    for i in 0..want.len().max(got.len()) {
        let g = got.get(i).map(|(key, v)| (parse_phys(key, ctx.max_key), key, v));
        match (want.get(i), g) {
            (_, Some((None, key, v))) => {
                ctx.fail(format!(
                    "MISMATCH in {what}: a foreign key 0x{} (value {} bytes)",
                    hex(key),
                    v.len()
                ));
                return Ok(());
            }
            (Some(&(k, vid)), Some((Some((gk, suf)), _, v))) if gk == k => {
                if suf.is_some_and(|s| s != vid) || v.as_slice() != value_of(ctx.slot(cf, k), vid).as_slice() {
                    let actual = match suf {
                        Some(s) if s != vid => format!("a version with value id {s} in its key"),
                        _ => describe(ctx.slot(cf, k), Some(v)),
                    };
                    ctx.fail(format!(
                        "MISMATCH in {what}: key {k}{} expected {}, actual {actual}",
                        ctx.fam_desc(ctx.slot(cf, k)),
                        vid_desc(vid)
                    ));
                }
                if ctx.failed.load(Ordering::Acquire) {
                    return Ok(());
                }
            }
            (Some(&(k, vid)), other) => {
                // The scan lacks k (or shows another key first).
                match other {
                    Some((Some((g, _)), _, v)) if g < k => {
                        ctx.mismatch(&what, ctx.slot(cf, g), "absent".into(), Some(v))
                    }
                    _ => ctx.mismatch(&what, ctx.slot(cf, k), vid_desc(vid), None),
                }
                return Ok(());
            }
            (None, Some((Some((g, _)), _, v))) => {
                ctx.mismatch(&what, ctx.slot(cf, g), "absent".into(), Some(v));
                return Ok(());
            }
            (None, None) => unreachable!(),
        }
    }
    Ok(())
}

/// Before a clean close of a run without the WAL: flush every family, as the close would, but
/// see its error. Writes that skipped the WAL live only in the memtables, and after a background
/// error (an injected fault that no foreground write has met yet) the close cannot flush them:
/// the caller must then treat the reopen as a recovery after a fault, where they may be lost.
pub(crate) fn flush_before_close(db: &DB, hs: &[Arc<ColumnFamily>]) -> Result<(), String> {
    hs.iter().try_for_each(|h| db.flush_cf(h).map_err(|e| e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use shale::fs::testing::FaultFs;
    use shale::fs::testing::FaultKind;
    use shale::fs::testing::IoActivity;
    use shale::fs::testing::MemFs;
    use shale::{Options, WriteOptions, DB};

    use super::flush_before_close;

    /// A run without the WAL that closes while a background flush has failed: the close cannot
    /// flush the memtable, so acknowledged writes vanish and, after a "clean" reopen, reads
    /// would report a MISMATCH (as `stress_with_injected_io_faults_passes_and_reports_them`
    /// could). `flush_before_close` must report that case so the reopen verifies leniently.
    #[test]
    fn flush_before_close_reports_a_background_error_that_would_lose_wal_less_writes() {
        let mem = Arc::new(MemFs::new());
        let f = FaultFs::new(mem.clone());
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(64 << 10);
        o.set_env(Arc::new(f.clone()));
        let db = DB::open(&o, "/db").unwrap();
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        db.put_opt(b"first", b"v", &wo).unwrap();
        let h = db.cf_handle("default").unwrap();
        // No error yet: the flush before the close succeeds and keeps the write.
        flush_before_close(&db, std::slice::from_ref(&h)).unwrap();
        db.put_opt(b"second", b"v", &wo).unwrap();
        // Every table a background flush writes fails: fill the memtable until one has failed.
        f.inject_for(FaultKind::WriteEio, Some(".sst"), IoActivity::Flush);
        let mut i = 0u32;
        while db.property_int_value("rocksdb.background-errors").unwrap() == Some(0) {
            let _ = db.put_opt(format!("k{i:08}").as_bytes(), [7u8; 100], &wo);
            i += 1;
            assert!(i < 100_000, "no background flush failed");
            if i.is_multiple_of(1000) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        f.clear();
        assert!(
            flush_before_close(&db, &[h]).is_err(),
            "the background error must be reported"
        );
        drop(db);
        // Which is why: the close lost the write that had only the memtable.
        let mut o2 = Options::default();
        o2.set_env(mem);
        let db = DB::open(&o2, "/db").unwrap();
        assert_eq!(db.get(b"first").unwrap().as_deref(), Some(&b"v"[..]));
        assert_eq!(db.get(b"second").unwrap(), None);
    }
}
