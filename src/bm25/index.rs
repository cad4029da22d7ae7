//! [`Bm25Index`]: a versioned BM25 index made of immutable segments (see the module docs of
//! [`crate::bm25`] for the design and the cost of each operation).

use std::sync::Arc;

use serde::Serialize;

use super::analyze::analyze;
use super::builder::Builder;
use super::config::IndexConfig;
use super::document::Document;
use super::error::Bm25Error;
use super::hash::StrState;
use super::merge::{MERGE_FACTOR, merge, next_merge};
use super::postings::accumulate;
use super::prune::{PRUNE_MIN_SLOTS, Pruned};
use super::query::{Corpus, HashedQuery};
use super::query::{Prepared, QueryTerm};
use super::scoring::Explanation;
use super::scratch::{Split, with_scratch};
use super::segment::{Attachment, Segment};
use super::tombstones::Tombstones;
use super::topk::TopK;

/// Slots left behind by removals and replacements that are tolerated before [`Bm25Index`]
/// renumbers its documents, beyond one per [`DEAD_SHARE`] live documents.
const SLOT_SLACK: usize = 256;

/// A renumbering (a merge of everything) is due once removals and replacements left more than
/// one dead slot per `DEAD_SHARE` live documents (plus [`SLOT_SLACK`]). A removed document
/// keeps its postings until a merge meets its removal record, and queries still walk them, so
/// under steady upserts an index of N documents used to carry up to N dead ones (the bound was
/// one per live document): selects on a 10,000-tool store slowed by a fifth over 9,000
/// upserts. At one in 8 they hold steady, for a merge of everything every ~1,500 upserts at
/// that size (about 17 ms) that the cheaper merges of a cleaner index pay for (mean upsert
/// 64.7 µs against 67.3; one in 4: 63.5 µs, selects ~8% slower than at one in 8).
const DEAD_SHARE: usize = 8;

/// One search result: a document's key and its score (always > 0).
///
/// ```
/// use capstore::bm25::{Bm25Index, Document, IndexConfig};
///
/// let mut index = Bm25Index::new(IndexConfig::default())?;
/// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
/// let hit = &index.search(&["x"], 1)[0];
/// assert_eq!(&*hit.key, "a");
/// assert!(hit.score > 0.0);
/// # Ok::<(), capstore::bm25::Bm25Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The document's key.
    pub key: Arc<str>,
    /// Its BM25 score for the query.
    pub score: f32,
}

/// A search result borrowed from the index: the document's stored key (not shared, so no
/// reference count is touched until a caller keeps it), its attachment and its score. A
/// selection searches for up to two dozen tools and sends about ten: sharing each hit's key
/// and dropping it again were two atomic operations per hit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHit<'i> {
    /// The document's stored key.
    pub key: &'i Arc<str>,
    /// Its BM25 score for the query.
    pub score: f32,
    /// What the document was inserted with ([`Bm25Index::insert_attached`]); `None` for a
    /// document inserted by [`Bm25Index::insert`].
    pub attachment: Option<&'i Attachment>,
}

/// Makes the [`Hit`] of document `doc` of `seg`, sharing the stored key.
fn shared_hit(seg: &Segment, doc: usize, score: f32) -> Option<Hit> {
    Some(Hit {
        key: Arc::clone(seg.key(doc)?),
        score,
    })
}

/// Makes the [`KeyHit`] of document `doc` of `seg`.
fn key_hit(seg: &Segment, doc: usize, score: f32) -> Option<KeyHit<'_>> {
    Some(KeyHit {
        key: seg.key(doc)?,
        score,
        attachment: seg.attachment(doc),
    })
}

/// The corpus statistics BM25 uses, exact for the index version they come from.
///
/// ```
/// use capstore::bm25::{Bm25Index, Document, IndexConfig};
///
/// let mut index = Bm25Index::new(IndexConfig::default())?;
/// index.insert("a", &Document::new().with_field("f", vec!["x".into(), "y".into()]));
/// index.insert("b", &Document::new().with_field("f", vec!["x".into()]));
/// let stats = index.stats();
/// assert_eq!((stats.n_docs, stats.total_len, stats.avgdl), (2, 3.0, 1.5));
/// # Ok::<(), capstore::bm25::Bm25Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CorpusStats {
    /// `N`: the number of documents.
    pub n_docs: u64,
    /// The sum of the documents' (field-weighted) lengths.
    pub total_len: f64,
    /// `avgdl = total_len / n_docs`, 0 when the index is empty.
    pub avgdl: f32,
}

/// A BM25 index whose every version is a value: `clone` is O(1) and the clone and the original
/// then evolve independently, so a store can keep one version per snapshot and give each write
/// transaction its own.
///
/// Documents are keyed by string; [`insert`](Self::insert) replaces any document with the same
/// key. Queries are lists of terms produced by the same [`crate::bm25::Tokenizer`] as the
/// documents. `N`, `avgdl` and every `doc_freq` are exact for the current version whatever the
/// history of writes, and scores are never NaN.
///
/// ```
/// use capstore::bm25::{Bm25Index, Document, IndexConfig, Tokenizer};
///
/// let tokenizer = Tokenizer::default();
/// let doc = |name: &str, text: &str| {
///     Document::new()
///         .with_field("name", tokenizer.tokenize(name))
///         .with_field("description", tokenizer.tokenize(text))
/// };
/// let mut index = Bm25Index::new(IndexConfig::default())?;
/// index.insert("get_weather", &doc("get_weather", "Current weather for a city"));
/// index.insert("read_file", &doc("read_file", "Read a file from disk"));
///
/// let snapshot = index.clone(); // O(1)
/// index.remove("read_file");
///
/// let query = tokenizer.tokenize("read the file");
/// assert!(index.search(&query, 10).is_empty());
/// assert_eq!(&*snapshot.search(&query, 10)[0].key, "read_file");
/// # Ok::<(), capstore::bm25::Bm25Error>(())
/// ```
///
/// Sharp edges: a write that completes a run of segments merges them, so a few writes cost
/// more than the rest (the largest merge rebuilds the whole index; see [`crate::bm25`] for the
/// numbers). Under removals and replacements, the write that leaves more than one dead document
/// per 8 live ones (plus 256) merges everything: about 17 ms at 10,000 tool-like documents,
/// once every ~1,500 upserts at that size. Each thread keeps one `f32` per document slot as
/// query scratch.
#[derive(Clone)]
pub struct Bm25Index {
    pub(super) config: Arc<IndexConfig>,
    merge_factor: usize,
    /// Queries prune (`prune.rs`) once the index has this many slots.
    prune_min_slots: usize,
    /// Oldest first; their slot ranges are consecutive.
    segments: Arc<Vec<Arc<Segment>>>,
    /// Slots of removed (or replaced) documents, whose postings may still be in a segment.
    dead: Tombstones,
    /// Live documents. A persistent hash map (HAMT) rather than the ordered map it was: every
    /// write path-copies it, and its narrow nodes copy cheaper than a B-tree's 64-wide ones
    /// (registering a tool into a 10k store: 59-60 -> 55 us, pinned stand-alone loop); only
    /// [`Self::keys`] needs an order, and sorts.
    pub(super) slots:
        imbl::GenericHashMap<Arc<str>, u32, StrState, imbl::shared_ptr::DefaultSharedPtr>,
    /// The next slot to allocate: slots are never reused until [`Self::compact`] renumbers.
    pub(super) next_slot: u32,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sizes: Vec<usize> = self.segments.iter().map(|s| s.records()).collect();
        f.debug_struct("Bm25Index")
            .field("config", &self.config)
            .field("docs", &self.slots.len())
            .field("slots", &self.next_slot)
            .field("segment_records", &sizes)
            .finish()
    }
}

impl Bm25Index {
    /// An empty index, after checking `config` ([`IndexConfig::validate`]).
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Bm25Params, IndexConfig};
    ///
    /// assert!(Bm25Index::new(IndexConfig::default()).is_ok());
    /// let bad = IndexConfig { params: Bm25Params { k1: -1.0, b: 0.5 }, ..IndexConfig::default() };
    /// assert!(Bm25Index::new(bad).is_err());
    /// ```
    pub fn new(config: IndexConfig) -> Result<Self, Bm25Error> {
        config.validate()?;
        Ok(Self {
            config: Arc::new(config),
            merge_factor: MERGE_FACTOR,
            prune_min_slots: PRUNE_MIN_SLOTS,
            segments: Arc::default(),
            dead: Tombstones::default(),
            slots: imbl::GenericHashMap::default(),
            next_slot: 0,
        })
    }

    /// Sets how many segments of one size class a merge takes (at least 2; 3 by default). 2
    /// merges most often: tests use it to exercise merges in short sequences.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, IndexConfig};
    ///
    /// let index = Bm25Index::new(IndexConfig::default())?.with_merge_factor(2);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    #[doc(hidden)]
    pub fn with_merge_factor(mut self, factor: usize) -> Self {
        self.merge_factor = factor.max(2);
        self
    }

    /// Sets from how many document slots on top-k queries prune (MaxScore, see the module docs
    /// of [`crate::bm25`]): `search`, `search_weighted_all` and selections without a filter.
    /// The hits are the same either way, to the bit; only the time differs. The default,
    /// 200,000, leaves small indexes on the plain path, which is as fast there; 0 prunes
    /// every query (tests compare both paths), `usize::MAX` none.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut plain = Bm25Index::new(IndexConfig::default())?.with_pruning_from(usize::MAX);
    /// for (key, text) in [("a", "x y"), ("b", "x"), ("c", "y z z")] {
    ///     let terms = text.split(' ').map(String::from).collect();
    ///     plain.insert(key, &Document::new().with_field("f", terms));
    /// }
    /// let pruned = plain.clone().with_pruning_from(0);
    /// assert_eq!(pruned.search(&["x", "y", "z"], 2), plain.search(&["x", "y", "z"], 2));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn with_pruning_from(mut self, slots: usize) -> Self {
        self.prune_min_slots = slots;
        self
    }

    /// The configuration in force.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, IndexConfig};
    ///
    /// let index = Bm25Index::new(IndexConfig::default())?;
    /// assert_eq!(index.config(), &IndexConfig::default());
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn config(&self) -> &IndexConfig {
        &self.config
    }

    /// Adds `doc` under `key`, replacing any document already there.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["old".into()]));
    /// index.insert("a", &Document::new().with_field("f", vec!["new".into()]));
    /// assert_eq!(index.len(), 1);
    /// assert_eq!(index.doc_freq("old"), 0);
    /// assert_eq!(index.doc_freq("new"), 1);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn insert(&mut self, key: &str, doc: &Document) {
        self.insert_attached(key, doc, None);
    }

    /// [`insert`](Self::insert), keeping `attachment` with the document: its search hits
    /// ([`KeyHit`]) carry it until the document is replaced or removed. The store passes each
    /// record's row, so a selection reaches the records of its hits without looking them up.
    pub(crate) fn insert_attached(
        &mut self,
        key: &str,
        doc: &Document,
        attachment: Option<Attachment>,
    ) {
        if self.next_slot == u32::MAX {
            // Four billion writes since the last renumbering: renumber rather than overflow.
            self.renumber();
        }
        let analyzed = analyze(doc, &self.config);
        let slot = self.next_slot;
        self.next_slot += 1;
        let mut b = Builder::new(slot, slot + 1);
        let bytes = analyzed.terms.iter().map(|t| t.text.len()).sum();
        b.reserve_terms(analyzed.terms.len(), bytes);
        let key = match self.slots.get_key_value(key) {
            Some((existing, &old)) => {
                let existing = Arc::clone(existing);
                self.record_removal(&mut b, old);
                existing
            }
            None => Arc::from(key),
        };
        let ids = b.push_terms(&analyzed);
        // The list becomes the segment's (not copied into a list of its own): an insert makes
        // one allocation fewer, the one its attachment list takes.
        b.add_doc_terms(ids);
        b.push_doc(slot, Arc::clone(&key), attachment, analyzed.len, []);
        self.slots.insert(key, slot);
        self.append(b.finish());
    }

    /// Removes the document under `key`; returns whether there was one.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new());
    /// assert!(index.remove("a"));
    /// assert!(!index.remove("a"));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn remove(&mut self, key: &str) -> bool {
        let Some(slot) = self.slots.remove(key) else {
            return false;
        };
        let mut b = Builder::new(self.next_slot, self.next_slot);
        self.record_removal(&mut b, slot);
        self.append(b.finish());
        true
    }

    /// Tombstones `slot` and records its removal (length and terms) in the segment being built.
    pub(super) fn record_removal(&mut self, b: &mut Builder, slot: u32) {
        self.dead.insert(slot);
        if let Some((seg, doc)) = self.locate(slot) {
            let len = seg.doc_len(doc).unwrap_or(0.0);
            let terms = seg.doc_terms(doc);
            b.reserve_terms(terms.len(), terms.len() * 8);
            let ids: Vec<u32> = terms
                .map(|id| b.intern(seg.term(id), seg.hash(id)))
                .collect();
            b.negative(slot, len, ids);
        }
    }

    /// Adds a freshly written segment, then merges as the policy says and renumbers slots if
    /// removals left too many behind.
    pub(super) fn append(&mut self, segment: Segment) {
        let segments = Arc::make_mut(&mut self.segments);
        segments.push(Arc::new(segment));
        while let Some(run) = next_merge(segments, self.merge_factor) {
            let merged = merge(segments.get(run.clone()).unwrap_or_default(), &self.dead);
            segments.splice(run, [Arc::new(merged)]);
        }
        if self.renumber_due() {
            self.renumber();
        }
    }

    /// Whether removals left enough dead slots behind to merge everything (see [`DEAD_SHARE`]).
    fn renumber_due(&self) -> bool {
        let live = self.slots.len();
        self.next_slot as usize > live + live / DEAD_SHARE + SLOT_SLACK
    }

    /// Whether a document is stored under `key`.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new());
    /// assert!(index.contains("a") && !index.contains("b"));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn contains(&self, key: &str) -> bool {
        self.slots.contains_key(key)
    }

    /// The number of documents.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new());
    /// assert_eq!(index.len(), 1);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the index holds no document.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, IndexConfig};
    ///
    /// assert!(Bm25Index::new(IndexConfig::default())?.is_empty());
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// How many slots have been handed out since the last renumbering (tests check that
    /// one happened).
    #[cfg(test)]
    pub(crate) fn slots_allocated(&self) -> u32 {
        self.next_slot
    }

    /// `N`, the total length and `avgdl` of this version.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, IndexConfig};
    ///
    /// let stats = Bm25Index::new(IndexConfig::default())?.stats();
    /// assert_eq!((stats.n_docs, stats.avgdl), (0, 0.0));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn stats(&self) -> CorpusStats {
        let n_docs = self.slots.len() as u64;
        // Each segment sums its own lengths minus those of the removals it records, so the
        // total is a sum of a few terms, not a running sum that drifts with every write.
        let total_len = if n_docs == 0 {
            0.0
        } else {
            self.segments
                .iter()
                .map(|s| s.live_len)
                .sum::<f64>()
                .max(0.0)
        };
        let avgdl = if n_docs == 0 {
            0.0
        } else {
            (total_len / n_docs as f64) as f32
        };
        CorpusStats {
            n_docs,
            total_len,
            avgdl,
        }
    }

    /// The number of documents containing `term` (with a positive field weight).
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into(), "x".into()]));
    /// index.insert("b", &Document::new().with_field("f", vec!["x".into()]));
    /// assert_eq!(index.doc_freq("x"), 2);
    /// assert_eq!(index.doc_freq("y"), 0);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn doc_freq(&self, term: &str) -> u64 {
        self.corpus().doc_freq(term)
    }

    /// The (field-weighted) length of `key`'s document.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut config = IndexConfig::default();
    /// config.field_weights.insert("name".into(), 2.0);
    /// let mut index = Bm25Index::new(config)?;
    /// index.insert("a", &Document::new().with_field("name", vec!["x".into()]).with_field("d", vec!["y".into()]));
    /// assert_eq!(index.doc_len("a"), Some(3.0));
    /// assert_eq!(index.doc_len("b"), None);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn doc_len(&self, key: &str) -> Option<f32> {
        let (seg, doc) = self.locate(*self.slots.get(key)?)?;
        seg.doc_len(doc)
    }

    /// The keys of all documents, sorted.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("b", &Document::new());
    /// index.insert("a", &Document::new());
    /// let keys: Vec<String> = index.keys().iter().map(|k| k.to_string()).collect();
    /// assert_eq!(keys, ["a", "b"]);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn keys(&self) -> Vec<Arc<str>> {
        let mut keys: Vec<Arc<str>> = self.slots.keys().cloned().collect();
        keys.sort_unstable();
        keys
    }

    /// The `k` best documents for `query` (a list of terms; a repeated term counts once per
    /// occurrence), by score descending then key ascending. Only documents matching at least one
    /// term are returned; `k = 0`, an empty query or unknown terms give an empty list.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("b", &Document::new().with_field("f", vec!["x".into()]));
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// index.insert("c", &Document::new().with_field("f", vec!["y".into()]));
    /// let keys: Vec<String> = index.search(&["x"], 10).iter().map(|h| h.key.to_string()).collect();
    /// assert_eq!(keys, ["a", "b"]); // tied scores: by key
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn search<S: AsRef<str>>(&self, query: &[S], k: usize) -> Vec<Hit> {
        self.run(
            query.len(),
            |i| (term_at(query, i), 1.0),
            k,
            None,
            shared_hit,
        )
    }

    /// [`search`](Self::search) among the documents whose key `keep` accepts. `keep` runs only
    /// on documents good enough to enter the current top `k`, so it may be a costly check.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// index.insert("b", &Document::new().with_field("f", vec!["x".into()]));
    /// let hits = index.search_filtered(&["x"], 10, |key| key != "a");
    /// assert_eq!(hits.len(), 1);
    /// assert_eq!(&*hits[0].key, "b");
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn search_filtered<S: AsRef<str>>(
        &self,
        query: &[S],
        k: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<Hit> {
        self.run(
            query.len(),
            |i| (term_at(query, i), 1.0),
            k,
            Some(&keep),
            shared_hit,
        )
    }

    /// [`search_filtered`](Self::search_filtered) for a weighted query: each (term, weight)
    /// occurrence adds its weight (instead of 1) to the term's multiplier, so a query can mix,
    /// say, the latest message at weight 1 with earlier turns at 0.5. Terms whose total weight
    /// is not positive are left out.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// index.insert("b", &Document::new().with_field("f", vec!["y".into()]));
    /// let query = [("x", 0.5), ("y", 2.0)];
    /// let hits = index.search_weighted(&query, 10, |_| true);
    /// assert_eq!(&*hits[0].key, "b");
    /// // Weight 1 per occurrence is the plain query.
    /// assert_eq!(index.search_weighted(&[("x", 1.0), ("x", 1.0)], 1, |_| true), index.search(&["x", "x"], 1));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn search_weighted<S: AsRef<str>>(
        &self,
        query: &[(S, f32)],
        k: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<Hit> {
        self.run(
            query.len(),
            |i| weighted_at(query, i),
            k,
            Some(&keep),
            shared_hit,
        )
    }

    /// [`search_weighted`](Self::search_weighted) among all documents, without a `keep`
    /// filter: the same hits as `search_weighted(query, k, |_| true)`, cheaper, since a filter
    /// costs a key look-up (two binary searches) and a call for every candidate that could
    /// enter the top `k` (at k = 24, a twentieth of a `ContextBuilder` selection on MetaTool).
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// index.insert("b", &Document::new().with_field("f", vec!["y".into()]));
    /// let query = [("x", 0.5), ("y", 2.0)];
    /// let hits = index.search_weighted_all(&query, 10);
    /// assert_eq!(&*hits[0].key, "b");
    /// assert_eq!(hits, index.search_weighted(&query, 10, |_| true));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn search_weighted_all<S: AsRef<str>>(&self, query: &[(S, f32)], k: usize) -> Vec<Hit> {
        self.run(query.len(), |i| weighted_at(query, i), k, None, shared_hit)
    }

    /// Prepares the query (`len` tokens, token `i` being `token(i)` = (text, weight)) in the
    /// thread's scratch, scores every posting of its terms into the scratch's dense score
    /// array, then selects the top `k`, each made by `make` from its segment, its index there
    /// and its score.
    fn run<'s, 'q, T>(
        &'s self,
        len: usize,
        token: impl Fn(usize) -> (&'q str, f32),
        k: usize,
        keep: Option<&dyn Fn(&str) -> bool>,
        make: impl Fn(&'s Segment, usize, f32) -> Option<T>,
    ) -> Vec<T> {
        if k == 0 || len == 0 {
            return Vec::new();
        }
        let prepare =
            |corpus: &Corpus<'_>, out: &mut Prepared| corpus.prepare_into(out, len, token);
        self.run_prepared(prepare, k, keep, make)
    }

    /// [`search_weighted`](Self::search_weighted) (with `keep`) or
    /// [`search_weighted_all`](Self::search_weighted_all) (without) of a query hashed and
    /// ordered once for several indexes (see [`HashedQuery`]): the same hits, their keys
    /// borrowed.
    pub(crate) fn search_hashed_keys(
        &self,
        query: &HashedQuery<'_>,
        k: usize,
        keep: Option<&dyn Fn(&str) -> bool>,
    ) -> Vec<KeyHit<'_>> {
        if k == 0 || query.len() == 0 {
            return Vec::new();
        }
        let prepare =
            |corpus: &Corpus<'_>, out: &mut Prepared| corpus.prepare_hashed_into(out, query);
        self.run_prepared(prepare, k, keep, key_hit)
    }

    /// [`Self::run`] of a query that `prepare` prepares in the scratch.
    fn run_prepared<'s, T>(
        &'s self,
        prepare: impl FnOnce(&Corpus<'_>, &mut Prepared),
        k: usize,
        keep: Option<&dyn Fn(&str) -> bool>,
        make: impl Fn(&'s Segment, usize, f32) -> Option<T>,
    ) -> Vec<T> {
        with_scratch(|scratch| {
            prepare(&self.corpus(), &mut scratch.query);
            if scratch.query.terms.is_empty() {
                return Vec::new();
            }
            let Split {
                query,
                scores,
                top,
                touched,
                prune,
            } = scratch.split(self.next_slot as usize);
            // A large index prunes (`prune.rs`): the same hits. Not under a `keep` filter,
            // whose rejections would have to be known to bound the k-th score.
            if keep.is_none() && scores.len() >= self.prune_min_slots {
                let pruned = Pruned {
                    segments: &self.segments,
                    dead: &self.dead,
                };
                if pruned.candidates(query, k, scores, touched, prune) {
                    let mut top = TopK::new(k, top);
                    let key = |slot: u32| self.key_of(slot);
                    for &(s, slot) in &prune.candidates {
                        if s > 0.0 && top.admits(s) {
                            top.push(s, slot, &key);
                        }
                    }
                    return self.hits(top, make);
                }
            }
            let lists = || {
                query.terms.iter().flat_map(|t| {
                    query.found(t).iter().filter_map(|&(seg, id)| {
                        let seg = self.segments.get(seg)?;
                        Some((seg, id, &t.scorer))
                    })
                })
            };
            // A query whose postings are few against the slots (a short message over a small
            // catalog: MetaTool's median touches 21 of 199 tools) offers only the slots its
            // postings touched, where the scan reads every slot. Not under a `keep` filter:
            // which candidates it sees depends on the order they come in.
            let postings: usize = lists().map(|(seg, id, _)| seg.postings_len(id)).sum();
            let sparse = keep.is_none() && postings.saturating_mul(SPARSE_RATIO) <= scores.len();
            for (seg, id, scorer) in lists() {
                let list = seg.postings(id);
                accumulate(scores, list, scorer);
                if sparse {
                    list.push_slots(touched);
                }
            }
            if sparse {
                self.select_touched(scores, touched, k, top, make)
            } else {
                self.select(scores, k, keep, top, make)
            }
        })
    }

    /// Runs `f` on the prepared query (in the thread's scratch).
    fn with_prepared<'q, R>(
        &self,
        len: usize,
        token: impl Fn(usize) -> (&'q str, f32),
        f: impl FnOnce(&Prepared) -> R,
    ) -> R {
        with_scratch(|scratch| {
            self.corpus().prepare_into(&mut scratch.query, len, token);
            f(&scratch.query)
        })
    }

    /// One pass over the dense scores: reset each to zero (the scratch buffer's invariant) and
    /// keep the `k` best live documents that `keep` accepts.
    fn select<'s, T>(
        &'s self,
        scores: &mut [f32],
        k: usize,
        keep: Option<&dyn Fn(&str) -> bool>,
        buffer: &mut Vec<(f32, u32)>,
        make: impl Fn(&'s Segment, usize, f32) -> Option<T>,
    ) -> Vec<T> {
        let mut top = TopK::new(k, buffer);
        let scores_len = scores.len();
        // Chunks as arrays, whose clearing is a few stores where a slice's called `memset`; the
        // last, shorter one scanned from a copy padded with zeros (never candidates).
        let mut chunks = scores.chunks_exact_mut(SELECT_CHUNK);
        for (c, chunk) in chunks.by_ref().enumerate() {
            if let Ok(chunk) = <&mut [f32; SELECT_CHUNK]>::try_from(chunk) {
                let base = c * SELECT_CHUNK;
                self.offer_chunk(&mut top, chunk, |i| base + i, keep);
                chunk.fill(0.0);
            }
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let mut last = [0.0; SELECT_CHUNK];
            for (copy, score) in last.iter_mut().zip(rest.iter_mut()) {
                *copy = std::mem::take(score);
            }
            let base = scores_len - rest.len();
            self.offer_chunk(&mut top, &last, |i| base + i, keep);
        }
        self.hits(top, make)
    }

    /// [`Self::select`] without a `keep` filter, offered only the `touched` slots (every slot
    /// with a score, some more than once): the same hits, since they do not depend on the
    /// order of offering (ties go by key). The slots' scores are taken (reset to zero) a chunk
    /// at a time, a slot met again reading zero; `touched` is left empty.
    fn select_touched<'s, T>(
        &'s self,
        scores: &mut [f32],
        touched: &mut Vec<u32>,
        k: usize,
        buffer: &mut Vec<(f32, u32)>,
        make: impl Fn(&'s Segment, usize, f32) -> Option<T>,
    ) -> Vec<T> {
        let mut top = TopK::new(k, buffer);
        for slots in touched.chunks(SELECT_CHUNK) {
            // Padded with zeros (never candidates).
            let mut chunk = [0.0; SELECT_CHUNK];
            for (copy, &slot) in chunk.iter_mut().zip(slots) {
                *copy = scores.get_mut(slot as usize).map_or(0.0, std::mem::take);
            }
            let slot_at = |i: usize| slots.get(i).map_or(usize::MAX, |&slot| slot as usize);
            self.offer_chunk(&mut top, &chunk, slot_at, None);
        }
        // Never longer than a fraction of the score array, which the scratch keeps too.
        touched.clear();
        self.hits(top, make)
    }

    /// Offers `top` the documents of `chunk` (the scores of the slots `slot_at(0..)`) that are
    /// live, accepted by `keep` and could enter.
    #[inline(always)]
    fn offer_chunk<'s>(
        &'s self,
        top: &mut TopK<'_>,
        chunk: &[f32; SELECT_CHUNK],
        slot_at: impl Fn(usize) -> usize,
        keep: Option<&dyn Fn(&str) -> bool>,
    ) {
        // Most chunks hold no candidate once the top k is warm: tested without a branch per
        // score (the compares vectorise). A branch per score mispredicted on every other
        // matching document of a long query: two thirds of a query's mispredictions on
        // Seal-Tools.
        let threshold = top.threshold();
        // A matching document whose score can enter the top k as it stands.
        let candidate = |s: f32| (s > 0.0) & (s >= threshold);
        let candidates = chunk.iter().fold(0u32, |n, &s| n + u32::from(candidate(s)));
        if candidates == 0 {
            return;
        }
        // The chunk's candidates, gathered without a branch per score: a branch taken for
        // about every other score of a chunk that holds any mispredicted as often (a fifth of
        // a MetaTool selection's top-k scan under `perf`).
        let mut gathered = [(0.0f32, 0usize); SELECT_CHUNK];
        let mut found = 0usize;
        for (i, &s) in chunk.iter().enumerate() {
            // `found` <= `i` < SELECT_CHUNK: the remainder only spares a bounds check.
            gathered[found % SELECT_CHUNK] = (s, i);
            found += usize::from(candidate(s));
        }
        let key = |slot: u32| self.key_of(slot);
        let check_dead = !self.dead.is_empty();
        for &(s, i) in gathered.iter().take(found) {
            if top.admits(s) {
                let slot = u32::try_from(slot_at(i)).unwrap_or(u32::MAX);
                if check_dead && self.dead.contains(slot) {
                    continue;
                }
                if let Some(keep) = keep
                    && !key(slot).is_some_and(|key| keep(key))
                {
                    continue;
                }
                top.push(s, slot, &key);
            }
        }
    }

    /// The key of the document at `slot`.
    fn key_of(&self, slot: u32) -> Option<&Arc<str>> {
        self.locate(slot).and_then(|(seg, doc)| seg.key(doc))
    }

    /// The hits of `top`, best first, each made by `make`.
    fn hits<'s, T>(
        &'s self,
        top: TopK<'_>,
        make: impl Fn(&'s Segment, usize, f32) -> Option<T>,
    ) -> Vec<T> {
        top.into_hits(&|slot| self.key_of(slot), |slot, score| {
            let (seg, doc) = self.locate(slot)?;
            make(seg, doc, score)
        })
    }

    /// `key`'s score for `query`, exactly as [`search`](Self::search) reports it (0 when it
    /// matches no term); `None` if there is no such document.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// index.insert("b", &Document::new().with_field("f", vec!["y".into()]));
    /// assert_eq!(index.score("a", &["x"]), Some(index.search(&["x"], 1)[0].score));
    /// assert_eq!(index.score("b", &["x"]), Some(0.0));
    /// assert_eq!(index.score("c", &["x"]), None);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn score<S: AsRef<str>>(&self, key: &str, query: &[S]) -> Option<f32> {
        self.with_prepared(
            query.len(),
            |i| (term_at(query, i), 1.0),
            |prepared| self.score_prepared(key, prepared),
        )
    }

    /// [`score`](Self::score) for a weighted query (see
    /// [`search_weighted`](Self::search_weighted)).
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// let once = index.score("a", &["x"]).unwrap();
    /// let half = index.score_weighted("a", &[("x", 0.5)]).unwrap();
    /// assert!((half - once / 2.0).abs() < 1e-6);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn score_weighted<S: AsRef<str>>(&self, key: &str, query: &[(S, f32)]) -> Option<f32> {
        self.with_prepared(
            query.len(),
            |i| weighted_at(query, i),
            |prepared| self.score_prepared(key, prepared),
        )
    }

    fn score_prepared(&self, key: &str, query: &Prepared) -> Option<f32> {
        let slot = *self.slots.get(key)?;
        let dl = self.locate(slot).and_then(|(seg, doc)| seg.doc_len(doc))?;
        let mut total = 0.0f32;
        for t in &query.terms {
            if let Some(tf) = self.tf(query, t, slot) {
                total += t.scorer.score(tf, dl);
            }
        }
        Some(total)
    }

    /// Why `key` scores what it does for `query`: each matching term's contribution and the
    /// inputs of the formula; `None` if there is no such document.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into(), "y".into()]));
    /// index.insert("b", &Document::new().with_field("f", vec!["y".into()]));
    /// let e = index.explain("a", &["x", "y", "z"]).unwrap();
    /// assert_eq!(e.terms.len(), 2);
    /// let sum: f32 = e.terms.iter().map(|t| t.score).sum();
    /// assert!((sum - e.score).abs() < 1e-6);
    /// assert_eq!(Some(e.score), index.score("a", &["x", "y", "z"]));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn explain<S: AsRef<str>>(&self, key: &str, query: &[S]) -> Option<Explanation> {
        let text = |i| term_at(query, i);
        self.with_prepared(
            query.len(),
            |i| (text(i), 1.0),
            |prepared| self.explain_prepared(key, prepared, text),
        )
    }

    /// [`explain`](Self::explain) for a weighted query (see
    /// [`search_weighted`](Self::search_weighted)); each term reports its total weight.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// let e = index.explain_weighted("a", &[("x", 0.25), ("x", 0.5)]).unwrap();
    /// assert_eq!((e.terms[0].query_count, e.terms[0].query_weight), (2, 0.75));
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn explain_weighted<S: AsRef<str>>(
        &self,
        key: &str,
        query: &[(S, f32)],
    ) -> Option<Explanation> {
        self.with_prepared(
            query.len(),
            |i| weighted_at(query, i),
            |prepared| self.explain_prepared(key, prepared, |i| weighted_at(query, i).0),
        )
    }

    /// [`explain_weighted`](Self::explain_weighted) of many documents for one query: the
    /// query prepared once (its terms hashed, grouped and looked up in each segment), where
    /// each `explain_weighted` prepares it again, which cost a selection that explains its
    /// two dozen tools more than the rest of it on a long message. The same explanations, to
    /// the bit.
    pub(crate) fn query_explainer<'q>(
        &self,
        query: &'q [(&'q str, f32)],
    ) -> QueryExplainer<'_, 'q> {
        let mut prepared = Prepared::new();
        self.corpus()
            .prepare_into(&mut prepared, query.len(), |i| weighted_at(query, i));
        QueryExplainer {
            index: self,
            query,
            prepared,
        }
    }

    /// [`Self::explain`] of a prepared query whose token `i` has the text `text(i)`.
    fn explain_prepared<'q>(
        &self,
        key: &str,
        query: &Prepared,
        text: impl Fn(usize) -> &'q str,
    ) -> Option<Explanation> {
        let (key, &slot) = self.slots.get_key_value(key)?;
        let dl = self.locate(slot).and_then(|(seg, doc)| seg.doc_len(doc))?;
        let mut score = 0.0f32;
        let mut explained = Vec::new();
        for t in &query.terms {
            if let Some(tf) = self.tf(query, t, slot) {
                let term = t.scorer.explain(text(t.token), tf, dl);
                score += term.score;
                explained.push(term);
            }
        }
        Some(Explanation {
            key: Arc::clone(key),
            score,
            terms: explained,
            params: self.config.params,
        })
    }

    /// Merges every segment into one and renumbers the slots densely (otherwise merges happen
    /// as writes complete runs of segments). Results do not change; later queries may run
    /// faster. O(total postings).
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// let before = index.search(&["x"], 1);
    /// index.compact();
    /// assert_eq!(index.search(&["x"], 1), before);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn compact(&mut self) {
        let clean = self.segments.len() <= 1
            && self.dead.is_empty()
            && self.next_slot as usize == self.slots.len();
        if !clean {
            self.renumber();
        }
    }

    /// How many segments the index holds: each write adds one and merges fold them together
    /// (see the module docs); a query probes each segment's dictionary once per term.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Index, Document, IndexConfig};
    ///
    /// let mut index = Bm25Index::new(IndexConfig::default())?;
    /// index.insert("a", &Document::new().with_field("f", vec!["x".into()]));
    /// index.insert("b", &Document::new().with_field("f", vec!["y".into()]));
    /// assert_eq!(index.segment_count(), 2);
    /// index.compact();
    /// assert_eq!(index.segment_count(), 1);
    /// # Ok::<(), capstore::bm25::Bm25Error>(())
    /// ```
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Merges all segments into one (which drops every removed document, since every removal
    /// record meets its document) and gives the live documents slots `0..len`.
    pub(super) fn renumber(&mut self) {
        let merged = merge(&self.segments, &self.dead);
        let mut slot_of = vec![u32::MAX; self.next_slot as usize];
        for (new, &old) in merged.slots.iter().enumerate() {
            if let Some(s) = slot_of.get_mut(old as usize) {
                *s = u32::try_from(new).unwrap_or(u32::MAX);
            }
        }
        let segment = merged.renumbered(&slot_of);
        self.next_slot = segment.hi;
        self.slots = segment
            .keys
            .iter()
            .zip(&segment.slots)
            .map(|(key, &slot)| (Arc::clone(key), slot))
            .collect();
        self.dead = Tombstones::default();
        self.segments = Arc::new(if segment.records() == 0 {
            Vec::new()
        } else {
            vec![Arc::new(segment)]
        });
    }

    fn corpus(&self) -> Corpus<'_> {
        let stats = self.stats();
        Corpus {
            params: self.config.params,
            segments: &self.segments,
            n_docs: stats.n_docs,
            avgdl: stats.avgdl,
        }
    }

    /// The segment holding the document at `slot`, and its index there.
    #[inline]
    fn locate(&self, slot: u32) -> Option<(&Segment, usize)> {
        let seg = match &self.segments[..] {
            // A compacted or bulk-loaded index (a store's, once settled) has one segment: no
            // search.
            [only] => only,
            segments => segments.get(segments.partition_point(|s| s.hi <= slot))?,
        };
        Some((seg, seg.doc(slot)?))
    }

    /// The attachment of the document under `key`, if it has one.
    #[cfg(test)]
    pub(crate) fn attachment(&self, key: &str) -> Option<&Attachment> {
        self.attached(key).map(|(_, attachment)| attachment)
    }

    /// The stored key and the attachment of the document under `key`, if there is one and it
    /// has an attachment: a hash look-up.
    #[inline]
    pub(crate) fn attached(&self, key: &str) -> Option<(&Arc<str>, &Attachment)> {
        let (seg, doc) = self.locate(*self.slots.get(key)?)?;
        Some((seg.key(doc)?, seg.attachment(doc)?))
    }

    /// The frequency of query term `t` in the document at `slot`, if it contains it.
    fn tf(&self, query: &Prepared, t: &QueryTerm, slot: u32) -> Option<f32> {
        let at = self.segments.partition_point(|s| s.hi <= slot);
        let &(_, id) = query.found(t).iter().find(|&&(seg, _)| seg == at)?;
        self.segments.get(at)?.tf(id, slot)
    }
}

/// A query is sparse (offers only the slots its postings touch) when its postings, times this,
/// are at most the number of slots. Measured (callgrind, per selection): at 2, MetaTool ran
/// 30.8k instructions (32.2k scanning) but ToolBench's mid-sized queries mispredicted 60 more
/// branches than scanning; at 4, MetaTool 30.9k and ToolBench as scanning; at 8, MetaTool 31.5k.
const SPARSE_RATIO: usize = 4;

/// Scores the top-k scan tests together before looking at any one of them.
const SELECT_CHUNK: usize = 16;

/// The text of token `i` of a plain query (`i` is always in range; "" otherwise).
#[inline]
fn term_at<S: AsRef<str>>(query: &[S], i: usize) -> &str {
    query.get(i).map_or("", AsRef::as_ref)
}

/// A weighted query prepared against one version of an index, to explain its documents'
/// scores ([`Bm25Index::query_explainer`]).
pub(crate) struct QueryExplainer<'i, 'q> {
    index: &'i Bm25Index,
    query: &'q [(&'q str, f32)],
    prepared: Prepared,
}

impl QueryExplainer<'_, '_> {
    /// What [`Bm25Index::explain_weighted`] of `key` and the query gives.
    pub(crate) fn explain(&self, key: &str) -> Option<Explanation> {
        self.index
            .explain_prepared(key, &self.prepared, |i| weighted_at(self.query, i).0)
    }
}

/// Token `i` of a weighted query: its text and weight.
#[inline]
fn weighted_at<S: AsRef<str>>(query: &[(S, f32)], i: usize) -> (&str, f32) {
    query.get(i).map_or(("", 0.0), |(t, w)| (t.as_ref(), *w))
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
