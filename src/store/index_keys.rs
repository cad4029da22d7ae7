//! The primary keys that carry one value of a secondary index.

use std::sync::Arc;

use imbl::OrdSet;

/// The primary keys carrying one index value, in key order.
///
/// Most values are carried by one record (a tool's name, a skill's tool, a hook's matcher).
/// Those hold the key inline: a one-element persistent set costs a 288-byte node and an
/// allocation each time a write copies it, which was a fifth of an index's memory and one
/// more allocation per registered tool.
#[derive(Clone, Debug)]
pub(crate) enum IndexKeys {
    One(Arc<str>),
    Many(OrdSet<Arc<str>>),
}

impl IndexKeys {
    /// The keys, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<str>> {
        let (one, many) = match self {
            IndexKeys::One(key) => (Some(key), None),
            IndexKeys::Many(keys) => (None, Some(keys.iter())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// How many keys carry the value (at least one: an empty entry is removed).
    pub fn len(&self) -> usize {
        match self {
            IndexKeys::One(_) => 1,
            IndexKeys::Many(keys) => keys.len(),
        }
    }

    /// Adds `key` (no change when present).
    pub fn insert(&mut self, key: Arc<str>) {
        match self {
            IndexKeys::One(only) if *only == key => {}
            IndexKeys::One(only) => {
                let mut keys = OrdSet::new();
                keys.insert(only.clone());
                keys.insert(key);
                *self = IndexKeys::Many(keys);
            }
            IndexKeys::Many(keys) => {
                keys.insert(key);
            }
        }
    }

    /// Removes `key`; returns whether no key is left (the caller then drops the entry).
    pub fn remove(&mut self, key: &str) -> bool {
        match self {
            IndexKeys::One(only) => &**only == key,
            IndexKeys::Many(keys) => {
                keys.remove(key);
                if keys.len() == 1 {
                    if let Some(last) = keys.iter().next().cloned() {
                        *self = IndexKeys::One(last);
                    }
                }
                matches!(self, IndexKeys::Many(set) if set.is_empty())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &IndexKeys) -> Vec<&str> {
        k.iter().map(|k| &**k).collect()
    }

    #[test]
    fn grows_to_a_set_and_shrinks_back_to_one_key() {
        let mut k = IndexKeys::One(Arc::from("b"));
        k.insert(Arc::from("b"));
        assert!(matches!(k, IndexKeys::One(_)));
        k.insert(Arc::from("a"));
        k.insert(Arc::from("c"));
        assert_eq!(keys(&k), ["a", "b", "c"]);
        assert_eq!(k.len(), 3);
        assert!(!k.remove("b"));
        assert!(!k.remove("zzz"));
        assert!(!k.remove("a"));
        assert!(matches!(k, IndexKeys::One(_)));
        assert_eq!(keys(&k), ["c"]);
        assert!(!k.remove("a"));
        assert!(k.remove("c"));
    }
}
