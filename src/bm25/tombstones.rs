//! The slots removed in one version of the index, as a bitset.
//!
//! A bitset because queries test it for every candidate document (one load and a shift), and
//! behind an `Arc` because every version shares it until its first removal: that write copies it
//! (N / 8 bytes: 1.25 KB at 10,000 documents) and later removals in the same version do not.

use std::sync::Arc;

#[derive(Clone, Debug, Default)]
pub(crate) struct Tombstones {
    words: Arc<Vec<u64>>,
    count: usize,
}

impl Tombstones {
    /// Whether `slot` was removed.
    #[inline]
    pub(crate) fn contains(&self, slot: u32) -> bool {
        let slot = slot as usize;
        self.words
            .get(slot / 64)
            .is_some_and(|w| w >> (slot % 64) & 1 == 1)
    }

    /// Marks `slot` removed; returns whether it was live.
    pub(crate) fn insert(&mut self, slot: u32) -> bool {
        let slot = slot as usize;
        let words = Arc::make_mut(&mut self.words);
        if words.len() <= slot / 64 {
            words.resize(slot / 64 + 1, 0);
        }
        let bit = 1u64 << (slot % 64);
        let word = &mut words[slot / 64];
        let fresh = *word & bit == 0;
        *word |= bit;
        self.count += usize::from(fresh);
        fresh
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_contains_and_clone_independence() {
        let mut a = Tombstones::default();
        assert!(!a.contains(0) && !a.contains(1000));
        assert!(a.insert(3));
        assert!(!a.insert(3));
        let b = a.clone();
        assert!(a.insert(700));
        assert!(a.contains(3) && a.contains(700) && !a.contains(699));
        assert_eq!(a.count, 2);
        assert!(!b.contains(700));
        assert_eq!(b.count, 1);
        assert!(Tombstones::default().is_empty());
    }
}
