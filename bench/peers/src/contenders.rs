//! The contenders, behind one trait: build from a [`Corpus`], answer query `q` with the top 10
//! `(document, score)`, insert one new document.

use std::time::{Duration, Instant};

use capstore::bm25::{Bm25Index, Document, Hit, IndexConfig};
use capstore::context::{ContextBuilder, SelectionPolicy, Turn};
use capstore::{Store, TOOLS};
use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

use crate::corpus::Corpus;
use crate::flat::FlatIndex;
use crate::synthetic_store::{store_with_skills, store_with_skills_bulk};

/// Results asked for.
pub const TOP_K: usize = 10;
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A contender's top k as it returns them: document numbers, or capstore's keyed hits.
pub enum Hits {
    Docs(Vec<(u32, f32)>),
    Keys(Vec<Hit>),
}

impl Hits {
    /// As `(document, score)`, best first. The harness calls this after the timer stops:
    /// parsing capstore's keys back to document numbers is the harness's translation for the
    /// agreement check, not work a user of the index does (it was 14% of capstore's
    /// instructions per query on MetaTool while it was timed).
    pub fn into_docs(self) -> Vec<(u32, f32)> {
        match self {
            Hits::Docs(docs) => docs,
            Hits::Keys(hits) => hits
                .into_iter()
                .map(|h| (Corpus::parse_key(&h.key), h.score))
                .collect(),
        }
    }
}

/// One engine under test.
pub trait Contender {
    /// Top [`TOP_K`] for query `q` of `corpus`, best first. For `select`, the selected tools in
    /// rank order, with the document `u32::MAX` (they are not compared with the yardstick).
    fn search(&mut self, corpus: &Corpus, q: usize) -> Hits;
    /// Inserts `corpus.extra_docs[j]` (or `extra_tools[j]`) as a new document, made visible to
    /// queries (commit, reload) where the engine has such a step; returns the time of that
    /// alone (untimed set-up and clean-up excluded, see each contender).
    fn insert(&mut self, corpus: &Corpus, j: usize) -> Duration;
}

/// What the table says about a contender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// capstore's `Bm25Index` fed the corpus tokens.
    CapstoreBm25,
    /// A capstore `Store` with the tools (and skills), `ContextBuilder::select`.
    CapstoreSelect,
    /// tantivy, in-RAM index, whitespace tokenizer over the joined tokens.
    Tantivy,
    /// The `bm25` crate's `SearchEngine`, whitespace tokenizer over the joined tokens.
    Bm25Crate,
    /// The flat yardstick.
    Flat,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Flat,
        Kind::CapstoreBm25,
        Kind::CapstoreSelect,
        Kind::Tantivy,
        Kind::Bm25Crate,
    ];

    /// The name `--kinds` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Flat => "flat",
            Kind::CapstoreBm25 => "capstore-bm25",
            Kind::CapstoreSelect => "capstore-select",
            Kind::Tantivy => "tantivy",
            Kind::Bm25Crate => "bm25-crate",
        }
    }

    /// The kind `--kinds` calls `name` ([`Kind::name`]).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::CapstoreBm25 => "capstore bm25",
            Kind::CapstoreSelect => "capstore select",
            Kind::Tantivy => "tantivy",
            Kind::Bm25Crate => "bm25 crate",
            Kind::Flat => "flat (yardstick)",
        }
    }

    /// Scored with the yardstick's formula on the same tokens: top 10 checked against it.
    pub fn same_formula(self) -> bool {
        matches!(self, Kind::CapstoreBm25 | Kind::Tantivy | Kind::Bm25Crate)
    }

    /// Builds the contender; `bulk_store`: capstore select's store is written by bulk inserts
    /// (see [`CapstoreSelect`]).
    pub fn build(self, corpus: &Corpus, bulk_store: bool) -> Box<dyn Contender> {
        match self {
            Kind::CapstoreBm25 => Box::new(CapstoreBm25::build(corpus)),
            Kind::CapstoreSelect => Box::new(CapstoreSelect::build(corpus, bulk_store)),
            Kind::Tantivy => Box::new(Tantivy::build(corpus)),
            Kind::Bm25Crate => Box::new(Bm25Crate::build(corpus)),
            Kind::Flat => Box::new(Flat::build(corpus)),
        }
    }
}

// ---------------------------------------------------------------------------------------------

/// capstore's index, built as the store builds it when one transaction loads a catalog: single
/// inserts, then `settle_bulk_load` (one segment up to `BULK_COMPACT_MAX_DOCS` documents, the
/// logarithmic method's segments beyond); one field `text`.
pub struct CapstoreBm25 {
    index: Bm25Index,
}

impl CapstoreBm25 {
    fn build(corpus: &Corpus) -> Self {
        let mut index = Bm25Index::new(IndexConfig::default()).expect("default config is valid");
        for (i, doc) in corpus.docs.iter().enumerate() {
            index.insert(
                &Corpus::key(i),
                &Document::new().with_field("text", doc.clone()),
            );
        }
        index.settle_bulk_load(0);
        Self { index }
    }
}

impl Contender for CapstoreBm25 {
    fn search(&mut self, corpus: &Corpus, q: usize) -> Hits {
        Hits::Keys(self.index.search(&corpus.queries[q], TOP_K))
    }

    /// Into an O(1) clone of the N-document index (the clone and its drop untimed), as the
    /// store does at every write: every insert goes into the same N documents.
    fn insert(&mut self, corpus: &Corpus, j: usize) -> Duration {
        let mut index = self.index.clone();
        let doc = Document::new().with_field("text", corpus.extra_docs[j].clone());
        let key = Corpus::key(corpus.len() + j);
        let t = Instant::now();
        index.insert(&key, &doc);
        let elapsed = t.elapsed();
        drop(index);
        elapsed
    }
}

// ---------------------------------------------------------------------------------------------

/// The whole store: tools (bundled into skills on the synthetic corpus) and a
/// `ContextBuilder` with the default policy but `max_tools` 10 and `explain` off.
///
/// The store is written in one transaction, by default one record (one skill with its tools)
/// at a time, which leaves each text index in about 2 log₃ N segments beyond 4,096 documents;
/// with `--bulk-store`, by `WriteTxn::insert_many` as a catalog load writes it, which leaves one
/// segment (the same rows and scores; faster to build, and faster selects).
pub struct CapstoreSelect {
    store: Store,
    builder: ContextBuilder,
}

impl CapstoreSelect {
    fn build(corpus: &Corpus, bulk: bool) -> Self {
        let tools = corpus.tools_to_register();
        let store = match (corpus.skills, bulk) {
            (true, false) => store_with_skills(&tools),
            (true, true) => store_with_skills_bulk(&tools),
            (false, false) => {
                let store = Store::new();
                store
                    .write(|tx| {
                        for tool in tools {
                            tx.insert(&TOOLS, tool)?;
                        }
                        Ok::<_, capstore::StoreError>(())
                    })
                    .expect("tools register");
                store
            }
            (false, true) => {
                let store = Store::new();
                store
                    .write(|tx| tx.insert_many(&TOOLS, tools))
                    .expect("tools register");
                store
            }
        };
        Self {
            store,
            builder: select_builder(false),
        }
    }
}

/// The builder the benchmarks use: default policy, `max_tools` = 10, `explain` as given.
pub fn select_builder(explain: bool) -> ContextBuilder {
    ContextBuilder::with_policy(SelectionPolicy {
        max_tools: TOP_K,
        explain,
        ..SelectionPolicy::default()
    })
    .expect("valid policy")
}

impl Contender for CapstoreSelect {
    fn search(&mut self, corpus: &Corpus, q: usize) -> Hits {
        let snapshot = self.store.snapshot();
        let selection = self
            .builder
            .select(&snapshot, &Turn::new(corpus.messages[q].as_str()))
            .expect("select");
        Hits::Docs(
            selection
                .tools
                .iter()
                .map(|t| (u32::MAX, t.score))
                .collect(),
        )
    }

    /// One write transaction inserting one tool, commit included; an untimed delete + commit
    /// restores the N tools.
    fn insert(&mut self, corpus: &Corpus, j: usize) -> Duration {
        let tool = corpus.extra_tools[j].clone();
        let key = tool.qualified_name();
        let t = Instant::now();
        self.store
            .write(|tx| tx.insert(&TOOLS, tool))
            .expect("insert");
        let elapsed = t.elapsed();
        // Readers see it in the next snapshot.
        assert!(
            self.store.snapshot().contains(&TOOLS, &key).expect("read"),
            "{key} not visible after its commit"
        );
        self.store
            .write(|tx| tx.delete(&TOOLS, &key).map(|_| ()))
            .expect("delete");
        elapsed
    }
}

// ---------------------------------------------------------------------------------------------

/// tantivy: a RAM directory, one text field indexed with frequencies (no positions) by the
/// `whitespace` tokenizer over the pre-joined tokens, document ids in a fast field.
pub struct Tantivy {
    index: Index,
    reader: IndexReader,
    searcher: Searcher,
    text: Field,
    id: Field,
    /// The `id` column of each segment of `searcher`.
    ids: Vec<Column<u64>>,
    writer: Option<IndexWriter>,
}

/// Indexing memory budget: enough to build 100,000 documents as one segment.
const TANTIVY_ARENA: usize = 400_000_000;

impl Tantivy {
    fn build(corpus: &Corpus) -> Self {
        let mut schema = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer("whitespace")
            .set_index_option(IndexRecordOption::WithFreqs);
        let text = schema.add_text_field(
            "text",
            TextOptions::default().set_indexing_options(indexing),
        );
        let id = schema.add_u64_field("id", FAST);
        let index = Index::create_in_ram(schema.build());
        // One indexing thread: build time on one core, like the others.
        let mut writer: IndexWriter = index
            .writer_with_num_threads(1, TANTIVY_ARENA)
            .expect("writer");
        for (i, doc) in corpus.docs.iter().enumerate() {
            let mut d = TantivyDocument::default();
            d.add_text(text, doc.join(" "));
            d.add_u64(id, i as u64);
            writer.add_document(d).expect("add");
        }
        writer.commit().expect("commit");
        writer.wait_merging_threads().expect("merges");
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .expect("reader");
        let searcher = reader.searcher();
        let mut t = Self {
            index,
            reader,
            searcher,
            text,
            id,
            ids: Vec::new(),
            writer: None,
        };
        t.load_columns();
        t
    }

    fn load_columns(&mut self) {
        self.ids = self
            .searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64("id").expect("id column"))
            .collect();
    }
}

impl Contender for Tantivy {
    fn search(&mut self, corpus: &Corpus, q: usize) -> Hits {
        // One clause per distinct term, boosted by its count: the same as scoring each
        // occurrence (as capstore and the yardstick do).
        let mut terms: Vec<&str> = corpus.queries[q].iter().map(String::as_str).collect();
        terms.sort_unstable();
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .chunk_by(|a, b| a == b)
            .map(|run| {
                let term = TermQuery::new(
                    Term::from_field_text(self.text, run[0]),
                    IndexRecordOption::WithFreqs,
                );
                let query: Box<dyn Query> = if run.len() == 1 {
                    Box::new(term)
                } else {
                    Box::new(BoostQuery::new(Box::new(term), run.len() as f32))
                };
                (Occur::Should, query)
            })
            .collect();
        if clauses.is_empty() {
            return Hits::Docs(Vec::new());
        }
        let query = BooleanQuery::new(clauses);
        let top = self
            .searcher
            .search(&query, &TopDocs::with_limit(TOP_K).order_by_score())
            .expect("search");
        Hits::Docs(
            top.into_iter()
                .map(|(score, addr)| {
                    let id = self.ids[addr.segment_ord as usize]
                        .first(addr.doc_id)
                        .expect("every document has an id");
                    (id as u32, score)
                })
                .collect(),
        )
    }

    /// `add_document` + `commit` + reader reload (new searcher and id columns). The writer is
    /// opened (untimed) at the first insert; the index grows by one document per insert.
    fn insert(&mut self, corpus: &Corpus, j: usize) -> Duration {
        if self.writer.is_none() {
            self.writer = Some(
                self.index
                    .writer_with_num_threads(1, 50_000_000)
                    .expect("writer"),
            );
        }
        let mut d = TantivyDocument::default();
        d.add_text(self.text, corpus.extra_docs[j].join(" "));
        d.add_u64(self.id, (corpus.len() + j) as u64);
        let writer = self.writer.as_mut().expect("opened above");
        let before = self.searcher.num_docs();
        let t = Instant::now();
        writer.add_document(d).expect("add");
        writer.commit().expect("commit");
        self.reader.reload().expect("reload");
        self.searcher = self.reader.searcher();
        self.load_columns();
        let elapsed = t.elapsed();
        assert_eq!(
            self.searcher.num_docs(),
            before + 1,
            "the insert is visible"
        );
        elapsed
    }
}

// ---------------------------------------------------------------------------------------------

/// Splits on white space: capstore's tokens, pre-joined, come back unchanged.
#[derive(Clone, Copy, Debug, Default)]
pub struct Whitespace;

impl bm25::Tokenizer for Whitespace {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        input_text.split_whitespace().map(str::to_owned).collect()
    }
}

/// The `bm25` crate's `SearchEngine` (u32 document ids, 64-bit token hashes so that no two
/// terms collide), fed the pre-joined tokens.
pub struct Bm25Crate {
    engine: bm25::SearchEngine<u32, u64, Whitespace>,
    /// The queries, pre-joined (outside the timed part).
    queries: Vec<String>,
}

impl Bm25Crate {
    fn build(corpus: &Corpus) -> Self {
        let docs = corpus
            .docs
            .iter()
            .enumerate()
            .map(|(i, d)| bm25::Document::new(i as u32, d.join(" ")));
        let engine =
            bm25::SearchEngineBuilder::<u32, u64, Whitespace>::with_tokenizer_and_documents(
                Whitespace, docs,
            )
            .k1(K1)
            .b(B)
            .build();
        Self {
            engine,
            queries: corpus.queries.iter().map(|q| q.join(" ")).collect(),
        }
    }
}

impl Contender for Bm25Crate {
    fn search(&mut self, _corpus: &Corpus, q: usize) -> Hits {
        Hits::Docs(
            self.engine
                .search(&self.queries[q], TOP_K)
                .into_iter()
                .map(|r| (r.document.id, r.score))
                .collect(),
        )
    }

    /// `upsert` (no commit step; the crate keeps the `avgdl` it was built with).
    fn insert(&mut self, corpus: &Corpus, j: usize) -> Duration {
        let doc = bm25::Document::new((corpus.len() + j) as u32, corpus.extra_docs[j].join(" "));
        let t = Instant::now();
        self.engine.upsert(doc);
        t.elapsed()
    }
}

// ---------------------------------------------------------------------------------------------

/// The yardstick ([`FlatIndex`]).
pub struct Flat {
    pub index: FlatIndex,
}

impl Flat {
    pub fn build(corpus: &Corpus) -> Self {
        Self {
            index: FlatIndex::build(K1, B, &corpus.docs),
        }
    }
}

impl Contender for Flat {
    fn search(&mut self, corpus: &Corpus, q: usize) -> Hits {
        Hits::Docs(self.index.search(&corpus.queries[q], TOP_K))
    }

    /// Appends in place (no snapshot, no commit step); the index grows by one per insert.
    fn insert(&mut self, corpus: &Corpus, j: usize) -> Duration {
        let t = Instant::now();
        self.index.insert(&corpus.extra_docs[j]);
        t.elapsed()
    }
}
