//! The persistent shape of a database: file names, MANIFEST records (version edits), file
//! metadata, versions and the version set that writes the MANIFEST. Knows no running DB.

pub(crate) mod blob_files;
pub(crate) mod filename;
pub(crate) mod manifest_tail;
pub(crate) mod version;
pub(crate) mod version_edit;
