//! A posting and the loop that scores a list of them: the hot path of every query, shared by
//! the frozen segment and the delta so that both score identically.

use super::scoring::TermScorer;

/// One document containing one term: its slot in the index, the term's (weighted) frequency
/// `tf > 0`, and the document's (weighted) length.
///
/// The length is copied into every posting (12 bytes instead of 8) so that the loop reads
/// postings sequentially instead of jumping into a per-document length array.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Posting {
    pub(crate) slot: u32,
    pub(crate) tf: f32,
    pub(crate) dl: f32,
}

/// Adds `scorer`'s contribution for each posting to `scores[slot]`.
#[inline]
pub(crate) fn accumulate(scores: &mut [f32], postings: &[Posting], scorer: &TermScorer) {
    for p in postings {
        if let Some(score) = scores.get_mut(p.slot as usize) {
            *score += scorer.score_posting(p.tf, p.dl);
        }
    }
}
