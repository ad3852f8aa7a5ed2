//! A compaction filter or a filter factory as `Options` hold them: one interface that makes the
//! filter each compaction (or subcompaction) uses.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::compaction_filter::{CompactionFilter, Decision};
use crate::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};

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
