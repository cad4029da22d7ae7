//! What a query needs besides the index, reused across queries on each thread: the dense score
//! array it accumulates into, the buffers of its prepared terms and its top-k candidates.
//!
//! Allocating the score array per query costs more than the query at large N: 400 KB at
//! N = 100,000 is above the allocator's mmap threshold, so every query would fault in fresh
//! zeroed pages. The other buffers are small, but allocating them per query was four of a
//! query's five allocations, a visible share of a query at N = 100. The scratch is *taken out*
//! of the thread-local while in use, so a re-entrant query (a `keep` filter that itself
//! searches) gets its own buffers instead of a `RefCell` panic, and a panic mid-query drops the
//! buffers instead of leaving dirty scores behind.

use std::cell::Cell;

use super::prune::PruneScratch;
use super::query::Prepared;
use super::reuse::{put_back, take_from};

/// One query's reusable buffers.
#[derive(Default)]
pub(crate) struct Scratch {
    /// All zero between queries (the top-k scan resets every score it reads).
    scores: Vec<f32>,
    /// The query's distinct terms, refilled by [`super::query::Corpus::prepare_into`].
    pub(crate) query: Prepared,
    /// The top-k candidates.
    pub(crate) top: Vec<(f32, u32)>,
    /// The slots a sparse query's postings touched (empty between queries).
    pub(crate) touched: Vec<u32>,
    /// A pruned query's buffers (`prune.rs`).
    prune: PruneScratch,
}

impl Scratch {
    const fn new() -> Self {
        Self {
            scores: Vec::new(),
            query: Prepared::new(),
            top: Vec::new(),
            touched: Vec::new(),
            prune: PruneScratch::new(),
        }
    }

    /// The query, an all-zero score array of `len` slots and the other buffers, borrowed
    /// together. The caller must leave every score at zero again (the top-k scan does, as it
    /// reads them).
    pub(crate) fn split(&mut self, len: usize) -> Split<'_> {
        if self.scores.len() < len {
            self.scores.resize(len, 0.0);
        }
        Split {
            query: &self.query,
            scores: self.scores.get_mut(..len).unwrap_or_default(),
            top: &mut self.top,
            touched: &mut self.touched,
            prune: &mut self.prune,
        }
    }
}

/// A [`Scratch`], borrowed for one query by [`Scratch::split`].
pub(crate) struct Split<'s> {
    pub(crate) query: &'s Prepared,
    pub(crate) scores: &'s mut [f32],
    pub(crate) top: &'s mut Vec<(f32, u32)>,
    pub(crate) touched: &'s mut Vec<u32>,
    pub(crate) prune: &'s mut PruneScratch,
}

thread_local! {
    static SCRATCH: Cell<Scratch> = const { Cell::new(Scratch::new()) };
}

/// Runs `f` on this thread's scratch (or on fresh buffers, if a query is already using it).
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut scratch = take_from(&SCRATCH);
    let result = f(&mut scratch);
    put_back(&SCRATCH, scratch);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_zeroed_and_nest() {
        with_scratch(|outer| {
            let scores = outer.split(4).scores;
            assert_eq!(scores, [0.0; 4]);
            scores[1] = 3.0;
            with_scratch(|inner| assert_eq!(inner.split(8).scores, [0.0; 8]));
            scores[1] = 0.0;
        });
        with_scratch(|again| assert_eq!(again.split(2).scores, [0.0; 2]));
    }
}
