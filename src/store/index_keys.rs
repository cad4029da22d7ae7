//! The primary keys that carry one value of a secondary index: in a table ([`IndexKeys`]),
//! and in a bulk insert's batch being checked ([`BatchKeys`], [`BatchValues`]).

use std::collections::HashMap;
use std::sync::Arc;

use imbl::OrdSet;

use crate::bm25::hash::StrState;

/// The primary keys carrying one index value, in key order.
///
/// Most values are carried by one record (a tool's name, a skill's tool, a hook's matcher).
/// Those hold the key inline: a one-element persistent set costs a 288-byte node and an
/// allocation each time a write copies it, which was a fifth of an index's memory and one
/// more allocation per registered tool. Values carried by a few records (a skill's ten tools,
/// a tag of a small store) hold a sorted slice: 16 bytes a key where a set's node costs 288
/// bytes however few keys it holds. Past [`FEW_MAX`] keys they become a persistent set, whose
/// writes copy one node rather than every key.
#[derive(Clone, Debug)]
pub(crate) enum IndexKeys {
    One(Arc<str>),
    /// Two to [`FEW_MAX`] keys, sorted, distinct.
    Few(Arc<[Arc<str>]>),
    Many(OrdSet<Arc<str>>),
}

/// The most keys a sorted slice holds: one set node's worth, so that a write copies no more
/// keys than a set's would.
const FEW_MAX: usize = 16;

/// A set this small or smaller goes back to a slice (half of [`FEW_MAX`], so that a value
/// whose count hovers around the limit does not convert back and forth).
const FEW_AGAIN: usize = FEW_MAX / 2;

impl IndexKeys {
    /// The keys `keys` (sorted, distinct, at least one), as inserting them one by one into
    /// an empty entry would hold them.
    pub fn from_sorted(mut keys: Vec<Arc<str>>) -> Self {
        match keys.len() {
            0 | 1 => match keys.pop() {
                Some(key) => IndexKeys::One(key),
                None => IndexKeys::Few(Arc::new([])),
            },
            n if n <= FEW_MAX => IndexKeys::Few(keys.into()),
            _ => IndexKeys::Many(keys.into_iter().collect()),
        }
    }

    /// The keys, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<str>> {
        let (one, few, many) = match self {
            IndexKeys::One(key) => (Some(key), None, None),
            IndexKeys::Few(keys) => (None, Some(keys.iter()), None),
            IndexKeys::Many(keys) => (None, None, Some(keys.iter())),
        };
        one.into_iter()
            .chain(few.into_iter().flatten())
            .chain(many.into_iter().flatten())
    }

    /// How many keys carry the value (at least one: an empty entry is removed).
    pub fn len(&self) -> usize {
        match self {
            IndexKeys::One(_) => 1,
            IndexKeys::Few(keys) => keys.len(),
            IndexKeys::Many(keys) => keys.len(),
        }
    }

    /// Adds `key` (no change when present).
    pub fn insert(&mut self, key: Arc<str>) {
        match self {
            IndexKeys::One(only) if *only == key => {}
            IndexKeys::One(only) => {
                let pair = if key < *only {
                    [key, only.clone()]
                } else {
                    [only.clone(), key]
                };
                *self = IndexKeys::Few(Arc::new(pair));
            }
            IndexKeys::Few(keys) => {
                let Err(at) = keys.binary_search(&key) else {
                    return;
                };
                if keys.len() < FEW_MAX {
                    let grown: Arc<[Arc<str>]> = keys[..at]
                        .iter()
                        .cloned()
                        .chain(std::iter::once(key))
                        .chain(keys[at..].iter().cloned())
                        .collect();
                    *keys = grown;
                } else {
                    let mut set: OrdSet<Arc<str>> = keys.iter().cloned().collect();
                    set.insert(key);
                    *self = IndexKeys::Many(set);
                }
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
            IndexKeys::Few(keys) => {
                let Ok(at) = keys.binary_search_by(|k| (**k).cmp(key)) else {
                    return false;
                };
                *self = match &keys[..] {
                    [a, b] => IndexKeys::One(if at == 0 { b.clone() } else { a.clone() }),
                    rest => IndexKeys::Few(
                        rest.iter()
                            .enumerate()
                            .filter(|(i, _)| *i != at)
                            .map(|(_, k)| k.clone())
                            .collect(),
                    ),
                };
                false
            }
            IndexKeys::Many(keys) => {
                keys.remove(key);
                if keys.len() <= FEW_AGAIN {
                    let rest: Vec<Arc<str>> = keys.iter().cloned().collect();
                    *self = match <[Arc<str>; 1]>::try_from(rest) {
                        Ok([last]) => IndexKeys::One(last),
                        Err(rest) if rest.is_empty() => return true,
                        Err(rest) => IndexKeys::Few(rest.into()),
                    };
                }
                false
            }
        }
    }
}

/// One index's values in a batch, each with the keys that carry it.
pub(crate) type BatchValues = HashMap<Arc<str>, BatchKeys, StrState>;

/// The batch's keys carrying one index value, in batch order: most values have one, held
/// without a list of its own (and a unique index's values never have more).
pub(crate) enum BatchKeys {
    One(Arc<str>),
    Many(Vec<Arc<str>>),
}

impl BatchKeys {
    /// Adds a key met later in the batch.
    pub fn push(&mut self, key: &Arc<str>) {
        match self {
            BatchKeys::One(first) => {
                *self = BatchKeys::Many(vec![Arc::clone(first), Arc::clone(key)])
            }
            BatchKeys::Many(keys) => keys.push(Arc::clone(key)),
        }
    }

    /// The first key that carried the value.
    pub fn first(&self) -> Option<&Arc<str>> {
        match self {
            BatchKeys::One(key) => Some(key),
            BatchKeys::Many(keys) => keys.first(),
        }
    }

    /// The keys, in batch order.
    pub fn into_vec(self) -> Vec<Arc<str>> {
        match self {
            BatchKeys::One(key) => vec![key],
            BatchKeys::Many(keys) => keys,
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

    /// Every tier against a plain ordered set, through growth past a set node and back.
    #[test]
    fn agrees_with_an_ordered_set_through_every_tier() {
        let mut model = std::collections::BTreeSet::new();
        let mut k = IndexKeys::One(Arc::from("k00"));
        model.insert("k00".to_string());
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut tiers = [false; 3];
        for step in 0..4000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Grow for a while, then shrink, so that every tier is visited both ways.
            let key = format!("k{:02}", seed % 40);
            let insert = (step / 500) % 2 == 0 || seed.is_multiple_of(7);
            if insert {
                k.insert(Arc::from(key.as_str()));
                model.insert(key);
            } else if model.len() > 1 || !model.contains(&key) {
                assert!(!k.remove(&key));
                model.remove(&key);
            } else {
                assert!(k.remove(&key));
                k = IndexKeys::One(Arc::from("k00"));
                model = ["k00".to_string()].into();
            }
            assert_eq!(
                keys(&k),
                model.iter().map(String::as_str).collect::<Vec<_>>()
            );
            assert_eq!(k.len(), model.len());
            let tier = match &k {
                IndexKeys::One(_) => 0,
                IndexKeys::Few(keys) => {
                    assert!((2..=FEW_MAX).contains(&keys.len()));
                    1
                }
                IndexKeys::Many(keys) => {
                    assert!(keys.len() > FEW_AGAIN);
                    2
                }
            };
            tiers[tier] = true;
        }
        assert_eq!(tiers, [true; 3]);
    }
}
