//! Building a segment. Terms are interned as they come and documents are added by ascending
//! slot. Postings arrive either with their documents (a write's tiny segment, a bulk load:
//! each document's term ids and term frequencies, laid out by term at the end with a counting
//! sort) or already laid out by the merge, which copies whole posting lists.

use std::sync::Arc;

use super::analyze::Analyzed;
use super::postings::{Posting, Postings};
use super::segment::{Attachment, NO_TERM, Segment, hash_of_term};
use super::term_ids::TermIds;

pub(crate) struct Builder {
    seg: Segment,
    /// Signed while building: a merge subtracts cancelled removals after adding all records.
    neg_df: Vec<i64>,
    /// The documents' term ids, narrowed into the segment at the end.
    doc_terms: Vec<u32>,
    /// The term frequency of each entry of `doc_terms` added by [`Self::push_terms`]: with the
    /// documents' slots and lengths, their postings (4 bytes a posting until [`Self::finish`]
    /// lays them out, where a posting held with its term id took 16; a bulk load of 1,000,000
    /// tools holds ~45 million).
    tfs: Vec<f32>,
}

impl Builder {
    /// An empty segment covering the slots `lo..hi`.
    pub(crate) fn new(lo: u32, hi: u32) -> Self {
        let seg = Segment {
            lo,
            hi,
            doc_starts: vec![0],
            ..Segment::default()
        };
        Self {
            seg,
            neg_df: Vec::new(),
            doc_terms: Vec::new(),
            tfs: Vec::new(),
        }
    }

    /// An empty segment covering `lo..hi` whose term ids start as `base`'s (copied wholesale,
    /// without re-interning), with room for `docs` documents and `postings` postings.
    pub(crate) fn inheriting(
        base: &Segment,
        lo: u32,
        hi: u32,
        docs: usize,
        postings: usize,
    ) -> Self {
        let mut b = Self::new(lo, hi);
        b.seg.text = base.text.clone();
        b.seg.offsets = base.offsets.for_building();
        b.seg.table = base.table.clone();
        b.reserve(docs, postings);
        b
    }

    /// Extends the slots the segment covers up to `hi` (a bulk load learns it as it goes).
    pub(crate) fn extend_to(&mut self, hi: u32) {
        self.seg.hi = self.seg.hi.max(hi);
    }

    pub(crate) fn reserve(&mut self, docs: usize, postings: usize) {
        let seg = &mut self.seg;
        seg.slots.reserve(docs);
        seg.keys.reserve(docs);
        seg.lens.reserve(docs);
        seg.doc_starts.reserve(docs);
        self.doc_terms.reserve(postings);
        self.tfs.reserve(postings);
    }

    /// Room for `terms` more terms of `bytes` bytes of text, so that a segment is built without
    /// growing vectors and rehashing (which cost a third of an insert).
    pub(crate) fn reserve_terms(&mut self, terms: usize, bytes: usize) {
        let seg = &mut self.seg;
        seg.text.reserve(bytes);
        seg.offsets.ends_mut().reserve(terms);
        let (text, offsets) = (&seg.text, &seg.offsets);
        seg.table
            .reserve(terms, |id| hash_of_term(text, offsets, id));
    }

    pub(crate) fn n_terms(&self) -> usize {
        self.seg.offsets.n_terms()
    }

    /// The id of `term` in the segment being built, adding it on first sight.
    pub(crate) fn intern(&mut self, term: &str, hash: u64) -> u32 {
        let seg = &mut self.seg;
        if let Some(id) = seg.lookup(hash, term) {
            return id;
        }
        let id = u32::try_from(seg.offsets.n_terms()).unwrap_or(NO_TERM);
        seg.text.push_str(term);
        let end = offset(seg.text.len());
        seg.offsets.ends_mut().push(end);
        let (text, offsets) = (&seg.text, &seg.offsets);
        seg.table
            .insert(hash, id, |id| hash_of_term(text, offsets, id));
        id
    }

    /// Adds `ids` to the term ids of the next document [`Self::push_doc`] adds (before the
    /// `ids` that one is given). For a segment's first document the list is kept as it is: a
    /// one-document segment keeps the caller's list, not a copy.
    pub(crate) fn add_doc_terms(&mut self, ids: Vec<u32>) {
        if self.doc_terms.is_empty() {
            self.doc_terms = ids;
        } else {
            self.doc_terms.extend(ids);
        }
    }

    /// Adds a document at `slot` (above every slot added before) containing the terms `ids`
    /// (after those [`Self::add_doc_terms`] gave), with its attachment if it has one.
    pub(crate) fn push_doc(
        &mut self,
        slot: u32,
        key: Arc<str>,
        attachment: Option<Attachment>,
        len: f32,
        ids: impl IntoIterator<Item = u32>,
    ) {
        let seg = &mut self.seg;
        self.doc_terms.extend(ids);
        seg.doc_starts.push(offset(self.doc_terms.len()));
        seg.slots.push(slot);
        // `attached` stays empty until a document has an attachment, then runs alongside
        // `keys`, with the room reserved for them (no second growth pattern, no slack beyond
        // theirs).
        if attachment.is_some() && seg.attached.is_empty() {
            seg.attached.reserve_exact(seg.keys.capacity().max(1));
            seg.attached.resize(seg.keys.len(), None);
        }
        if !seg.attached.is_empty() || attachment.is_some() {
            seg.attached.push(attachment);
        }
        seg.keys.push(key);
        seg.lens.push(len);
        seg.live_len += f64::from(len);
    }

    /// Interns every term of `doc` (analysed) and records its frequency, for the posting
    /// [`Self::finish`] makes; returns the document's term ids, in the order of its terms, for
    /// [`Self::push_doc`] (or [`Self::add_doc_terms`]), which must add them next.
    #[inline]
    pub(crate) fn push_terms(&mut self, doc: &Analyzed<'_>) -> Vec<u32> {
        let mut ids = Vec::with_capacity(doc.terms.len());
        for t in &doc.terms {
            ids.push(self.intern(t.text, t.hash));
            self.tfs.push(t.tf);
        }
        ids
    }

    /// Records the removal of the document at `slot` (of an older segment), of length `len`,
    /// containing the terms `ids` (of this segment).
    pub(crate) fn negative(&mut self, slot: u32, len: f32, ids: impl IntoIterator<Item = u32>) {
        self.seg.neg_slots.push(slot);
        self.seg.neg_lens.push(len);
        self.seg.live_len -= f64::from(len);
        for id in ids {
            self.add_neg_df(id, 1);
        }
    }

    /// Adds `by` to term `id`'s count of removed documents.
    pub(crate) fn add_neg_df(&mut self, id: u32, by: i64) {
        let id = id as usize;
        if self.neg_df.len() <= id {
            self.neg_df.resize(id + 1, 0);
        }
        if let Some(n) = self.neg_df.get_mut(id) {
            *n += by;
        }
    }

    /// The segment, with the postings of the documents' terms laid out by term (counting
    /// sort; a term's postings are in slot order, the order the documents came in).
    pub(crate) fn finish(self) -> Segment {
        debug_assert_eq!(
            self.tfs.len(),
            self.doc_terms.len(),
            "every term from push_terms"
        );
        let n_terms = self.n_terms();
        let mut starts = vec![0u32; n_terms + 1];
        for &id in &self.doc_terms {
            if let Some(count) = starts.get_mut(id as usize + 1) {
                *count += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let postings = if self.seg.fits_short() {
            let lo = self.seg.lo;
            Postings::Short(self.lay_out(&starts, |p| p.short(lo)))
        } else {
            Postings::Long(self.lay_out(&starts, |p| p))
        };
        self.finish_with(starts, postings)
    }

    /// Each document's postings laid out by term (`starts` being where each term's postings
    /// begin), each as `convert` makes it; a term's keep the documents' order.
    fn lay_out<T: Copy>(&self, starts: &[u32], convert: impl Fn(Posting) -> T) -> Vec<T> {
        let seg = &self.seg;
        let (Some(&slot), Some(&dl), Some(&tf)) =
            (seg.slots.first(), seg.lens.first(), self.tfs.first())
        else {
            return Vec::new();
        };
        let mut cursor = starts.to_vec();
        let mut postings = vec![convert(Posting { slot, tf, dl }); self.tfs.len()];
        let docs = seg.doc_starts.windows(2).zip(&seg.slots).zip(&seg.lens);
        for ((bounds, &slot), &dl) in docs {
            let (from, to) = (bounds[0] as usize, bounds[1] as usize);
            let terms = self.doc_terms.get(from..to).unwrap_or_default();
            let tfs = self.tfs.get(from..to).unwrap_or_default();
            for (&id, &tf) in terms.iter().zip(tfs) {
                if let Some(at) = cursor.get_mut(id as usize) {
                    if let Some(p) = postings.get_mut(*at as usize) {
                        *p = convert(Posting { slot, tf, dl });
                    }
                    *at += 1;
                }
            }
        }
        postings
    }

    /// The segment, with postings already laid out by term: `postings[starts[t]..starts[t + 1]]`
    /// are term `t`'s.
    pub(crate) fn finish_with(mut self, starts: Vec<u32>, postings: Postings) -> Segment {
        let seg = &mut self.seg;
        seg.postings = postings;
        // A merge reserves for every input's terms, most of which it meets again: give back
        // what the dictionary did not use.
        seg.text.shrink_to_fit();
        seg.offsets.finish(starts, seg.text.len());
        let (text, offsets) = (&seg.text, &seg.offsets);
        seg.table.shrink(|id| hash_of_term(text, offsets, id));
        let n_terms = seg.offsets.n_terms();
        seg.doc_terms = TermIds::new(self.doc_terms, n_terms);
        if self.neg_df.iter().any(|&n| n > 0) {
            self.neg_df.resize(n_terms, 0);
            seg.neg_df = self
                .neg_df
                .iter()
                .map(|&n| u32::try_from(n.max(0)).unwrap_or(u32::MAX))
                .collect();
        }
        if !seg.neg_slots.is_sorted() {
            let mut negs: Vec<(u32, f32)> = seg
                .neg_slots
                .iter()
                .copied()
                .zip(seg.neg_lens.iter().copied())
                .collect();
            negs.sort_unstable_by_key(|&(slot, _)| slot);
            (seg.neg_slots, seg.neg_lens) = negs.into_iter().unzip();
        }
        self.seg
    }
}

/// `n` as a `u32` segment offset (see [`Segment`]: offsets stay far below `u32::MAX`).
pub(crate) fn offset(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
