//! A segment: an immutable, flat inverted index over the documents of a stretch of writes, plus
//! the removals recorded in that stretch (as in Lucene, tantivy and LSM trees). Segments are
//! shared behind `Arc`s by every version of the index that contains them; writes add new
//! segments and merges replace runs of them, so a segment never changes once built.
//!
//! Flat `Vec`s because iterating them is what makes queries fast (~1.6 ns a posting against
//! ~4.5 ns for a persistent `imbl::Vector`, DESIGN.md). Nothing in a segment depends on corpus
//! statistics, so writes never rewrite postings to refresh a norm.
//!
//! A removal is a *negative record*: the removed document's slot, length and terms, counted in
//! `neg_df`. The document's postings stay in its (older) segment, skipped by queries thanks to
//! the tombstone bitset, until a merge takes in both the document and its negative record and
//! drops the pair. So a term's document frequency is always the sum over segments of
//! `postings - neg_df`, exact without touching the old segment.

use std::sync::Arc;

use super::hash::term_hash;
use super::postings::{List, Postings, SHORT_MAX_DOCS};
use super::term_ids::{Ids, TermIds};
use super::term_offsets::TermOffsets;
use super::term_table::TermTable;

/// What the crate may keep with a document, opaque to the index: the store keeps each
/// record's row there, so that a search hit leads to its record without a look-up by key
/// (see [`KeyHit::attachment`](super::index::KeyHit::attachment)).
pub(crate) type Attachment = Arc<dyn std::any::Any + Send + Sync>;

/// No term: an id no segment gives out.
pub(super) const NO_TERM: u32 = u32::MAX;

#[derive(Debug, Default)]
pub(crate) struct Segment {
    /// The slots allocated by the writes this segment covers: `lo..hi`. Consecutive segments'
    /// ranges touch, so the segment holding a slot is found by binary search.
    pub(super) lo: u32,
    pub(super) hi: u32,
    /// The terms' text, one after the other (one allocation for all terms). Offsets here and
    /// below are `u32`, half a `usize`: a segment's text, postings and document terms stay
    /// far below 4 G entries (4 G postings would take 48 GB).
    pub(super) text: String,
    /// Where each term's text and postings are.
    pub(super) offsets: TermOffsets,
    /// Hash → term id.
    pub(super) table: TermTable,
    /// Laid out by term (see `offsets`), a term's by ascending slot; in the short layout when
    /// the segment qualifies (see `postings.rs`).
    pub(super) postings: Postings,
    /// Per term, how many removed documents (of older segments) contain it; empty if none.
    pub(super) neg_df: Vec<u32>,
    /// The documents, by ascending slot, with their keys and (weighted) lengths.
    pub(super) slots: Vec<u32>,
    pub(super) keys: Vec<Arc<str>>,
    /// Each document's [`Attachment`], by document as `keys`; empty when none of them has one
    /// (documents inserted through the public [`super::Bm25Index::insert`] have none).
    pub(super) attached: Vec<Option<Attachment>>,
    pub(super) lens: Vec<f32>,
    /// `doc_terms[doc_starts[d]..doc_starts[d + 1]]`: document `d`'s term ids, so that a
    /// removal can record its terms.
    pub(super) doc_starts: Vec<u32>,
    pub(super) doc_terms: TermIds,
    /// Negative records: removed slots (sorted) and their lengths.
    pub(super) neg_slots: Vec<u32>,
    pub(super) neg_lens: Vec<f32>,
    /// Σ lens − Σ neg_lens.
    pub(super) live_len: f64,
}

impl Segment {
    /// The id of `term` (whose [`super::hash::term_hash`] is `hash`), if this segment has it.
    #[inline]
    pub(crate) fn lookup(&self, hash: u64, term: &str) -> Option<u32> {
        // The table matched a 7-bit tag of the hash; the text decides.
        self.table
            .find(hash, |id| same_bytes(self.term_bytes(id), term.as_bytes()))
    }

    pub(crate) fn n_terms(&self) -> usize {
        self.offsets.n_terms()
    }

    pub(crate) fn term(&self, id: u32) -> &str {
        self.text.get(self.term_range(id)).unwrap_or_default()
    }

    /// [`Self::term`] as bytes: no UTF-8 boundary checks on the lookup path.
    #[inline]
    fn term_bytes(&self, id: u32) -> &[u8] {
        self.text
            .as_bytes()
            .get(self.term_range(id))
            .unwrap_or_default()
    }

    #[inline]
    fn term_range(&self, id: u32) -> std::ops::Range<usize> {
        self.offsets.text_range(id)
    }

    /// Term `id`'s [`term_hash`], computed again rather than stored: merges and removals, the
    /// only callers, hash each term they copy once, and keeping 8 bytes a term was a tenth of
    /// a small index's memory.
    #[inline]
    pub(crate) fn hash(&self, id: u32) -> u64 {
        term_hash(self.term(id))
    }

    /// Term `id`'s postings: every document of this segment that contains it, removed or not.
    #[inline]
    pub(crate) fn postings(&self, id: u32) -> List<'_> {
        let (from, to) = self.offsets.postings_range(id);
        self.postings.list(from, to, self.lo, self.hi)
    }

    /// How many postings term `id` has (what `self.postings(id).len()` says, without making
    /// the list: merges ask it of every term).
    #[inline]
    pub(crate) fn postings_len(&self, id: u32) -> usize {
        let (from, to) = self.offsets.postings_range(id);
        to.saturating_sub(from)
    }

    /// This segment's contribution to term `id`'s document frequency (negative when it records
    /// removals of older documents).
    #[inline]
    pub(crate) fn df(&self, id: u32) -> i64 {
        let neg = self.neg_df.get(id as usize).copied().unwrap_or(0);
        self.postings_len(id) as i64 - i64::from(neg)
    }

    /// The frequency of term `id` in the document at `slot`.
    pub(crate) fn tf(&self, id: u32, slot: u32) -> Option<f32> {
        self.postings(id).tf(slot)
    }

    /// Whether this segment may keep its postings in the short layout: its slots are exactly
    /// `lo..hi` and few enough for 2-byte document indexes.
    pub(crate) fn fits_short(&self) -> bool {
        fits_short(self.slots.len(), self.lo, self.hi)
    }

    /// The number of documents (removed or not) and negative records: the size merges see.
    pub(crate) fn records(&self) -> usize {
        self.slots.len() + self.neg_slots.len()
    }

    /// The index of the document at `slot` in this segment.
    #[inline]
    pub(crate) fn doc(&self, slot: u32) -> Option<usize> {
        // Until a merge drops removed documents, a segment's slots are exactly `lo..hi`.
        if slots_exact(self.slots.len(), self.lo, self.hi) {
            return slot
                .checked_sub(self.lo)
                .map(|d| d as usize)
                .filter(|&d| d < self.slots.len());
        }
        self.slots.binary_search(&slot).ok()
    }

    pub(crate) fn key(&self, doc: usize) -> Option<&Arc<str>> {
        self.keys.get(doc)
    }

    /// Document `doc`'s attachment, if it was given one.
    #[inline]
    pub(crate) fn attachment(&self, doc: usize) -> Option<&Attachment> {
        self.attached.get(doc)?.as_ref()
    }

    pub(crate) fn doc_len(&self, doc: usize) -> Option<f32> {
        self.lens.get(doc).copied()
    }

    pub(crate) fn doc_terms(&self, doc: usize) -> Ids<'_> {
        match (self.doc_starts.get(doc), self.doc_starts.get(doc + 1)) {
            (Some(&from), Some(&to)) => self.doc_terms.get(from as usize, to as usize),
            _ => self.doc_terms.get(0, 0),
        }
    }
}

impl Segment {
    /// This segment with every slot `s` replaced by `slot_of[s]` (which must preserve order),
    /// covering `0..` its document count. Only for a segment without removal records.
    pub(crate) fn renumbered(mut self, slot_of: &[u32]) -> Segment {
        let new = |slot: u32| slot_of.get(slot as usize).copied().unwrap_or(slot);
        if let Postings::Long(postings) = &mut self.postings {
            for p in postings.iter_mut() {
                p.slot = new(p.slot);
            }
        }
        // Short postings hold document indexes, which renumbering keeps.
        for s in &mut self.slots {
            *s = new(*s);
        }
        self.lo = 0;
        self.hi = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        if self.fits_short()
            && let Postings::Long(postings) = &mut self.postings
        {
            let long = std::mem::take(postings);
            self.postings = Postings::new(long, self.lo, true);
        }
        self
    }
}

/// Whether `docs` documents over the slots `lo..hi` are one to a slot: no slot left by a
/// dropped document.
#[inline]
fn slots_exact(docs: usize, lo: u32, hi: u32) -> bool {
    docs == hi.saturating_sub(lo) as usize
}

/// Whether a segment of `docs` documents over the slots `lo..hi` may keep its postings in the
/// short layout: its slots exactly `lo..hi`, and few enough for 2-byte document indexes.
pub(super) fn fits_short(docs: usize, lo: u32, hi: u32) -> bool {
    docs <= SHORT_MAX_DOCS && slots_exact(docs, lo, hi)
}

/// The [`term_hash`] of term `id` of a segment's `text` and `offsets`, for rehashing its
/// dictionary while the dictionary is being changed (so not through a `&Segment`).
pub(super) fn hash_of_term(text: &str, offsets: &TermOffsets, id: u32) -> u64 {
    term_hash(text.get(offsets.text_range(id)).unwrap_or_default())
}

/// `a == b`, comparing terms of up to 16 bytes (most terms) as two overlapping machine words
/// (or up to three bytes) instead of calling `memcmp`, which cost a twentieth of a small query.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        let word = |c: Option<&[u8; 8]>| c.map(|c| u64::from_le_bytes(*c));
        return word(a.first_chunk()) == word(b.first_chunk())
            && word(a.last_chunk()) == word(b.last_chunk());
    }
    if (4..8).contains(&n) {
        let word = |c: Option<&[u8; 4]>| c.map(|c| u32::from_le_bytes(*c));
        return word(a.first_chunk()) == word(b.first_chunk())
            && word(a.last_chunk()) == word(b.last_chunk());
    }
    if n < 4 {
        // First, middle and last byte cover all of up to three (the benches' synthetic words
        // are that short, and `memcmp` was a twentieth of their queries' cycles).
        return a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last();
    }
    a == b
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_is_equality() {
        let words = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abce",
            "abcdefg",
            "abcdefgh",
            "abcdefgi",
            "abcdefghijklmnop",
            "abcdefghijklmnoq",
            "bbcdefghijklmnop",
            "abcdefghijklmnopq",
        ];
        for a in words {
            for b in words {
                assert_eq!(same_bytes(a.as_bytes(), b.as_bytes()), a == b, "{a} {b}");
            }
        }
    }
}
