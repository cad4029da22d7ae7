//! Positions in a list by key, for the candidates of one selection: open addressing over a
//! power-of-two table of plain integers. Unlike a `HashMap<&str, usize>` it borrows nothing, so
//! one table's memory is reused from one selection to the next (a fresh map of the expected size
//! was a large allocation, and as costly as a fifth of the candidates' work).

use crate::bm25::hash::term_hash;

/// An empty slot.
const EMPTY: u32 = 0;

/// Positions by key hash; the keys themselves live in the caller's list.
#[derive(Default)]
pub(super) struct KeyTable {
    /// `(hash, position + 1)`, `EMPTY` position for a free slot; the length is zero or a power
    /// of two.
    slots: Vec<(u32, u32)>,
    len: usize,
}

/// Where a key is, or where it would go.
pub(super) enum Probe {
    Found(usize),
    /// Not there; pass this to [`KeyTable::insert`] with no other insert in between.
    Vacant {
        slot: usize,
        hash: u32,
    },
}

impl KeyTable {
    /// Empties the table, keeping its memory, with room for `expected` keys.
    pub fn reset(&mut self, expected: usize) {
        let want = (expected.max(4) * 2).next_power_of_two();
        // The probe sequence needs a power-of-two length; a table grown by the last selection
        // keeps its size.
        let size = want.max(self.slots.len());
        if self.len == 0 && self.slots.len() == size {
            // Every slot is free already: a selection whose candidates all came from one
            // search never probes. Clearing anyway wrote 2 KB a turn (a tenth of a MetaTool
            // selection's cache-missing writes, under callgrind).
            return;
        }
        self.slots.clear();
        self.slots.resize(size, (0, EMPTY));
        self.len = 0;
    }

    /// Finds `key`; `key_at(p)` is the key at position `p` of the caller's list.
    pub fn probe<'k>(&self, key: &str, key_at: impl Fn(usize) -> Option<&'k str>) -> Probe {
        // The low 32 bits of a well-mixed hash.
        let hash = term_hash(key) as u32;
        let mask = self.slots.len().wrapping_sub(1);
        let mut slot = hash as usize & mask;
        while let Some(&(h, at)) = self.slots.get(slot) {
            if at == EMPTY {
                break;
            }
            let position = at as usize - 1;
            if h == hash && key_at(position) == Some(key) {
                return Probe::Found(position);
            }
            slot = (slot + 1) & mask;
        }
        Probe::Vacant { slot, hash }
    }

    /// Records `position` for the key [`probe`](Self::probe) did not find.
    pub fn insert(&mut self, vacant: Probe, position: usize) {
        let Probe::Vacant { slot, hash } = vacant else {
            return;
        };
        let Ok(at) = u32::try_from(position + 1) else {
            return;
        };
        if (self.len + 1) * 2 > self.slots.len() {
            // The probed slot moves with the growth: look for it again.
            self.grow();
            self.place(hash, at);
        } else if let Some(s) = self.slots.get_mut(slot) {
            *s = (hash, at);
        }
        self.len += 1;
    }

    /// Puts `(hash, at)` in the first free slot of its sequence.
    fn place(&mut self, hash: u32, at: u32) {
        let mask = self.slots.len().wrapping_sub(1);
        let mut slot = hash as usize & mask;
        while self.slots.get(slot).is_some_and(|s| s.1 != EMPTY) {
            slot = (slot + 1) & mask;
        }
        if let Some(s) = self.slots.get_mut(slot) {
            *s = (hash, at);
        }
    }

    /// Doubles the table (at most half full keeps probes short).
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = vec![(0, EMPTY); (old.len() * 2).max(8)];
        for (hash, at) in old.into_iter().filter(|s| s.1 != EMPTY) {
            self.place(hash, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{KeyTable, Probe};

    #[test]
    fn finds_every_key_it_was_given_across_growth_and_reuse() {
        let mut table = KeyTable::default();
        for round in 0..3 {
            table.reset(4);
            let keys: Vec<String> = (0..100 + round * 50).map(|i| format!("k{i}")).collect();
            for (i, k) in keys.iter().enumerate() {
                let probe = table.probe(k, |p| keys.get(p).map(String::as_str));
                assert!(matches!(probe, Probe::Vacant { .. }));
                table.insert(probe, i);
            }
            for (i, k) in keys.iter().enumerate() {
                let probe = table.probe(k, |p| keys.get(p).map(String::as_str));
                assert!(matches!(probe, Probe::Found(p) if p == i));
            }
            let probe = table.probe("absent", |p| keys.get(p).map(String::as_str));
            assert!(matches!(probe, Probe::Vacant { .. }));
        }
    }

    #[test]
    fn a_reset_after_an_unused_turn_leaves_it_empty() {
        let keys = ["a", "b", "c"];
        let key_at = |p: usize| keys.get(p).copied();
        let mut table = KeyTable::default();
        table.reset(4);
        for (i, k) in keys.iter().enumerate() {
            let probe = table.probe(k, key_at);
            table.insert(probe, i);
        }
        // Used: cleared. Then unused: the reset that skips clearing finds it empty already.
        table.reset(4);
        table.reset(4);
        for k in keys {
            assert!(
                matches!(table.probe(k, key_at), Probe::Vacant { .. }),
                "{k}"
            );
        }
    }
}
