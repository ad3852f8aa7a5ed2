//! Compaction filters: user code that keeps, removes or rewrites values as compactions rewrite
//! them (the `rocksdb` crate's `compaction_filter` module). A filter sees only the newest
//! version of a key, only when it is a Put newer than every live snapshot (so no snapshot ever
//! sees a filtered value change), and never during flushes — RocksDB's rules.

use std::sync::Arc;

use parking_lot::Mutex;

/// What a compaction filter decides for one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Keep the value as it is.
    Keep,
    /// Remove the key: the entry becomes a deletion (dropped at the bottom of the tree).
    Remove,
    /// Replace the value.
    Change(Vec<u8>),
}

/// The `rocksdb` crate's other name for [`Decision`].
pub type CompactionDecision = Decision;

/// A compaction filter object. `filter(level, key, value)` is called with the level of the
/// compaction's inputs.
pub trait CompactionFilter: Send {
    /// Decides what happens to `key` → `value` in a compaction whose inputs are at `level`: keep,
    /// remove or change it. Only a key's newest entry is shown, and only if it is a Put newer than
    /// every live snapshot (deletions and merge operands are not shown). A panic fails the job.
    fn filter(&mut self, level: u32, key: &[u8], value: &[u8]) -> Decision;
    /// Recorded in the OPTIONS file (`compaction_filter=`).
    fn name(&self) -> &str;
}

/// What a factory is told about the compaction a filter is created for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompactionFilterContext {
    /// The compaction reads every table file of the family.
    pub is_full_compaction: bool,
    /// The compaction was asked for (`compact_range`), not picked in the background.
    pub is_manual_compaction: bool,
}

/// Creates one filter per compaction (per subcompaction: each filter is used by one thread).
pub trait CompactionFilterFactory: Send + 'static {
    /// The filter this factory creates.
    type Filter: CompactionFilter + 'static;
    /// Creates the filter for one compaction (or subcompaction) described by `context`.
    fn create(&mut self, context: CompactionFilterContext) -> Self::Filter;
    /// Recorded in the OPTIONS file (`compaction_filter_factory=`).
    fn name(&self) -> &str;
}

/// A filter or a factory as the options hold them.
pub(crate) trait FilterSource: Send + Sync {
    fn name(&self) -> String;
    fn is_factory(&self) -> bool;
    fn create(&self, ctx: CompactionFilterContext) -> Box<dyn CompactionFilter>;
}

/// A single filter shared by every compaction (calls are serialized).
pub(crate) struct SharedFilter<F> {
    pub(crate) name: String,
    pub(crate) f: Arc<Mutex<F>>,
}

struct SharedHandle<F> {
    name: String,
    f: Arc<Mutex<F>>,
}

impl<F> CompactionFilter for SharedHandle<F>
where
    F: FnMut(u32, &[u8], &[u8]) -> Decision + Send + 'static,
{
    fn filter(&mut self, level: u32, key: &[u8], value: &[u8]) -> Decision {
        (self.f.lock())(level, key, value)
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl<F> FilterSource for SharedFilter<F>
where
    F: FnMut(u32, &[u8], &[u8]) -> Decision + Send + 'static,
{
    fn name(&self) -> String {
        self.name.clone()
    }
    fn is_factory(&self) -> bool {
        false
    }
    fn create(&self, _ctx: CompactionFilterContext) -> Box<dyn CompactionFilter> {
        Box::new(SharedHandle {
            name: self.name.clone(),
            f: self.f.clone(),
        })
    }
}

/// A user factory (calls to `create` are serialized).
pub(crate) struct FactorySource<T>(pub(crate) Mutex<T>);

impl<T: CompactionFilterFactory> FilterSource for FactorySource<T> {
    fn name(&self) -> String {
        self.0.lock().name().to_string()
    }
    fn is_factory(&self) -> bool {
        true
    }
    fn create(&self, ctx: CompactionFilterContext) -> Box<dyn CompactionFilter> {
        Box::new(self.0.lock().create(ctx))
    }
}
