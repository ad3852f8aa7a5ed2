//! An in-memory file for the table tests.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::Result;
use crate::fs::WritableFile;

/// An in-memory writable file whose bytes stay readable through the clones (the block-based and
/// cuckoo tables' tests).
#[derive(Clone, Default)]
pub(crate) struct VecFile(pub(crate) Arc<Mutex<Vec<u8>>>);

impl WritableFile for VecFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.lock().len() as u64
    }
}
