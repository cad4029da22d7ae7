//! The corpora: what every contender indexes and what it is asked.
//!
//! A [`Corpus`] holds, for one data set at one size, the token lists fed to the BM25
//! contenders (identical for all of them), the query token lists, the query messages given to
//! `ContextBuilder::select`, the tools (and whether to bundle them in skills) for the store,
//! and extra documents and tools for the single-insert measurement.
//!
//! - **synthetic**: `benches/synthetic` (the root benches' deterministic Zipfian corpus). Its
//!   documents are already tokens, used as they are (function words included, no stemming), as
//!   in `benches/bm25_search.rs`. The store gets tools made from the same documents
//!   (`synthetic_store.rs`), bundled into skills, and tokenizes their text itself.
//! - **real sets** (`metatool`, `sealtools`, `toolbench_stable` under the shared data
//!   directory): every tool's text as the store's tools table sees it (`tool_text`: name,
//!   description, tags, parameter names and descriptions), tokenized with the store's tokenizer
//!   (identifier splitting, stop words, light stemming), concatenated into one field; queries
//!   through the same tokenizer. So the BM25 contenders index exactly the terms the store does,
//!   as plain BM25 (the store itself weighs fields: BM25F, `name` 2, `param_docs` 0.5).

use std::path::PathBuf;

use capstore::bm25::Tokenizer;
use capstore::eval::{assign_keys, load_queries, load_tools};
use capstore::store::TextFields;
use capstore::tools::{TOOL_TEXT_FIELDS, ToolTextOptions, tool_text};
use capstore::{InputSchema, Tool};

use crate::synthetic;
use crate::synthetic_store::{corpus_tools, tool_from};

/// One data set at one size.
pub struct Corpus {
    /// `synthetic`, `metatool`, `sealtools`, `toolbench`.
    pub name: &'static str,
    /// Documents: token lists, identical for every BM25 contender.
    pub docs: Vec<Vec<String>>,
    /// Queries: token lists.
    pub queries: Vec<Vec<String>>,
    /// Queries as messages, for `ContextBuilder::select`.
    pub messages: Vec<String>,
    /// The store's records, `tools[i]` made from `docs[i]`'s source.
    pub tools: Vec<Tool>,
    /// Register the tools bundled into skills (synthetic) or alone (real sets).
    pub skills: bool,
    /// Token lists inserted one at a time after the measurements (new documents).
    pub extra_docs: Vec<Vec<String>>,
    /// Tools registered one at a time (new keys).
    pub extra_tools: Vec<Tool>,
    /// Bytes of the tools' own text (name, description, source, tags, schema as JSON).
    pub tool_text_bytes: usize,
}

impl Corpus {
    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// The key of document `i` in the keyed contenders: zero-padded, so key order is document
    /// order and every contender breaks score ties the same way (smaller document first).
    pub fn key(i: usize) -> String {
        format!("d{i:08}")
    }

    /// Copies of the tools for a store to own. A `Tool` clone shares its input schema's text
    /// with the original, which the corpus keeps outside the memory measurement; these copies
    /// have their own, so the store is charged for it, as it is for every other field.
    pub fn tools_to_register(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .map(|tool| {
                let mut tool = tool.clone();
                tool.input_schema = InputSchema::from_json(tool.input_schema.as_str())
                    .expect("a schema's text is JSON");
                tool
            })
            .collect()
    }

    /// Inverse of [`Corpus::key`].
    pub fn parse_key(key: &str) -> u32 {
        key[1..].parse().expect("keys are d + digits")
    }
}

fn text_bytes(tools: &[Tool]) -> usize {
    tools
        .iter()
        .map(|t| {
            t.name.len()
                + t.description.len()
                + t.source.as_ref().map_or(0, String::len)
                + t.tags.iter().map(String::len).sum::<usize>()
                + t.input_schema.as_str().len()
        })
        .sum()
}

/// The synthetic corpus generator, sized for the largest N asked for.
pub struct Synthetic {
    corpus: synthetic::Corpus,
}

impl Synthetic {
    pub fn new(largest: usize) -> Self {
        Self {
            corpus: synthetic::Corpus::generate(synthetic::CorpusSpec::tool_like(largest)),
        }
    }

    /// The first `n` documents, every query, `extra` new documents and tools.
    pub fn at(&self, n: usize, extra: usize) -> Corpus {
        let c = &self.corpus;
        let docs: Vec<Vec<String>> = (0..n).map(|i| c.doc_tokens(i)).collect();
        let extra_docs: Vec<Vec<String>> = c
            .extra_docs(extra)
            .iter()
            .map(|ids| c.tokens(ids))
            .collect();
        let extra_tools = extra_docs
            .iter()
            .enumerate()
            .map(|(j, tokens)| tool_from(c, c.len() + j, tokens))
            .collect();
        let tools = corpus_tools(c, n);
        Corpus {
            name: "synthetic",
            tool_text_bytes: text_bytes(&tools),
            messages: c.queries.iter().map(|q| q.join(" ")).collect(),
            queries: c.queries.clone(),
            docs,
            tools,
            skills: true,
            extra_docs,
            extra_tools,
        }
    }
}

/// The shared data directory: `$CAPSTORE_SHARED_DATA`, else `../shared/data` beside the
/// repository root.
pub fn shared_data_dir() -> PathBuf {
    match std::env::var_os("CAPSTORE_SHARED_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    }
}

/// A real set: `set` is `metatool`, `sealtools` or `toolbench` (directory
/// `toolbench_stable`); queries from its `queries.jsonl` (Seal-Tools: the test splits).
pub fn real(set: &'static str, extra: usize) -> Result<Corpus, String> {
    let dir = shared_data_dir().join(match set {
        "toolbench" => "toolbench_stable",
        other => other,
    });
    let entries = load_tools(dir.join("tools.jsonl")).map_err(|e| e.to_string())?;
    let queries = load_queries(dir.join("queries.jsonl")).map_err(|e| e.to_string())?;
    // The store's keys (names that repeat get a source), as `capstore eval` registers them.
    let tools = assign_keys(&entries).map_err(|e| e.to_string())?;

    let tokenizer = Tokenizer::new(ToolTextOptions::default().tokenizer);
    let docs: Vec<Vec<String>> = tools
        .iter()
        .map(|tool| {
            let mut fields = TextFields::new(&tokenizer);
            tool_text(tool, &mut fields);
            TOOL_TEXT_FIELDS
                .iter()
                .filter_map(|f| fields.tokens(f))
                .flat_map(|t| t.into_iter().map(str::to_string))
                .collect()
        })
        .collect();
    let n = docs.len();
    // New documents for the insert measurement: copies of existing ones under new ids.
    let extra_docs = (0..extra).map(|j| docs[j % n].clone()).collect();
    let extra_tools = (0..extra)
        .map(|j| {
            let mut tool = tools[j % n].clone();
            tool.name = format!("{}_copy{j}", tool.name);
            tool
        })
        .collect();
    Ok(Corpus {
        name: set,
        queries: queries
            .iter()
            .map(|q| tokenizer.tokenize(&q.query))
            .collect(),
        messages: queries.into_iter().map(|q| q.query).collect(),
        tool_text_bytes: text_bytes(&tools),
        docs,
        tools,
        skills: false,
        extra_docs,
        extra_tools,
    })
}
