//! What a block-based table's full filter holds with a prefix extractor, and when a reader may
//! ask it (`docs/prefix.md`).
//!
//! Writing (RocksDB's `FullFilterBlockBuilder::Add`): a key in the extractor's domain adds its
//! prefix, and with `whole_key_filtering` also the whole key (both through the deduplicating
//! `add_key_and_alt`); a key outside the domain adds the whole key only with
//! `whole_key_filtering`. The table records the extractor's name and both switches in its
//! properties.
//!
//! Reading: a point lookup probes the whole key when the file holds whole keys and the reader
//! wants them; otherwise the prefix when the file's extractor is the reader's and the key is in
//! its domain; otherwise nothing (the filter is not asked). A prefix seek probes the prefix only
//! when the file was built with the reader's extractor.

use std::sync::Arc;

use crate::slice_transform::PrefixExtractor;
use crate::table::block_based::filter::FilterBuilder;

/// Property: the prefix extractor's name (`nullptr` without one).
pub(crate) const PREFIX_EXTRACTOR_PROP: &str = "rocksdb.prefix.extractor.name";
/// Property: "1" if the filter holds whole keys.
pub(crate) const WHOLE_KEY_PROP: &str = "rocksdb.block.based.table.whole.key.filtering";
/// Property: "1" if the filter holds prefixes.
pub(crate) const PREFIX_FILTERING_PROP: &str = "rocksdb.block.based.table.prefix.filtering";

/// Adds the filter entries of one user key (the writer's side).
#[derive(Clone, Debug)]
pub(crate) struct FilterContents {
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    pub whole_key_filtering: bool,
}

impl FilterContents {
    #[inline]
    pub(crate) fn add(&self, f: &mut FilterBuilder, user_key: &[u8]) {
        match &self.prefix_extractor {
            Some(p) if p.in_domain(user_key) => {
                let prefix = p.transform(user_key);
                if self.whole_key_filtering {
                    f.add_key_and_alt(user_key, prefix);
                } else {
                    f.add_key(prefix);
                }
            }
            _ if self.whole_key_filtering => f.add_key(user_key),
            _ => {}
        }
    }

    /// The `rocksdb.prefix.extractor.name` property value.
    pub(crate) fn extractor_name(&self) -> &str {
        self.prefix_extractor.as_deref().map_or("nullptr", |p| p.name())
    }
}

/// How a reader may use one file's filter (decided at open from its properties and the
/// reader's options).
#[derive(Clone, Default)]
pub(crate) struct FilterUse {
    /// The filter holds whole keys and the reader filters by whole key.
    whole_key: bool,
    /// The file's prefixes were made by this extractor, the reader's own.
    prefix: Option<Arc<dyn PrefixExtractor>>,
}

impl FilterUse {
    /// From the file's raw properties: a property that is absent counts as on (RocksDB's
    /// `IsFeatureSupported`), the extractor must have the reader's name.
    pub(crate) fn new(
        props: &std::collections::BTreeMap<String, Vec<u8>>,
        reader_extractor: Option<&Arc<dyn PrefixExtractor>>,
        reader_whole_key: bool,
    ) -> FilterUse {
        let on = |name: &str| props.get(name).is_none_or(|v| v.as_slice() != b"0");
        let file_name = props.get(PREFIX_EXTRACTOR_PROP).map(|v| v.as_slice());
        let prefix = match reader_extractor {
            Some(p) if on(PREFIX_FILTERING_PROP) && file_name == Some(p.name().as_bytes()) => Some(p.clone()),
            _ => None,
        };
        FilterUse {
            whole_key: reader_whole_key && on(WHOLE_KEY_PROP),
            prefix,
        }
    }

    /// Use the filter by whole key only (a file read without options, e.g. by tools).
    pub(crate) fn whole_key_only() -> FilterUse {
        FilterUse {
            whole_key: true,
            prefix: None,
        }
    }

    /// What a point lookup of `user_key` probes; None: the filter cannot rule the key out.
    #[inline]
    pub(crate) fn get_probe<'a>(&self, user_key: &'a [u8]) -> Option<&'a [u8]> {
        if self.whole_key {
            return Some(user_key);
        }
        match &self.prefix {
            Some(p) if p.in_domain(user_key) => Some(p.transform(user_key)),
            _ => None,
        }
    }

    /// Whether a prefix seek may probe this file's filter for prefixes made by the extractor
    /// named `extractor`: the file holds prefixes of that very extractor (the extractor may have
    /// changed since the file was opened, `set_options`).
    #[inline]
    pub(crate) fn has_prefixes_of(&self, extractor: &str) -> bool {
        self.prefix.as_ref().is_some_and(|p| p.name() == extractor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slice_transform::{new_capped_prefix_transform, new_fixed_prefix_transform};
    use crate::table::block_based::filter::{FilterKind, FilterReader};
    use std::collections::BTreeMap;

    fn build(c: &FilterContents, keys: &[&[u8]]) -> (usize, FilterReader) {
        let mut f = FilterBuilder::new(FilterKind::FastLocalBloom, 10.0).unwrap();
        for k in keys {
            c.add(&mut f, k);
        }
        let n = f.num_entries();
        (n, FilterReader::new(f.finish().unwrap_or_default()))
    }

    #[test]
    fn contents_follow_the_two_switches() {
        let keys: &[&[u8]] = &[b"ab", b"abc1", b"abc2", b"abd1", b"x"];
        let p = new_fixed_prefix_transform(3);
        // both: prefixes abc, abd, whole keys; "ab" and "x" (out of domain) as whole keys
        let both = FilterContents {
            prefix_extractor: Some(p.clone()),
            whole_key_filtering: true,
        };
        let (n, r) = build(&both, keys);
        assert_eq!(n, 7);
        for k in keys.iter().copied().chain([&b"abc"[..], b"abd"]) {
            assert!(r.key_may_match(k));
        }
        // prefixes only: abc (deduplicated), abd; out-of-domain keys add nothing
        let only = FilterContents {
            prefix_extractor: Some(p),
            whole_key_filtering: false,
        };
        let (n, r) = build(&only, keys);
        assert_eq!(n, 2);
        assert!(r.key_may_match(b"abc") && r.key_may_match(b"abd"));
        // whole keys only
        let whole = FilterContents {
            prefix_extractor: None,
            whole_key_filtering: true,
        };
        assert_eq!(build(&whole, keys).0, 5);
        // a key equal to its own prefix (capped) is added once
        let capped = FilterContents {
            prefix_extractor: Some(new_capped_prefix_transform(4)),
            whole_key_filtering: true,
        };
        assert_eq!(build(&capped, &[b"ab", b"abcd", b"abcde"]).0, 3);
    }

    #[test]
    fn use_follows_the_file_properties() {
        let p = new_fixed_prefix_transform(3);
        let mut props = BTreeMap::new();
        props.insert(PREFIX_EXTRACTOR_PROP.to_string(), b"rocksdb.FixedPrefix.3".to_vec());
        props.insert(WHOLE_KEY_PROP.to_string(), b"0".to_vec());
        let u = FilterUse::new(&props, Some(&p), true);
        assert_eq!(u.get_probe(b"abcdef"), Some(&b"abc"[..]));
        assert_eq!(u.get_probe(b"ab"), None);
        assert!(u.has_prefixes_of("rocksdb.FixedPrefix.3"));
        // the reader's extractor changed since (set_options): its prefixes are not asked
        assert!(!u.has_prefixes_of("rocksdb.FixedPrefix.4"));
        // another extractor: neither whole keys (not in the file) nor prefixes
        let q = new_fixed_prefix_transform(4);
        let u = FilterUse::new(&props, Some(&q), true);
        assert_eq!(u.get_probe(b"abcdef"), None);
        assert!(!u.has_prefixes_of("rocksdb.FixedPrefix.4") && !u.has_prefixes_of("rocksdb.FixedPrefix.3"));
        // old files without the properties: whole keys
        let u = FilterUse::new(&BTreeMap::new(), Some(&p), true);
        assert_eq!(u.get_probe(b"abcdef"), Some(&b"abcdef"[..]));
        assert!(!u.has_prefixes_of("rocksdb.FixedPrefix.3"));
        // the reader turned whole-key filtering off
        props.insert(WHOLE_KEY_PROP.to_string(), b"1".to_vec());
        let u = FilterUse::new(&props, Some(&p), false);
        assert_eq!(u.get_probe(b"abcdef"), Some(&b"abc"[..]));
    }
}
