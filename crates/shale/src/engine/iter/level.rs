//! The level iterator: the files of one sorted level, each table opened only when reached.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::engine::column_family::ColumnFamilyData;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::lsm::version::FileMeta;
use crate::table::any::AnyTableIterator;

/// Iterates the files of one sorted level (L1+), opening each table only when reached.
pub(crate) struct LevelIterator {
    db: Arc<ColumnFamilyData>,
    files: Vec<Arc<FileMeta>>,
    idx: usize,
    cur: Option<AnyTableIterator>,
    verify: bool,
    fill: bool,
    err: Option<Error>,
    /// Prefix seek: files whose filter rules the seek key's prefix out are skipped.
    prefix: Option<Arc<super::prefix::PrefixSeek>>,
}

impl LevelIterator {
    pub(crate) fn new(
        db: Arc<ColumnFamilyData>,
        files: Vec<Arc<FileMeta>>,
        verify: bool,
        fill: bool,
        prefix: Option<Arc<super::prefix::PrefixSeek>>,
    ) -> Self {
        LevelIterator {
            db,
            files,
            idx: 0,
            cur: None,
            verify,
            fill,
            err: None,
            prefix,
        }
    }

    /// Prefix seek (`forward`) or `seek_for_prev` to `target` from file `i`: the first file
    /// in that direction that may hold the target's prefix, skipping those whose filter rules it
    /// out while the neighbour may still hold it (its smallest key, or for `seek_for_prev` its
    /// largest, has that prefix: a level's files are sorted, so a prefix's keys are contiguous).
    /// None: no file of the level holds the prefix (the level sits the seek out).
    fn file_with_prefix(&self, mut i: usize, target: &[u8], forward: bool) -> Option<usize> {
        let Some(mode) = self.prefix.as_deref() else {
            return Some(i);
        };
        let Some(prefix) = mode.filter_prefix(target) else {
            return Some(i);
        };
        let x = mode.extractor();
        loop {
            let f = self.files.get(i)?;
            match self.db.table_cache.get(f) {
                Ok(t) if !super::prefix::table_prefix_may_match(&t, prefix, x.name()) => {
                    i = if forward { i + 1 } else { i.checked_sub(1)? };
                    let next = self.files.get(i)?;
                    let edge = if forward {
                        next.smallest_user()
                    } else {
                        next.largest_user()
                    };
                    if !(x.in_domain(edge) && x.transform(edge) == prefix) {
                        return None;
                    }
                }
                // an open error is reported by `open`
                _ => return Some(i),
            }
        }
    }

    fn open(&mut self, idx: usize) -> bool {
        self.idx = idx;
        self.cur = None;
        let f = match self.files.get(idx) {
            Some(f) => f,
            None => return false,
        };
        match self.db.table_cache.get(f) {
            Ok(t) => {
                self.cur = Some(t.iter(self.verify, self.fill));
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }
    fn skip_forward(&mut self) {
        loop {
            match &self.cur {
                Some(c) if c.valid() => return,
                Some(c) => {
                    if let Err(e) = c.status() {
                        self.err = Some(e);
                        self.cur = None;
                        return;
                    }
                }
                None => return,
            }
            if !self.open(self.idx + 1) {
                self.cur = None;
                return;
            }
            if let Some(c) = &mut self.cur {
                c.seek_to_first();
            }
        }
    }
    fn skip_backward(&mut self) {
        loop {
            match &self.cur {
                Some(c) if c.valid() => return,
                Some(c) => {
                    if let Err(e) = c.status() {
                        self.err = Some(e);
                        self.cur = None;
                        return;
                    }
                }
                None => return,
            }
            if self.idx == 0 || !self.open(self.idx - 1) {
                self.cur = None;
                return;
            }
            if let Some(c) = &mut self.cur {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.cur.as_ref().map(|c| c.valid()).unwrap_or(false)
    }
    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(c) = &mut self.cur {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }
    fn seek_to_last(&mut self) {
        if !self.files.is_empty() && self.open(self.files.len() - 1) {
            if let Some(c) = &mut self.cur {
                c.seek_to_last();
            }
            self.skip_backward();
        }
    }
    fn seek(&mut self, target: &[u8]) {
        let icmp = &self.db.icmp;
        let i = self
            .files
            .partition_point(|f| icmp.compare(&f.meta.largest, target) == Ordering::Less);
        let Some(i) = self.file_with_prefix(i, target, true) else {
            self.cur = None;
            return;
        };
        if self.open(i) {
            if let Some(c) = &mut self.cur {
                c.seek(target);
            }
            self.skip_forward();
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.files.is_empty() {
            self.cur = None;
            return;
        }
        let icmp = &self.db.icmp;
        let mut i = self
            .files
            .partition_point(|f| icmp.compare(&f.meta.largest, target) == Ordering::Less);
        if i >= self.files.len() {
            i = self.files.len() - 1;
        }
        let Some(i) = self.file_with_prefix(i, target, false) else {
            self.cur = None;
            return;
        };
        if self.open(i) {
            if let Some(c) = &mut self.cur {
                c.seek_for_prev(target);
            }
            self.skip_backward();
        }
    }
    fn next(&mut self) {
        if let Some(c) = &mut self.cur {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if let Some(c) = &mut self.cur {
            c.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.key()).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.value()).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        match &self.cur {
            Some(c) => c.status(),
            None => Ok(()),
        }
    }
}
