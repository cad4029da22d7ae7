//! A memo of [`idf`]`(doc_freq, n_docs)`, kept in each thread's query scratch.
//!
//! `idf` is a pure function of two integers, but `N` and every `df` change with each write, so
//! the index cannot store it; its `ln` was a tenth of a small query's instructions. Queries
//! against one version ask for the same few pairs again and again (at N = 100 there are at most
//! 101), so a small direct-mapped table of recent pairs answers most of them, with the very
//! bits `idf` returns.

use super::scoring::idf;

/// Entries: a power of two. 6 KB a thread.
const SIZE: usize = 256;

#[derive(Default)]
pub(crate) struct IdfMemo {
    /// `(doc_freq, n_docs, idf)`, allocated on first use. Every entry is true: the table starts
    /// filled with the pair (0, 0) and its idf.
    entries: Vec<(u64, u64, f32)>,
}

impl IdfMemo {
    pub(crate) const fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// `idf(doc_freq, n_docs)`.
    #[inline]
    pub(crate) fn idf(&mut self, doc_freq: u64, n_docs: u64) -> f32 {
        if self.entries.is_empty() {
            self.entries = vec![(0, 0, idf(0, 0)); SIZE];
        }
        const MIX: u64 = 0x9e37_79b9_7f4a_7c15;
        let at = ((doc_freq ^ n_docs.wrapping_mul(MIX)).wrapping_mul(MIX) >> 56) as usize;
        match self.entries.get_mut(at % SIZE) {
            Some(&mut (df, n, idf)) if df == doc_freq && n == n_docs => idf,
            Some(entry) => {
                let value = idf(doc_freq, n_docs);
                *entry = (doc_freq, n_docs, value);
                value
            }
            None => idf(doc_freq, n_docs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_what_idf_answers() {
        let mut memo = IdfMemo::new();
        for round in 0..3 {
            for n in [0u64, 1, 2, 100, 10_000, u64::MAX] {
                for df in (0..300).chain([n, n.saturating_add(1)]) {
                    let got = memo.idf(df, n);
                    assert_eq!(
                        got.to_bits(),
                        idf(df, n).to_bits(),
                        "{df} {n} round {round}"
                    );
                }
            }
        }
    }
}
