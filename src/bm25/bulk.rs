//! Settling a small index after a bulk load: one segment instead of the logarithmic method's
//! several.
//!
//! Single inserts leave about 2 log₃ N segments (4 at 100 documents), and a query probes each
//! segment's dictionary once per term. In a small index those probes are most of a query's
//! cost: at 100 documents one segment takes a fifth fewer instructions a query than four, and
//! each segment repeats the dictionary of the terms it shares with the others. Merging
//! everything is linear in the index, so it is done only where a batch of writes pays for it
//! (the batch at least doubled the index: a catalog load, a store's first registration) and
//! only where it is cheap ([`BULK_COMPACT_MAX_DOCS`]). Large indexes keep the logarithmic
//! method: measured on a 10,000-document store compacted after its load, each later
//! registration cost 45 µs instead of 33 µs, because the small merges that follow single
//! writes then fall on the inserts.

use std::collections::HashSet;
use std::sync::Arc;

use super::analyze::analyze;
use super::builder::Builder;
use super::config::IndexConfig;
use super::document::Document;
use super::index::Bm25Index;
use super::segment::Attachment;

/// The largest index [`Bm25Index::settle_bulk_load`] merges into one segment: merging 4,096
/// tool-like documents takes a few milliseconds, once per load.
pub const BULK_COMPACT_MAX_DOCS: usize = 4096;

impl Bm25Index {
    /// Call after a batch of writes that began with `len_before` documents: if the batch at
    /// least doubled the index and it now holds at most [`BULK_COMPACT_MAX_DOCS`] documents,
    /// merges it into one segment ([`Bm25Index::compact`]). Scores do not change. Returns
    /// whether it merged. The store calls it when it commits a write transaction.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// for key in ["a", "b", "c", "d"] {
    ///     index.insert(key, &Document::new().with_field("f", vec![key.into()]));
    /// }
    /// assert!(index.segment_count() > 1);
    /// assert!(index.settle_bulk_load(0));
    /// assert_eq!(index.segment_count(), 1);
    ///
    /// // One more document does not double the index: no merge of everything.
    /// index.insert("e", &Document::new().with_field("f", vec!["e".into()]));
    /// assert!(!index.settle_bulk_load(4));
    /// assert_eq!(index.segment_count(), 2);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn settle_bulk_load(&mut self, len_before: usize) -> bool {
        let len = self.len();
        let bulk = len >= 2 * len_before && len <= BULK_COMPACT_MAX_DOCS;
        if bulk && self.segment_count() > 1 {
            self.compact();
            return true;
        }
        false
    }
}

impl Bm25Index {
    /// Adds many documents in one pass, as one new segment, where [`insert`](Self::insert) of
    /// each would build a one-document segment and merge about log₃ N times per document.
    /// The index ends up with the same documents, statistics and scores as inserting each in
    /// turn; only the segments differ. A key already in the index is replaced; a key given
    /// twice keeps its last document.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let doc = |text: &str| Document::new().with_field("f", vec![text.into()]);
    /// let (a, b, c) = (doc("apple"), doc("banana"), doc("cherry"));
    /// let mut bulk = Bm25Index::new(IndexConfig::default())?;
    /// bulk.insert_many([("a", &a), ("b", &b), ("c", &c)]);
    /// let mut one_by_one = Bm25Index::new(IndexConfig::default())?;
    /// for (key, d) in [("a", &a), ("b", &b), ("c", &c)] {
    ///     one_by_one.insert(key, d);
    /// }
    /// assert_eq!(bulk.segment_count(), 1);
    /// assert_eq!(bulk.stats(), one_by_one.stats());
    /// assert_eq!(bulk.search(&["banana"], 3), one_by_one.search(&["banana"], 3));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn insert_many<'d, K: AsRef<str>>(
        &mut self,
        docs: impl IntoIterator<Item = (K, &'d Document)>,
    ) {
        let docs: Vec<(Arc<str>, &Document, Option<Attachment>)> = docs
            .into_iter()
            .map(|(key, doc)| (Arc::from(key.as_ref()), doc, None))
            .collect();
        self.insert_many_attached(docs);
    }

    /// [`insert_many`](Self::insert_many), each document with its attachment (see
    /// [`insert_attached`](Self::insert_attached)).
    pub(crate) fn insert_many_attached(
        &mut self,
        docs: Vec<(Arc<str>, &Document, Option<Attachment>)>,
    ) {
        // A key given twice keeps its last document: walking backwards, the first sighting of
        // a key is the one kept.
        let mut seen: HashSet<&str> = HashSet::with_capacity(docs.len());
        let mut kept: Vec<bool> = docs.iter().rev().map(|d| seen.insert(&d.0)).collect();
        drop(seen);
        kept.reverse();
        let mut load = BulkLoad::new(self);
        for ((key, doc, attachment), keep) in docs.into_iter().zip(kept) {
            if !keep {
                continue;
            }
            let key = match self.slots.get_key_value(&*key) {
                Some((existing, &old)) => {
                    let existing = Arc::clone(existing);
                    self.record_removal(&mut load.builder, old);
                    existing
                }
                None => key,
            };
            load.add(key, doc, attachment);
        }
        load.finish(self);
    }
}

/// Documents being gathered into one segment for an index, which is not touched until
/// [`BulkLoad::finish`] (so a store can gather a batch while it checks it, and drop the load
/// if a record fails). Each document is analysed and its terms interned as it is added: the
/// load holds postings, never documents.
pub(crate) struct BulkLoad {
    config: Arc<IndexConfig>,
    builder: Builder,
    /// Each document's key and slot, in slot order.
    keys: Vec<(Arc<str>, u32)>,
    next_slot: u32,
}

impl BulkLoad {
    /// A load into `index` (documents get the slots after its last one).
    pub(crate) fn new(index: &Bm25Index) -> Self {
        let lo = index.next_slot;
        BulkLoad {
            config: Arc::clone(&index.config),
            builder: Builder::new(lo, lo),
            keys: Vec::new(),
            next_slot: lo,
        }
    }

    /// Room for `docs` more documents.
    pub(crate) fn reserve(&mut self, docs: usize) {
        self.builder.reserve(docs, 0);
        self.keys.reserve(docs);
    }

    /// Adds a document under `key`, which must be neither in the index (unless this load
    /// records its removal first, as [`Bm25Index::insert_many`] does) nor added before.
    pub(crate) fn add(&mut self, key: Arc<str>, doc: &Document, attachment: Option<Attachment>) {
        let analyzed = analyze(doc, &self.config);
        let slot = self.next_slot;
        self.next_slot = slot.saturating_add(1);
        let b = &mut self.builder;
        b.extend_to(self.next_slot);
        let ids = b.push_terms(&analyzed);
        b.push_doc(slot, Arc::clone(&key), attachment, analyzed.len, ids);
        self.keys.push((key, slot));
    }

    /// Appends the gathered documents to `index` as one segment (which the index may then
    /// merge with its newest segments, as after any write). `index` must be the one the load
    /// was made for, unchanged since but for the removals the load recorded.
    pub(crate) fn finish(self, index: &mut Bm25Index) {
        if self.keys.is_empty() && self.next_slot == index.next_slot {
            return;
        }
        for (key, slot) in self.keys {
            index.slots.insert(key, slot);
        }
        index.next_slot = self.next_slot;
        index.append(self.builder.finish());
    }
}
