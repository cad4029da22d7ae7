//! Registering a catalog, selecting for every query, timing and scoring.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::context::{ContextBuilder, SelectionPolicy, Turn};
use crate::tools::{ToolTextOptions, name_counts};
use crate::{Store, TOOLS, Tool};

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
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            k: 10,
            text: ToolTextOptions::default(),
            match_exact_names: SelectionPolicy::default().match_exact_names,
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
    /// Wall time of all the selections.
    pub query_time: Duration,
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
        let secs = self.query_time.as_secs_f64();
        if self.runs.is_empty() || secs <= 0.0 {
            0.0
        } else {
            self.runs.len() as f64 / secs
        }
    }
}

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

    let builder = ContextBuilder::with_policy(
        SelectionPolicy {
            explain: false,
            match_exact_names: config.match_exact_names,
            ..SelectionPolicy::default()
        }
        .with_tool_limit(config.k),
    )
    .map_err(EvalError::Policy)?;
    let started = Instant::now();
    let mut runs = Vec::with_capacity(queries.len());
    for q in queries {
        let selection = builder
            .select(&snapshot, &Turn::new(q.query.as_str()))
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
        runs,
        metrics,
    })
}
