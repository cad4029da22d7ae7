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

use super::index::Bm25Index;

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
