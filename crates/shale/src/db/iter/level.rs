//! The level iterator: the files of one sorted level, each table opened only when reached.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::db::version::FileMeta;
use crate::db::ColumnFamilyData;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
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
}

impl LevelIterator {
    pub(crate) fn new(db: Arc<ColumnFamilyData>, files: Vec<Arc<FileMeta>>, verify: bool, fill: bool) -> Self {
        LevelIterator {
            db,
            files,
            idx: 0,
            cur: None,
            verify,
            fill,
            err: None,
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
