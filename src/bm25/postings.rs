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

/// Postings scored together: their frequencies and lengths are copied into arrays, scored
/// there (the divisions vectorise, four to an SSE instruction), then added to their slots one
/// by one.
const BLOCK: usize = 32;

/// Lists shorter than this are scored one posting at a time.
const SHORT: usize = 16;

/// Adds `scorer`'s contribution for each posting to `scores[slot]`.
///
/// Each contribution is [`TermScorer::score_posting`], the same expression whatever the
/// blocking, and each slot receives its contributions in posting order, so the scores are
/// bit-identical to a plain loop over the postings. In that plain loop (on the 12-byte
/// postings, with a bounds check per posting) the compiler keeps the arithmetic scalar, and
/// the division bounds the loop.
#[inline]
pub(crate) fn accumulate(scores: &mut [f32], postings: &[Posting], scorer: &TermScorer) {
    if postings.len() < SHORT {
        // Short lists (small segments) do not repay setting up the blocks.
        for p in postings {
            if let Some(score) = scores.get_mut(p.slot as usize) {
                *score += scorer.score_posting(p.tf, p.dl);
            }
        }
        return;
    }
    let mut tf = [0.0f32; BLOCK];
    let mut dl = [0.0f32; BLOCK];
    let mut contribution = [0.0f32; BLOCK];
    for block in postings.chunks(BLOCK) {
        for ((tf, dl), p) in tf.iter_mut().zip(&mut dl).zip(block) {
            (*tf, *dl) = (p.tf, p.dl);
        }
        let n = block.len();
        let (tf, dl) = (
            tf.get(..n).unwrap_or_default(),
            dl.get(..n).unwrap_or_default(),
        );
        for ((c, &tf), &dl) in contribution.iter_mut().zip(tf).zip(dl) {
            *c = scorer.score_posting(tf, dl);
        }
        for (c, p) in contribution.iter().zip(block) {
            if let Some(score) = scores.get_mut(p.slot as usize) {
                *score += c;
            }
        }
    }
}
