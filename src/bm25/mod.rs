//! BM25 text search whose index lives inside immutable, versioned snapshots.
//!
//! Text becomes terms with a [`Tokenizer`] (the same for documents and queries), terms are
//! grouped into named fields of a [`Document`], and a [`Bm25Index`] keyed by string ranks
//! documents for a query with Okapi BM25 ([`scoring`], with an [`Explanation`] of every score).
//! The module knows nothing of tools, skills or stores: documents, terms and scores only.
//!
//! ```
//! use capstore::bm25::{Bm25Index, Document, IndexConfig, Tokenizer};
//!
//! let tokenizer = Tokenizer::default();
//! let mut index = Bm25Index::new(IndexConfig::default())?;
//! for (name, text) in [("get_weather", "Current weather for a city"), ("read_file", "Read a file")] {
//!     let doc = Document::new()
//!         .with_field("name", tokenizer.tokenize(name))
//!         .with_field("description", tokenizer.tokenize(text));
//!     index.insert(name, &doc);
//! }
//! let hits = index.search(&tokenizer.tokenize("what's the weather in Paris?"), 5);
//! assert_eq!(&*hits[0].key, "get_weather");
//! # Ok::<(), capstore::bm25::Bm25Error>(())
//! ```
//!
//! # Design: segments, removal records, tombstones
//!
//! The store clones the index at every write transaction and every snapshot keeps its own, so
//! a clone must be O(1), a write must cost microseconds, and queries must run at the speed of
//! a flat inverted index. Measured on the benches' synthetic tool-like corpus (55 tokens and 45
//! distinct terms a document; one thread; see "Numbers" below):
//!
//! - Persistent postings (`imbl` maps of postings) iterate 2× (N = 100) to 10× (N = 100,000)
//!   slower than `Vec`s (DESIGN.md): postings must be flat.
//! - One flat frozen segment plus a persistent `imbl` delta (term → postings, per-term document
//!   frequency changes), the first design tried here, cost **107 µs per insert** into 10,000
//!   documents: updating one `imbl` map entry on a fresh clone copies its path, 0.7–1.3 µs, and a
//!   document has 45 terms. Any design that updates a persistent structure per term fails the
//!   "few microseconds" target.
//!
//! So a write touches no per-term shared structure. The index is a list of immutable **segments**
//! (as in Lucene, tantivy and LSM trees), each a flat inverted index behind an `Arc`
//! (`segment.rs`): a term dictionary keyed by the term's 64-bit hash (`term_table.rs`), postings
//! `(slot, tf, dl)` in one array laid out by term, each document's key and length, and each
//! document's term ids (so that a removal can name its terms). Inside the crate a document may
//! carry an opaque attachment, which its search hits hand back: the store attaches each
//! record's row, so a selection reaches the records of its hits without a look-up by key.
//!
//! - **Insert** builds a one-document segment (O(terms), no shared state) and appends it.
//! - **Remove** tombstones the slot in a bitset (for queries to skip) and appends a segment
//!   holding a **removal record**: the slot, length and terms of the removed document, counted
//!   per term as a negative document frequency. So `N`, `avgdl` and every `df` stay exact (sums
//!   over segments of `postings − removals`) without touching the old segment. An upsert does
//!   both in one segment.
//! - **Merges** follow the logarithmic method: when the newest `MERGE_FACTOR`
//!   (3) segments have the same size class (⌊log₃ records⌋), they become one; each document is
//!   merged about log₃ N times. A merge that takes in both a removed document and its removal
//!   record drops the pair. Slots never change, so the key → slot map needs no update; when
//!   removals leave more than one dead slot per 8 live documents (plus 256), or on
//!   [`Bm25Index::compact`], all segments merge into one and slots are renumbered densely (a
//!   removed document's postings stay, and queries walk them, until a merge drops them).
//! - **Queries** hash each distinct query term once, probe each segment's dictionary, sum
//!   `df`, then score every posting into a dense `f32` array indexed by slot with the length
//!   norm computed in the loop (`N`, `avgdl` and `df` change with every write, so nothing is
//!   precomputed per posting; DESIGN.md measured that computing the norm costs no more than
//!   reading a stored one), then one pass keeps the top k, skipping tombstones and looking up
//!   keys only for ties and the final k. The score array, the prepared terms and the top-k
//!   candidates live in a per-thread scratch (`scratch.rs`), so a query allocates once: its
//!   result.
//! - **Pruning** (`prune.rs`, from 200,000 slots, [`Bm25Index::with_pruning_from`]): at a
//!   million documents most of a query's postings belong to a few common words whose idf is
//!   near 0, and scoring them is most of the time. A top-k query without a `keep` filter then
//!   runs MaxScore (Turtle & Flood 1995, as Lucene's `MaxScoreBulkScorer`): terms by their
//!   bound `query_weight · idf · (k1 + 1)`, rarest first, are scored into the array until the
//!   bounds left fall below 0.3 of θ, the k-th best partial score (watched on the documents of
//!   the rarest terms); the terms left are only probed (galloping through their slot-sorted
//!   postings) for the documents that can still reach θ, which shrink as θ rises; the few
//!   finalists are rescored in the plain path's order, so the hits are the plain path's to the
//!   bit (`tests/bm25_prune.rs`, and `tests/bm25_model.rs` at every step). Below 200,000 slots
//!   the plain path is as fast (1.04× at 100,000 pruned) and is kept.
//!
//! # Operation costs
//!
//! N documents, S segments (about 2 log₃ N; 4 at N = 100, 7–10 at 10,000 to 100,000), t terms
//! in a document, q distinct terms in a query, P postings of the query's terms.
//!
//! | operation | cost |
//! |---|---|
//! | `clone` | O(1): a few `Arc` clones |
//! | `insert`, `remove` | O(t + log N), plus merges: amortised O(t log N), worst case one merge of everything, O(total postings) |
//! | `insert_many` of n documents | O(n·t + n log N): one segment built in one pass (`bulk.rs`), then at most the merges one write causes |
//! | `search`, `search_filtered`, `search_weighted` | O(q·S + P + N): probes, postings, one pass over the scores; `keep` runs only on documents entering the top k |
//! | the same, pruned (N ≥ 200,000, no `keep`) | O(q·S + P_e + N + C·log P): the essential terms' postings P_e, one pass gathering the C candidates, a galloping probe per candidate and common term (C falls as θ rises); a few thousand reads per θ estimate; no extra memory in the index, a few buffers per thread |
//! | `score`, `explain` (and `_weighted`) | O(q·S + q log N) |
//! | `stats` | O(S) |
//! | `doc_freq` | O(S) |
//! | `contains`, `doc_len` | O(log N) |
//! | `keys` | O(N) |
//! | `compact` | O(total postings + N log N) |
//!
//! # Numbers
//!
//! `cargo bench --bench bm25_search` on this (shared, 2-core) machine: the benches' synthetic
//! corpus (55 tokens and 45 distinct terms a document, queries of 23 tokens, no stop words), an
//! index built by inserting documents one at a time (not compacted), against the benches' flat
//! yardstick (postings in `Vec`s, dense scores, sorted top-k insert). One run (BENCHMARKS.md has
//! the details); the machine's speed drifts by tens of percent between runs.
//!
//! | | N = 100 | 1,000 | 10,000 | 100,000 |
//! |---|---|---|---|---|
//! | segments after N single inserts | 4 | 4 | 8 | 10 |
//! | top-10 query, flat yardstick (criterion) | 4.73 µs | 15.3 µs | 94.9 µs | 1.32 ms |
//! | top-10 query, this index | 6.88 µs (1.46×) | 16.1 µs (1.05×) | 161 µs (1.69×) | 1.41 ms (1.06×) |
//! | per-query p50, this index / flat | 1.35× | 1.08× | 1.65× | 1.21× |
//! | memory per document (flat: 808 / 618 B) | | | 1,362 B (985 B since) | 988 B |
//!
//! At N = 1,000,000 (issue 24; `BM25_BENCH_SIZES=…,1000000`, BENCHMARKS.md "BM25 search")
//! queries prune: per-query p50 5.59 ms against flat's 9.30 ms (0.60×; criterion 5.41 against
//! 9.26 ms), where the plain path gave 8.90 against 8.46 ms (1.05×). Pruning keeps no extra
//! data in the index (the bounds come from the query's idf); a query's cost is then the rare
//! terms' postings, one gathering pass over the score array, and a galloping probe per
//! candidate and common term.
//!
//! The 10,000 column was a slow draw: reruns of the same binary gave between 0.75× and 1.7× there
//! (and the code before the scratch reuse 1.03–1.42×, interleaved with them).
//!
//! Writes into a 10,000-document index (a fresh clone each time, as the store does): insert
//! 8.4 µs, remove 6.8 µs (criterion medians). Building 10,000 documents by single inserts takes
//! 173 ms, 17.3 µs an insert with its share of merges; the worst single write merges everything:
//! 11 ms at 10,000 documents, 100 ms at 100,000 (measured with [`Bm25Index::compact`] before
//! this round, whose changes do not touch merges).
//!
//! At N = 100 the fixed cost of a query weighs most: hashing and sorting the query's 23 tokens,
//! one probe per term and segment, an `ln` per term, about 35% of the time under `perf`; the
//! gap to flat is about 2 µs. A query makes one allocation (its result), like flat; it made five
//! before the prepared terms and the top-k buffer moved into the per-thread scratch, and the
//! top-k took 18% of a query (7% now) before it stopped moving candidates up by swaps.
//! [`Bm25Index::compact`] leaves one segment and one probe per term; the store runs it through
//! [`Bm25Index::settle_bulk_load`] when a transaction at least doubled a table of at most
//! [`BULK_COMPACT_MAX_DOCS`] documents (`bulk.rs` says why only there).
//!
//! Memory (live heap after single inserts, counting allocator; `bm25_search`'s memory table):
//! 777 B a document at 10,000 and 786 at 100,000 (935 and 888 a session earlier, 1,365 and
//! 1,089 before that).
//! A segment's dictionary holds bare 2-byte term ids in a `hashbrown::HashTable` (3 bytes a
//! bucket; `term_table.rs`); a segment of at most 65,536 documents without gaps in its slots
//! keeps 10-byte postings (`postings.rs`); a small finished segment packs each term's text end
//! and postings start into one `u32` (`term_offsets.rs`); offsets are `u32`; documents' term ids
//! take 2 bytes when a segment has at most 65,536 terms; a term's 64-bit hash, which only merges
//! and removals need, is computed again rather than stored. The `ln` of the idf is memoised per
//! thread (`idf_memo.rs`) and the length norm computed once per query. Callgrind on the
//! benches' synthetic corpus at N = 100 (four segments): 28.7k instructions a query (29.2k at
//! the start of this session's work on it), flat 17.7k.
//!
//! Unit tests fold term hashes to 6 bits so that every lookup meets terms of the same hash and
//! the text check behind the dictionary decides; `tests/bm25_model.rs` checks the index
//! against a brute-force scorer after every step of random write sequences.

mod analyze;
pub(crate) mod ascii_words;
mod builder;
mod bulk;
pub mod config;
pub mod document;
pub mod error;
pub(crate) mod hash;
mod identifier;
mod idf_memo;
pub mod index;
mod merge;
mod postings;
mod prune;
mod query;
mod reuse;
pub mod scoring;
mod scratch;
mod segment;
#[cfg(test)]
pub(crate) mod short_strings;
pub mod stem;
pub mod stop_words;
mod term_ids;
mod term_offsets;
mod term_table;
pub mod tokenizer;
mod tombstones;
mod topk;

pub use bulk::BULK_COMPACT_MAX_DOCS;
pub(crate) use bulk::BulkLoad;
pub use config::IndexConfig;
pub use document::{Document, FieldTerms};
pub use error::Bm25Error;
pub(crate) use identifier::split_identifier;
pub(crate) use index::KeyHit;
pub use index::{Bm25Index, CorpusStats, Hit};
pub(crate) use query::HashedQuery;
pub(crate) use reuse::{KEEP_UP_TO, put_back, take_from};
pub use scoring::{
    Bm25Params, DEFAULT_B, DEFAULT_K1, Explanation, TermExplanation, TermScorer, idf,
};
pub(crate) use segment::Attachment;
pub use stop_words::STOP_WORDS;
pub use tokenizer::{Tokenizer, TokenizerConfig};
pub(crate) use topk::best_first_key;
