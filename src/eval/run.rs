//! Registering a catalog, selecting for every query, timing and scoring.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::context::{ContextBuilder, HintMatcher, Retrieval, SelectionPolicy, Turn};
use crate::embed::{Embedder, embed_missing};
use crate::store::Store;
use crate::tools::{TOOLS, Tool, ToolTextOptions, name_counts};

use super::load::{EvalError, Query, ToolEntry};
use super::metrics::Metrics;

/// What an evaluation run varies: the number of tools asked for, the tools' text index, and
/// whether exact tool names in the message are matched first (the rest of the selection policy
/// is the default).
///
/// ```
/// use capstore::eval::EvalConfig;
/// let config = EvalConfig::default();
/// assert_eq!((config.k, config.match_exact_names), (10, true));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EvalConfig {
    /// Tools asked for per query (`SelectionPolicy::max_tools`). Default 10.
    pub k: usize,
    /// The tools table's tokenizer, BM25 parameters and field weights. Default
    /// [`ToolTextOptions::default`], the store's own.
    pub text: ToolTextOptions,
    /// `SelectionPolicy::match_exact_names`. Default true, as in the default policy.
    pub match_exact_names: bool,
    /// `SelectionPolicy::retrieval`: lexical (the default), or hybrid with
    /// [`run_with_embedder`].
    pub retrieval: Retrieval,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            k: 10,
            text: ToolTextOptions::default(),
            match_exact_names: SelectionPolicy::default().match_exact_names,
            retrieval: Retrieval::Lexical,
        }
    }
}

/// One query's ranking, as tool ids (best first).
///
/// ```
/// use capstore::eval::QueryRun;
/// let run = QueryRun { query_id: "q".into(), ranked: vec!["a".into()] };
/// assert_eq!(serde_json::to_string(&run)?, r#"{"query_id":"q","ranked":["a"]}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QueryRun {
    /// The query's id.
    pub query_id: String,
    /// The selected tools' ids, best first, at most `k`.
    pub ranked: Vec<String>,
}

/// The outcome of [`run`].
///
/// ```
/// use capstore::eval::{EvalConfig, run};
/// let report = run(&[], &[], &EvalConfig::default())?;
/// assert_eq!((report.registered, report.metrics.queries), (0, 0));
/// # Ok::<(), capstore::eval::EvalError>(())
/// ```
#[derive(Debug, Clone)]
pub struct EvalReport {
    /// Tools in the store after registration (always the number of tools given).
    pub registered: usize,
    /// Wall time of the one write transaction that registered every tool (index build
    /// included).
    pub build_time: Duration,
    /// Wall time of all the selections (the queries' embedding excluded: see `embedding`).
    pub query_time: Duration,
    /// With an embedder: how long embedding the tools and the queries took.
    pub embedding: Option<EmbeddingTimes>,
    /// Each query's ranking, in the queries' order.
    pub runs: Vec<QueryRun>,
    /// The scores.
    pub metrics: Metrics,
}

impl EvalReport {
    /// Selections per second (0 when there were none).
    ///
    /// ```
    /// use capstore::eval::{EvalConfig, run};
    /// assert_eq!(run(&[], &[], &EvalConfig::default())?.queries_per_second(), 0.0);
    /// # Ok::<(), capstore::eval::EvalError>(())
    /// ```
    pub fn queries_per_second(&self) -> f64 {
        per_second(self.runs.len(), self.query_time)
    }
}

/// How long a hybrid run spent embedding ([`run_with_embedder`]).
///
/// ```
/// use std::time::Duration;
/// use capstore::eval::EmbeddingTimes;
/// let t = EmbeddingTimes { tools: 10, tools_time: Duration::from_secs(2), queries: 4, queries_time: Duration::from_secs(1) };
/// assert_eq!((t.tools_per_second(), t.queries_per_second()), (5.0, 4.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmbeddingTimes {
    /// Tools embedded.
    pub tools: usize,
    /// Wall time of embedding them (in batches) and storing their vectors.
    pub tools_time: Duration,
    /// Queries embedded.
    pub queries: usize,
    /// Wall time of embedding them, in batches.
    pub queries_time: Duration,
}

impl EmbeddingTimes {
    /// Tools embedded per second.
    ///
    /// ```
    /// # use capstore::eval::EmbeddingTimes; use std::time::Duration;
    /// let t = EmbeddingTimes { tools: 0, tools_time: Duration::ZERO, queries: 0, queries_time: Duration::ZERO };
    /// assert_eq!(t.tools_per_second(), 0.0);
    /// ```
    pub fn tools_per_second(&self) -> f64 {
        per_second(self.tools, self.tools_time)
    }

    /// Queries embedded per second.
    ///
    /// ```
    /// # use capstore::eval::EmbeddingTimes; use std::time::Duration;
    /// let t = EmbeddingTimes { tools: 0, tools_time: Duration::ZERO, queries: 3, queries_time: Duration::from_secs(3) };
    /// assert_eq!(t.queries_per_second(), 1.0);
    /// ```
    pub fn queries_per_second(&self) -> f64 {
        per_second(self.queries, self.queries_time)
    }
}

fn per_second(count: usize, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if count == 0 || secs <= 0.0 {
        0.0
    } else {
        count as f64 / secs
    }
}

/// How many queries are embedded at once.
const QUERY_BATCH: usize = 64;

/// Replaces `/` (the source/name separator) and trims white space, so that a piece of an id can
/// be a source.
fn sanitize_source(raw: &str) -> String {
    let s = raw.replace('/', "_");
    let s = s.trim();
    if s.is_empty() {
        "_".into()
    } else {
        s.to_string()
    }
}

/// Applies the identity policy of [the module](super): returns each entry's tool, with a
/// `source` derived from the id where names repeat, so that every id has its own key.
///
/// ```
/// use capstore::eval::{ToolEntry, assign_keys};
/// use capstore::Tool;
/// let entries = [
///     ToolEntry { id: "A::search".into(), tool: Tool::new("search", "") },
///     ToolEntry { id: "B/x::search".into(), tool: Tool::new("search", "") },
///     ToolEntry { id: "c".into(), tool: Tool::new("PDF&URLTool", "") },
/// ];
/// let keys: Vec<String> = assign_keys(&entries)?.iter().map(|t| t.qualified_name()).collect();
/// assert_eq!(keys, ["A/search", "B_x/search", "PDF&URLTool"]);
/// # Ok::<(), capstore::eval::EvalError>(())
/// ```
pub fn assign_keys(entries: &[ToolEntry]) -> Result<Vec<Tool>, EvalError> {
    let names = name_counts(entries.iter().map(|e| e.tool.name.as_str()));
    let mut tools: Vec<Tool> = entries
        .iter()
        .map(|e| {
            let mut tool = e.tool.clone();
            if names.get(e.tool.name.as_str()).copied().unwrap_or(0) > 1 {
                let prefix = e.id.split_once("::").map_or(e.id.as_str(), |(p, _)| p);
                tool.source = Some(sanitize_source(prefix));
            }
            tool
        })
        .collect();
    let keys: Vec<String> = tools.iter().map(Tool::qualified_name).collect();
    let key_counts = name_counts(keys.iter().map(String::as_str));
    for ((tool, entry), key) in tools.iter_mut().zip(entries).zip(&keys) {
        if key_counts.get(key.as_str()).copied().unwrap_or(0) > 1 {
            tool.source = Some(sanitize_source(&entry.id));
        }
    }
    let mut seen = HashSet::new();
    for t in &tools {
        let key = t.qualified_name();
        if !seen.insert(key.clone()) {
            return Err(EvalError::DuplicateKey { key });
        }
    }
    Ok(tools)
}

/// Registers every tool in one write transaction of a store built with `config.text`, then
/// asks a [`ContextBuilder`] (default policy but `max_tools = k`, `explain = false`, nothing
/// pinned) for each query's tools, and scores the rankings against the gold ids.
///
/// ```
/// use capstore::eval::{EvalConfig, Query, ToolEntry, run};
/// use capstore::Tool;
/// let tools = [ToolEntry { id: "1".into(), tool: Tool::new("send_email", "Send an email") }];
/// let queries = [Query { id: "q".into(), query: "email Ana".into(), gold: vec!["1".into()], split: None }];
/// let report = run(&tools, &queries, &EvalConfig { k: 3, ..EvalConfig::default() })?;
/// assert_eq!(report.registered, 1);
/// assert_eq!(report.metrics.recall_1, 100.0);
/// # Ok::<(), capstore::eval::EvalError>(())
/// ```
pub fn run(
    tools: &[ToolEntry],
    queries: &[Query],
    config: &EvalConfig,
) -> Result<EvalReport, EvalError> {
    run_inner(tools, queries, config, None)
}

/// [`run`] with `embedder`: after registering the tools it embeds them
/// ([`embed_missing`]) and the queries (in batches), then selects with `config.retrieval`
/// (set it to [`Retrieval::Hybrid`] to fuse; lexical ignores the vectors). The report's
/// `embedding` says how long the embedding took; `query_time` is the selections' alone.
///
/// ```
/// use std::sync::Arc;
/// use capstore::context::{HybridPolicy, Retrieval};
/// use capstore::embed::{EmbedError, Embedder};
/// use capstore::eval::{EvalConfig, Query, ToolEntry, run_with_embedder};
/// use capstore::Tool;
///
/// struct Money;
/// impl Embedder for Money {
///     fn model_id(&self) -> &str { "money" }
///     fn dimensions(&self) -> usize { 2 }
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts.iter().map(|t| vec![(t.contains("invoice") || t.contains("bill")) as u8 as f32, 0.5]).collect())
///     }
/// }
/// let tools = [
///     ToolEntry { id: "1".into(), tool: Tool::new("create_invoice", "Create an invoice") },
///     ToolEntry { id: "2".into(), tool: Tool::new("send_email", "Send an email") },
/// ];
/// let queries = [Query { id: "q".into(), query: "bill the client".into(), gold: vec!["1".into()], split: None }];
/// let config = EvalConfig { k: 1, retrieval: Retrieval::Hybrid(HybridPolicy::default()), ..EvalConfig::default() };
/// let report = run_with_embedder(&tools, &queries, &config, Arc::new(Money))?;
/// assert_eq!(report.metrics.recall_1, 100.0);
/// assert_eq!(report.embedding.map(|e| (e.tools, e.queries)), Some((2, 1)));
/// # Ok::<(), capstore::eval::EvalError>(())
/// ```
pub fn run_with_embedder(
    tools: &[ToolEntry],
    queries: &[Query],
    config: &EvalConfig,
    embedder: Arc<dyn Embedder>,
) -> Result<EvalReport, EvalError> {
    run_inner(tools, queries, config, Some(embedder))
}

fn run_inner(
    tools: &[ToolEntry],
    queries: &[Query],
    config: &EvalConfig,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<EvalReport, EvalError> {
    let keyed = assign_keys(tools)?;
    let id_of: HashMap<String, &str> = keyed
        .iter()
        .zip(tools)
        .map(|(t, e)| (t.qualified_name(), e.id.as_str()))
        .collect();

    let store = Store::with_tool_text(config.text.clone()).map_err(EvalError::Schema)?;
    let started = Instant::now();
    let mut failed_id = None;
    store
        .write(|tx| {
            for (tool, entry) in keyed.into_iter().zip(tools) {
                failed_id = Some(entry.id.clone());
                tx.insert(&TOOLS, tool)?;
            }
            failed_id = None;
            Ok(())
        })
        .map_err(|source| EvalError::Store {
            id: failed_id.take(),
            source,
        })?;
    let build_time = started.elapsed();
    let mut builder = ContextBuilder::with_policy(
        SelectionPolicy {
            explain: false,
            match_exact_names: config.match_exact_names,
            retrieval: config.retrieval,
            ..SelectionPolicy::default()
        }
        .with_tool_limit(config.k),
    )
    .map_err(EvalError::Policy)?;
    let mut embedding = None;
    let mut query_vectors = Vec::new();
    if let Some(embedder) = &embedder {
        let started = Instant::now();
        let report = embed_missing(&store, embedder.as_ref()).map_err(EvalError::Embed)?;
        let tools_time = started.elapsed();
        let started = Instant::now();
        // The text the builder would embed for each query (the query and its hints).
        let hints = &builder.policy().hints;
        let matcher = HintMatcher::new(hints);
        for batch in queries.chunks(QUERY_BATCH) {
            let texts: Vec<Cow<str>> = batch
                .iter()
                .map(|q| matcher.embedding_text(hints, &q.query))
                .collect();
            let texts: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
            query_vectors.extend(embedder.embed(&texts).map_err(EvalError::Embed)?);
        }
        embedding = Some(EmbeddingTimes {
            tools: report.embedded,
            tools_time,
            queries: queries.len(),
            queries_time: started.elapsed(),
        });
    }
    let snapshot = store.snapshot();
    let registered = snapshot
        .count(&TOOLS)
        .map_err(|source| EvalError::Store { id: None, source })?;
    if registered != tools.len() {
        return Err(EvalError::CountMismatch {
            expected: tools.len(),
            registered,
        });
    }

    if let Some(embedder) = embedder {
        builder = builder.with_embedder(embedder);
    }
    let started = Instant::now();
    let mut runs = Vec::with_capacity(queries.len());
    let mut query_vectors = query_vectors.into_iter();
    for q in queries {
        let mut turn = Turn::new(q.query.as_str());
        if let Some(vector) = query_vectors.next() {
            turn = turn.with_query_vector(vector);
        }
        let selection = builder
            .select(&snapshot, &turn)
            .map_err(EvalError::Select)?;
        let ranked = selection
            .ranked()
            .filter_map(|t| id_of.get(&*t.key).map(|id| (*id).to_string()))
            .collect();
        runs.push(QueryRun {
            query_id: q.id.clone(),
            ranked,
        });
    }
    let query_time = started.elapsed();
    let metrics = Metrics::of(
        runs.iter()
            .zip(queries)
            .map(|(r, q)| (r.ranked.as_slice(), q.gold.as_slice())),
    );
    Ok(EvalReport {
        registered,
        build_time,
        query_time,
        embedding,
        runs,
        metrics,
    })
}
