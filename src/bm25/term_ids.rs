//! The term ids of a segment's documents (what a removal records), two bytes each when the
//! segment has at most 65,536 terms (every segment of the benches' 10,000-document index and
//! of the real tool sets), four otherwise: a tenth of a document's bytes in the index.

/// All documents' term ids, one after the other.
#[derive(Debug)]
pub(crate) enum TermIds {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Default for TermIds {
    fn default() -> Self {
        Self::Wide(Vec::new())
    }
}

impl TermIds {
    /// `ids` (all below `n_terms`), narrowed when every id fits in two bytes.
    pub(crate) fn new(ids: Vec<u32>, n_terms: usize) -> Self {
        if n_terms <= usize::from(u16::MAX) + 1 {
            Self::Narrow(ids.iter().map(|&id| id as u16).collect())
        } else {
            Self::Wide(ids)
        }
    }

    /// The ids at positions `from..to`.
    pub(crate) fn get(&self, from: usize, to: usize) -> Ids<'_> {
        match self {
            Self::Narrow(ids) => Ids::Narrow(ids.get(from..to).unwrap_or_default().iter()),
            Self::Wide(ids) => Ids::Wide(ids.get(from..to).unwrap_or_default().iter()),
        }
    }

    /// Bytes allocated.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Self::Narrow(ids) => ids.capacity() * 2,
            Self::Wide(ids) => ids.capacity() * 4,
        }
    }
}

/// An iterator over some of a [`TermIds`]'s ids.
pub(crate) enum Ids<'a> {
    Narrow(std::slice::Iter<'a, u16>),
    Wide(std::slice::Iter<'a, u32>),
}

impl Iterator for Ids<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self {
            Self::Narrow(ids) => ids.next().map(|&id| u32::from(id)),
            Self::Wide(ids) => ids.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Self::Narrow(ids) => ids.len(),
            Self::Wide(ids) => ids.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Ids<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_and_wide_give_the_same_ids() {
        let ids = vec![0, 7, 65_535, 3];
        let narrow = TermIds::new(ids.clone(), 65_536);
        assert!(matches!(narrow, TermIds::Narrow(_)));
        assert_eq!(narrow.get(1, 3).collect::<Vec<_>>(), [7, 65_535]);
        assert_eq!(narrow.get(0, 4).len(), 4);
        let wide = TermIds::new(vec![70_000, 1], 70_001);
        assert!(matches!(wide, TermIds::Wide(_)));
        assert_eq!(wide.get(0, 2).collect::<Vec<_>>(), [70_000, 1]);
        assert_eq!(wide.get(2, 9).len(), 0);
        assert_eq!(narrow.bytes(), 8);
    }
}
