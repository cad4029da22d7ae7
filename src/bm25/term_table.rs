//! A segment's term dictionary: an open-addressing table of term ids, placed by the term's
//! 64-bit hash (already well mixed, [`super::hash::term_hash`]) and probed linearly.
//!
//! It holds only the ids (4 bytes a bucket, at most half full): the hash and text it compares
//! are the segment's own arrays. A `std` `HashMap<u64, u32>` spent 16 bytes a bucket plus a
//! control byte at up to 7/8 full (about 36 bytes a term against 8 to 16 here, the largest
//! part of a small index's memory), and its probe, built for any key, cost more than this
//! one's few loads and compares, once per query term and segment. Terms that share a hash (rare)
//! simply sit in later buckets of the same probe sequence.

/// A free bucket.
const EMPTY: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub(crate) struct TermTable {
    /// A power of two long (or empty), at most half full, so every probe sequence meets a free
    /// bucket within a few steps.
    buckets: Vec<u32>,
    len: usize,
}

impl TermTable {
    /// The id among those `is_term` accepts, probing from `hash`'s bucket; `is_term(id)` is
    /// asked only of ids placed along that sequence.
    #[inline]
    pub(crate) fn find(&self, hash: u64, is_term: impl Fn(u32) -> bool) -> Option<u32> {
        let mask = self.buckets.len().wrapping_sub(1);
        let mut at = hash as usize;
        // Ends: the table is at most half full, so a free bucket comes (an empty table has
        // no bucket at all, and `get` ends the search).
        loop {
            let id = *self.buckets.get(at & mask)?;
            if id == EMPTY {
                return None;
            }
            if is_term(id) {
                return Some(id);
            }
            at = at.wrapping_add(1);
        }
    }

    /// Places `id` (whose hash is `hash`, not in the table yet), growing the table if it would
    /// be more than half full; `hash_of(id)` gives every placed id's hash for the regrowth.
    pub(crate) fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        if 2 * (self.len + 1) > self.buckets.len() {
            self.resize(self.len + 1, &hash_of);
        }
        self.place(hash, id);
        self.len += 1;
    }

    /// Room for `more` more ids without regrowing.
    pub(crate) fn reserve(&mut self, more: usize, hash_of: impl Fn(u32) -> u64) {
        if 2 * (self.len + more) > self.buckets.len() {
            self.resize(self.len + more, &hash_of);
        }
    }

    /// Gives back what a generous [`Self::reserve`] left unused: the smallest table that holds
    /// the ids at most half full.
    pub(crate) fn shrink(&mut self, hash_of: impl Fn(u32) -> u64) {
        if Self::buckets_for(self.len) < self.buckets.len() {
            self.resize(self.len, &hash_of);
        }
    }

    /// Bytes allocated (for memory accounting in tests).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<u32>()
    }

    fn buckets_for(len: usize) -> usize {
        if len == 0 {
            0
        } else {
            (2 * len).next_power_of_two().max(8)
        }
    }

    /// Rebuilds the table for `len` ids.
    fn resize(&mut self, len: usize, hash_of: &impl Fn(u32) -> u64) {
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; Self::buckets_for(len)]);
        for id in old.into_iter().filter(|&id| id != EMPTY) {
            self.place(hash_of(id), id);
        }
    }

    fn place(&mut self, hash: u64, id: u32) {
        let mask = self.buckets.len().wrapping_sub(1);
        let mut at = hash as usize & mask;
        for _ in 0..self.buckets.len() {
            match self.buckets.get_mut(at) {
                Some(bucket) if *bucket == EMPTY => {
                    *bucket = id;
                    return;
                }
                Some(_) => at = (at + 1) & mask,
                None => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_even_with_equal_hashes() {
        // Hashes 0..4 for 400 ids: long runs of equal hashes and wrap-around probing.
        let hash_of = |id: u32| u64::from(id % 4) << 60 | u64::from(id % 4);
        let mut table = TermTable::default();
        assert_eq!(table.find(3, |_| true), None);
        for id in 0..400 {
            table.insert(hash_of(id), id, hash_of);
            assert!(2 * table.len <= table.buckets.len());
        }
        for id in 0..400 {
            assert_eq!(table.find(hash_of(id), |x| x == id), Some(id));
        }
        assert_eq!(table.find(1, |x| x == 1000), None);
        let big = table.bytes();
        table.reserve(10_000, hash_of);
        assert!(table.bytes() > big);
        table.shrink(hash_of);
        assert_eq!(table.bytes(), big);
        assert_eq!(table.find(hash_of(7), |x| x == 7), Some(7));
    }
}
