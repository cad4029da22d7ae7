//! A segment's term dictionary: a hash table holding only term ids, two bytes each while a
//! segment has at most 65,536 terms (four past that), found by the term's 64-bit hash
//! ([`super::hash::term_hash`], already well mixed) and confirmed against the segment's text.
//!
//! `hashbrown`'s `HashTable` (the table under `std`'s `HashMap`) lets the ids be stored
//! without their hashes: a probe filters buckets by a 7-bit tag taken from the hash, so the
//! caller's text comparison runs on the right id and, one time in 128 per bucket probed, a
//! wrong one. A bucket costs 3 bytes (id and control byte) where a `HashMap<u32, u32>` of the
//! hash's lower half → id cost 9, which was the largest part of a small index's memory (a
//! quarter of a 100-document store's bytes beyond its text). Growing or shrinking the table
//! rehashes its ids, so those calls take a function giving an id's hash (the segment hashes
//! the id's text again; they run at building time, never on a query).
//!
//! The same grouped probe as the map: a hand-written open-addressing table of ids was tried
//! before and rejected, because its probe loop's branches mispredicted four times as often as
//! the grouped probe, which cost queries more cycles than it saved instructions.

use hashbrown::HashTable;

/// Ids of terms, in the narrowest width that holds them all.
#[derive(Clone, Debug)]
pub(crate) enum TermTable {
    /// Every id below 65,536.
    Narrow(HashTable<u16>),
    Wide(HashTable<u32>),
}

impl Default for TermTable {
    fn default() -> Self {
        Self::Narrow(HashTable::new())
    }
}

impl TermTable {
    /// The id among those `is_term` accepts whose hash is `hash`; `is_term(id)` is asked only
    /// of ids whose hash has the same 7-bit tag.
    #[inline]
    pub(crate) fn find(&self, hash: u64, is_term: impl Fn(u32) -> bool) -> Option<u32> {
        match self {
            Self::Narrow(ids) => ids
                .find(hash, |&id| is_term(u32::from(id)))
                .map(|&id| u32::from(id)),
            Self::Wide(ids) => ids.find(hash, |&id| is_term(id)).copied(),
        }
    }

    /// Adds `id`, which is not in the table yet, whose hash is `hash`; `hash_of` gives the
    /// hash of any id already in the table (for rehashing when the table grows).
    pub(crate) fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        match self {
            Self::Narrow(ids) => match u16::try_from(id) {
                Ok(narrow) => {
                    ids.insert_unique(hash, narrow, |&id| hash_of(u32::from(id)));
                }
                Err(_) => {
                    self.widen(ids_len(self) + 1, &hash_of);
                    self.insert(hash, id, hash_of);
                }
            },
            Self::Wide(ids) => {
                ids.insert_unique(hash, id, |&id| hash_of(id));
            }
        }
    }

    /// Room for `more` more ids without regrowing (ids `0..total` where `total` is the
    /// current count plus `more`: past 65,536 the table widens now rather than mid-build).
    pub(crate) fn reserve(&mut self, more: usize, hash_of: impl Fn(u32) -> u64) {
        let total = ids_len(self) + more;
        match self {
            Self::Narrow(_) if total > NARROW_IDS => self.widen(total, &hash_of),
            Self::Narrow(ids) => ids.reserve(more, |&id| hash_of(u32::from(id))),
            Self::Wide(ids) => ids.reserve(more, |&id| hash_of(id)),
        }
    }

    /// Gives back what a generous [`Self::reserve`] left unused.
    pub(crate) fn shrink(&mut self, hash_of: impl Fn(u32) -> u64) {
        match self {
            Self::Narrow(ids) => ids.shrink_to_fit(|&id| hash_of(u32::from(id))),
            Self::Wide(ids) => ids.shrink_to_fit(|&id| hash_of(id)),
        }
    }

    /// This table with four-byte ids, with room for `capacity` of them.
    fn widen(&mut self, capacity: usize, hash_of: &impl Fn(u32) -> u64) {
        if let Self::Narrow(narrow) = self {
            let mut wide = HashTable::with_capacity(capacity.max(narrow.len()));
            for &id in narrow.iter() {
                let id = u32::from(id);
                wide.insert_unique(hash_of(id), id, |&id| hash_of(id));
            }
            *self = Self::Wide(wide);
        }
    }

    /// Bytes allocated (for memory accounting in tests).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Self::Narrow(ids) => ids.allocation_size(),
            Self::Wide(ids) => ids.allocation_size(),
        }
    }
}

/// The most ids a narrow table holds: `0..=u16::MAX`.
const NARROW_IDS: usize = u16::MAX as usize + 1;

fn ids_len(table: &TermTable) -> usize {
    match table {
        TermTable::Narrow(ids) => ids.len(),
        TermTable::Wide(ids) => ids.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_even_with_shared_hashes() {
        // Four hashes for 400 ids: every probe meets many candidates.
        let hash_of = |id: u32| u64::from(id % 7) << 40 | u64::from(id % 4);
        let mut table = TermTable::default();
        assert_eq!(table.find(3, |_| true), None);
        for id in 0..400 {
            table.insert(hash_of(id), id, hash_of);
        }
        for id in 0..400 {
            assert_eq!(table.find(hash_of(id), |x| x == id), Some(id));
        }
        // `is_term` decides: ids whose hash only shares the tag are offered to it too.
        assert_eq!(table.find(1, |x| x == 1000), None);
        table.reserve(1000, hash_of);
        let reserved = table.bytes();
        table.shrink(hash_of);
        assert!(0 < table.bytes() && table.bytes() < reserved);
        assert_eq!(table.find(hash_of(7), |x| x == 7), Some(7));
        assert!(matches!(table, TermTable::Narrow(_)));
    }

    #[test]
    fn widens_past_two_byte_ids() {
        let hash_of = |id: u32| u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut table = TermTable::default();
        let n = NARROW_IDS as u32 + 10;
        for id in 0..n {
            table.insert(hash_of(id), id, hash_of);
        }
        assert!(matches!(table, TermTable::Wide(_)));
        for id in [0, 1, 65_535, 65_536, n - 1] {
            assert_eq!(table.find(hash_of(id), |x| x == id), Some(id));
        }
        let mut reserved = TermTable::default();
        reserved.insert(hash_of(0), 0, hash_of);
        reserved.reserve(NARROW_IDS, hash_of);
        assert!(matches!(reserved, TermTable::Wide(_)));
        assert_eq!(reserved.find(hash_of(0), |x| x == 0), Some(0));
    }
}
