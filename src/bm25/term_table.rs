//! A segment's term dictionary: the lower half of a term's 64-bit hash (already well mixed,
//! [`super::hash::term_hash`]) → its id, in a `std` hash map of 4-byte keys and values.
//!
//! Keyed by the full hash it spent 16 bytes a bucket plus a control byte (about 36 bytes a term
//! at its load factors, the largest part of a small index's memory); 4-byte keys halve that.
//! Terms whose hashes share the lower half (now and then among tens of thousands of terms) are
//! chained: `next[id]` is the previous id with that key. A hand-written open-addressing table of
//! ids alone was smaller still, but its probe loop's branches mispredicted four times as often
//! as the map's grouped probe, which cost queries more cycles than it saved instructions.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// End of a chain.
const END: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub(crate) struct TermTable {
    map: HashMap<u32, u32, BuildHasherDefault<SpreadHasher>>,
    /// Empty until the first shared key; then one entry per id.
    next: Vec<u32>,
}

impl TermTable {
    /// The id among those `is_term` accepts whose hash is `hash`; `is_term(id)` is asked only
    /// of ids whose hash has the same lower half.
    #[inline]
    pub(crate) fn find(&self, hash: u64, is_term: impl Fn(u32) -> bool) -> Option<u32> {
        let mut id = *self.map.get(&key(hash))?;
        while !is_term(id) {
            id = *self.next.get(id as usize)?;
            if id == END {
                return None;
            }
        }
        Some(id)
    }

    /// Adds `id`, the next id (one more than the last added), whose hash is `hash`.
    pub(crate) fn insert(&mut self, hash: u64, id: u32) {
        if let Some(previous) = self.map.insert(key(hash), id) {
            self.next.resize(id as usize + 1, END);
            if let Some(link) = self.next.get_mut(id as usize) {
                *link = previous;
            }
        } else if !self.next.is_empty() {
            self.next.resize(id as usize + 1, END);
        }
    }

    /// Room for `more` more ids without regrowing.
    pub(crate) fn reserve(&mut self, more: usize) {
        self.map.reserve(more);
    }

    /// Gives back what a generous [`Self::reserve`] left unused.
    pub(crate) fn shrink(&mut self) {
        self.map.shrink_to_fit();
        self.next.shrink_to_fit();
    }

    /// Bytes allocated, roughly (for memory accounting in tests).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        // Buckets of 8 bytes and a control byte each, at most 7/8 full.
        self.map.capacity() * 9 * 8 / 7 + self.next.capacity() * 4
    }
}

/// The map's key for a term hash.
#[inline]
fn key(hash: u64) -> u32 {
    hash as u32
}

/// Hashes a key that already is well mixed by copying it to both halves of the output: the
/// map takes the bucket from the low bits and a 7-bit tag from the high ones, which an
/// identity hash of a 4-byte key would leave zero.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SpreadHasher(u64);

impl Hasher for SpreadHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u32` is used; anything else is folded in rather than rejected.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n) << 32 | u64::from(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_even_with_shared_keys() {
        // Four keys for 400 ids: long chains.
        let hash_of = |id: u32| u64::from(id % 7) << 40 | u64::from(id % 4);
        let mut table = TermTable::default();
        assert_eq!(table.find(3, |_| true), None);
        for id in 0..400 {
            table.insert(hash_of(id), id);
        }
        for id in 0..400 {
            assert_eq!(table.find(hash_of(id), |x| x == id), Some(id));
        }
        assert_eq!(table.find(1, |x| x == 1000), None);
        assert_eq!(table.find(9, |_| true), None);
        table.reserve(1000);
        table.shrink();
        assert!(table.bytes() > 0);
        assert_eq!(table.find(hash_of(7), |x| x == 7), Some(7));
    }
}
