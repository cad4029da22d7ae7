//! Where a segment's terms are: each term's end in the segment's text and the start of its
//! postings, two `u32`s a term; or, once the segment is finished, if its text and its postings
//! both stay within 65,535 (a segment of up to a few hundred documents), both in one `u32`:
//! 4 bytes a term, a tenth of a 100-document index's bytes.

use std::ops::Range;

/// Term `t`'s text is `ends[t - 1]..ends[t]` (from 0 for the first); its postings are
/// `starts[t]..starts[t + 1]` (`starts` empty while the segment is built). When `packed`,
/// `starts` is empty and `ends` holds both: entry `t` is `starts[t] << 16 | ends[t]`, and one
/// more entry holds the last start. The lookups select the halves by mask and shift rather
/// than by a branch (a branch cost queries 2% more instructions).
#[derive(Clone, Debug, Default)]
pub(crate) struct TermOffsets {
    ends: Vec<u32>,
    starts: Vec<u32>,
    packed: bool,
}

/// The largest offset a packed entry holds in each half.
const PACKED_MAX: u32 = u16::MAX as u32;

impl TermOffsets {
    /// The number of terms.
    #[inline]
    pub(crate) fn n_terms(&self) -> usize {
        self.ends.len() - usize::from(self.packed && !self.ends.is_empty())
    }

    /// Where term `id` (a term of the segment) lies in the segment's text.
    #[inline]
    pub(crate) fn text_range(&self, id: u32) -> Range<usize> {
        let id = id as usize;
        let mask = u32::MAX >> (16 * u32::from(self.packed));
        let from = match id.checked_sub(1) {
            Some(prev) => self.ends.get(prev).map_or(0, |&e| (e & mask) as usize),
            None => 0,
        };
        from..self.ends.get(id).map_or(from, |&e| (e & mask) as usize)
    }

    /// Where term `id`'s postings lie in the segment's postings (`(0, 0)` if nowhere).
    #[inline]
    pub(crate) fn postings_range(&self, id: u32) -> (usize, usize) {
        let id = id as usize;
        let starts = if self.packed {
            &self.ends
        } else {
            &self.starts
        };
        let shift = 16 * u32::from(self.packed);
        match (starts.get(id), starts.get(id + 1)) {
            (Some(&from), Some(&to)) => ((from >> shift) as usize, (to >> shift) as usize),
            _ => (0, 0),
        }
    }

    /// The terms' ends, to add terms to (unpacked first if need be; a segment being built
    /// is not packed).
    pub(crate) fn ends_mut(&mut self) -> &mut Vec<u32> {
        if self.packed {
            *self = self.for_building();
        }
        &mut self.ends
    }

    /// These terms without their postings: the start of a segment built on them.
    pub(crate) fn for_building(&self) -> Self {
        let ends = if self.packed {
            self.ends
                .iter()
                .take(self.n_terms())
                .map(|&e| e & PACKED_MAX)
                .collect()
        } else {
            self.ends.clone()
        };
        Self {
            ends,
            ..Self::default()
        }
    }

    /// Sets the postings' `starts` (one more than there are terms) of a segment whose text is
    /// `text_len` bytes long, packing both when they fit, and gives back unused room.
    pub(crate) fn finish(&mut self, starts: Vec<u32>, text_len: usize) {
        let mut ends = std::mem::take(self.ends_mut());
        let fits = text_len <= PACKED_MAX as usize
            && starts.last().is_some_and(|&s| s <= PACKED_MAX)
            && starts.len() == ends.len() + 1;
        *self = if fits {
            let mut packed: Vec<u32> = Vec::with_capacity(starts.len());
            packed.extend(ends.iter().zip(&starts).map(|(&e, &s)| s << 16 | e));
            packed.extend(starts.last().map(|&s| s << 16));
            Self {
                ends: packed,
                starts: Vec::new(),
                packed: true,
            }
        } else {
            ends.shrink_to_fit();
            Self {
                ends,
                starts,
                packed: false,
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(ends: &[u32]) -> TermOffsets {
        let mut o = TermOffsets::default();
        o.ends_mut().extend_from_slice(ends);
        o
    }

    #[test]
    fn packed_and_wide_give_the_same_ranges() {
        let ends = [3, 5, 9];
        let starts = vec![0, 2, 2, 7];
        let mut packed = built(&ends);
        packed.finish(starts.clone(), 9);
        assert!(packed.packed);
        let mut wide = built(&ends);
        wide.finish(starts, 70_000);
        assert!(!wide.packed);
        for o in [&packed, &wide] {
            assert_eq!(o.n_terms(), 3);
            assert_eq!(o.text_range(0), 0..3);
            assert_eq!(o.text_range(2), 5..9);
            assert!(o.text_range(3).is_empty(), "no such term");
            assert_eq!(o.postings_range(0), (0, 2));
            assert_eq!(o.postings_range(1), (2, 2));
            assert_eq!(o.postings_range(2), (2, 7));
            assert_eq!(o.postings_range(3), (0, 0));
        }
        let again = packed.for_building();
        assert_eq!(again.ends, ends);
        let mut grown = packed.clone();
        grown.ends_mut().push(12);
        assert_eq!(grown.n_terms(), 4);
        assert_eq!(grown.text_range(3), 9..12);
        let mut empty = TermOffsets::default();
        empty.finish(vec![0], 0);
        assert_eq!(empty.n_terms(), 0);
        assert_eq!(empty.postings_range(0), (0, 0));
    }
}
