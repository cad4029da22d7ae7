//! A posting, the two layouts a segment keeps its postings in, and the loop that scores a list
//! of them: the hot path of every query, shared by every segment so that all score
//! identically.
//!
//! A posting holds the document's length (as well as its slot and the term's frequency) so
//! that scoring reads postings sequentially instead of jumping into a per-document length
//! array; a jump cost about 40% more instructions in scoring (measured: a gather that cannot
//! vectorise, and a bounds check each). A segment of at most 65,536 documents whose slots are
//! exactly `lo..hi` (every segment until a merge drops removed documents, and every segment
//! after a renumbering) keeps its postings in 10 bytes instead of 12: the document's index in
//! the segment in 2 bytes instead of the slot in 4. Scoring narrows the score array to the
//! segment's slots and adds to `lo + document`, for as many instructions as the long layout.

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

impl Posting {
    /// This posting in the short layout, of the segment whose first slot is `lo` (which
    /// qualifies for it, see the module docs).
    #[inline]
    pub(crate) fn short(self, lo: u32) -> ShortPosting {
        ShortPosting {
            doc: self.slot.wrapping_sub(lo) as u16,
            tf: self.tf,
            dl: self.dl,
        }
    }
}

/// A posting of a segment with the short layout (see the module docs): the document's index
/// in the segment, the term's frequency and the document's length, in 10 bytes (packed to
/// 2-byte alignment; fields are only read by value, which is safe).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, packed(2))]
pub(crate) struct ShortPosting {
    pub(crate) doc: u16,
    pub(crate) tf: f32,
    pub(crate) dl: f32,
}

impl ShortPosting {
    /// This posting in the long layout, of the segment whose first slot is `lo` (the inverse of
    /// [`Posting::short`]).
    #[inline]
    pub(crate) fn long(self, lo: u32) -> Posting {
        Posting {
            slot: lo + u32::from(self.doc),
            tf: self.tf,
            dl: self.dl,
        }
    }
}

/// A segment's postings, laid out by term.
#[derive(Debug)]
pub(crate) enum Postings {
    Long(Vec<Posting>),
    /// For a segment of at most [`SHORT_MAX_DOCS`] documents whose slots are `lo..hi`.
    Short(Vec<ShortPosting>),
}

impl Default for Postings {
    fn default() -> Self {
        Self::Long(Vec::new())
    }
}

/// The most documents a segment with the short layout holds: document indexes fit in 2 bytes.
pub(crate) const SHORT_MAX_DOCS: usize = u16::MAX as usize + 1;

impl Postings {
    /// `postings` of the segment covering `lo..`, in the short layout when `short` (the
    /// caller checked that the segment qualifies).
    pub(crate) fn new(postings: Vec<Posting>, lo: u32, short: bool) -> Self {
        if !short {
            return Self::Long(postings);
        }
        Self::Short(postings.iter().map(|p| p.short(lo)).collect())
    }

    /// How many postings there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Long(p) => p.len(),
            Self::Short(p) => p.len(),
        }
    }

    /// Postings `from..to` of the segment whose slots are `lo..hi`.
    #[inline]
    pub(crate) fn list(&self, from: usize, to: usize, lo: u32, hi: u32) -> List<'_> {
        match self {
            Self::Long(p) => List::Long(p.get(from..to).unwrap_or_default()),
            Self::Short(p) => List::Short {
                lo,
                hi,
                postings: p.get(from..to).unwrap_or_default(),
            },
        }
    }
}

/// One term's postings in a segment, by ascending slot.
#[derive(Clone, Copy, Debug)]
pub(crate) enum List<'a> {
    Long(&'a [Posting]),
    /// Short postings of the segment whose slots are `lo..hi`.
    Short {
        lo: u32,
        hi: u32,
        postings: &'a [ShortPosting],
    },
}

impl<'a> List<'a> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Long(p) => p.len(),
            Self::Short { postings, .. } => postings.len(),
        }
    }

    /// The postings, complete.
    pub(crate) fn iter(self) -> impl Iterator<Item = Posting> + 'a {
        let (long, short, lo) = match self {
            Self::Long(p) => (p, &[][..], 0),
            Self::Short { postings, lo, .. } => (&[][..], postings, lo),
        };
        long.iter()
            .copied()
            .chain(short.iter().map(move |p| p.long(lo)))
    }

    /// Appends the slot of every posting to `slots`.
    #[inline]
    pub(crate) fn push_slots(self, slots: &mut Vec<u32>) {
        match self {
            Self::Long(p) => slots.extend(p.iter().map(|p| p.slot)),
            Self::Short { lo, postings, .. } => {
                slots.extend(postings.iter().map(|p| p.long(lo).slot));
            }
        }
    }

    /// The posting of the document at `slot`, if it has the term.
    pub(crate) fn get(self, slot: u32) -> Option<Posting> {
        match self {
            Self::Long(p) => {
                let at = p.binary_search_by_key(&slot, |p| p.slot).ok()?;
                p.get(at).copied()
            }
            Self::Short { lo, postings, .. } => {
                let doc = u16::try_from(slot.checked_sub(lo)?).ok()?;
                let at = postings.binary_search_by_key(&doc, |p| p.doc).ok()?;
                postings.get(at).map(|p| p.long(lo))
            }
        }
    }

    /// The frequency in the document at `slot`, if it has the term.
    pub(crate) fn tf(self, slot: u32) -> Option<f32> {
        match self {
            Self::Long(p) => {
                let at = p.binary_search_by_key(&slot, |p| p.slot).ok()?;
                p.get(at).map(|p| p.tf)
            }
            Self::Short { lo, postings, .. } => {
                let doc = u16::try_from(slot.checked_sub(lo)?).ok()?;
                let at = postings.binary_search_by_key(&doc, |p| p.doc).ok()?;
                postings.get(at).map(|p| p.tf)
            }
        }
    }
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
pub(crate) fn accumulate(scores: &mut [f32], list: List<'_>, scorer: &TermScorer) {
    match list {
        List::Long(postings) => accumulate_long(scores, postings, scorer),
        List::Short { lo, hi, postings } => accumulate_short(scores, lo, hi, postings, scorer),
    }
}

/// What the scoring loop reads of a posting, whatever its layout.
trait Scored: Copy {
    /// The index of the posting's score in the score array the loop is given.
    fn at(self) -> usize;
    fn tf(self) -> f32;
    fn dl(self) -> f32;
}

impl Scored for Posting {
    #[inline]
    fn at(self) -> usize {
        self.slot as usize
    }
    #[inline]
    fn tf(self) -> f32 {
        self.tf
    }
    #[inline]
    fn dl(self) -> f32 {
        self.dl
    }
}

impl Scored for ShortPosting {
    #[inline]
    fn at(self) -> usize {
        usize::from(self.doc)
    }
    #[inline]
    fn tf(self) -> f32 {
        self.tf
    }
    #[inline]
    fn dl(self) -> f32 {
        self.dl
    }
}

/// [`accumulate`] on postings of the long layout.
#[inline]
fn accumulate_long(scores: &mut [f32], postings: &[Posting], scorer: &TermScorer) {
    accumulate_blocks(scores, postings, scorer);
}

/// [`accumulate`] on postings of the short layout (the segment's slots being `lo..hi`). The
/// scores are first narrowed to the segment's slots, so that a document's score is at its
/// index, with a bounds check as the long layout's.
#[inline]
fn accumulate_short(
    scores: &mut [f32],
    lo: u32,
    hi: u32,
    postings: &[ShortPosting],
    scorer: &TermScorer,
) {
    if let Some(scores) = scores.get_mut(lo as usize..hi as usize) {
        accumulate_blocks(scores, postings, scorer);
    }
}

/// The scoring loop of either layout (one copy of it, compiled for each).
#[inline]
fn accumulate_blocks<P: Scored>(scores: &mut [f32], postings: &[P], scorer: &TermScorer) {
    if postings.len() < SHORT {
        // Short lists (small segments) do not repay setting up the blocks.
        for &p in postings {
            if let Some(score) = scores.get_mut(p.at()) {
                *score += scorer.score_posting(p.tf(), p.dl());
            }
        }
        return;
    }
    let mut tf = [0.0f32; BLOCK];
    let mut dl = [0.0f32; BLOCK];
    let mut contribution = [0.0f32; BLOCK];
    for block in postings.chunks(BLOCK) {
        for ((tf, dl), &p) in tf.iter_mut().zip(&mut dl).zip(block) {
            (*tf, *dl) = (p.tf(), p.dl());
        }
        let n = block.len();
        let (tf, dl) = (
            tf.get(..n).unwrap_or_default(),
            dl.get(..n).unwrap_or_default(),
        );
        for ((c, &tf), &dl) in contribution.iter_mut().zip(tf).zip(dl) {
            *c = scorer.score_posting(tf, dl);
        }
        for (c, &p) in contribution.iter().zip(block) {
            if let Some(score) = scores.get_mut(p.at()) {
                *score += c;
            }
        }
    }
}
