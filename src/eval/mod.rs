//! Measuring tool selection on a labelled catalog: load tools and queries from JSONL, register
//! every tool through the public API, ask the [`ContextBuilder`](crate::context::ContextBuilder) for each query's ranked tools,
//! and score the rankings (Recall@k, nDCG@k, MRR@k, C@k).
//!
//! Conversations are measured turn by turn by [`run_conversations`] (recall of each turn's
//! tools, prefix stability of the tool list, tokens sent and tokens a prompt cache keeps); the
//! [`conversations`] module says how, and gives the file format.
//!
//! This is what the `capstore eval` command runs; see `BENCHMARKS.md` ("Selection quality").
//!
//! # File formats
//! - **Tools**, one JSON object a line: `id` (string, unique; the identity queries' `gold`
//!   names), `name` (string), and optionally `description` (string), `parameters` (a JSON Schema
//!   object, or null), `tags` (strings), `source` (provenance; ignored).
//! - **Queries**, one JSON object a line: `id`, `query` (strings), `gold` (tool ids) and
//!   optionally `split` (string). Blank lines are skipped. Every error names the file and line.
//!
//! # Identity policy: tool id → store key
//! A record's `id` must map to a distinct qualified key, and no record may be dropped:
//! - a tool whose `name` is unique in the file is stored under that name, with no source;
//! - tools whose `name` repeats take a `source` derived from their `id`: the part before `::`
//!   when there is one (ToolBench's `tool::api`), else the whole id, with `/` replaced by `_`
//!   and surrounding white space trimmed; if two still share a key, the whole (sanitized) id is
//!   the source.
//! - names providers would reject (`PDF&URLTool`, `getPM2.5Level`) are stored as they are: the
//!   store accepts them, and export names are sanitized on export
//!   ([`export_names`](crate::tools::export_names)).
//!
//! After the single write transaction the tools table must hold exactly as many tools as the
//! file: otherwise [`EvalError::CountMismatch`].
//!
//! ```
//! use capstore::eval::{EvalConfig, Query, ToolEntry, run};
//! use capstore::Tool;
//!
//! let tools = vec![
//!     ToolEntry { id: "w".into(), tool: Tool::new("get_weather", "Current weather for a city") },
//!     ToolEntry { id: "f".into(), tool: Tool::new("read_file", "Read a file from disk") },
//! ];
//! let queries = vec![Query { id: "q1".into(), query: "weather in Oslo".into(), gold: vec!["w".into()], split: None }];
//! let report = run(&tools, &queries, &EvalConfig::default())?;
//! assert_eq!(report.runs[0].ranked, ["w"]);
//! assert_eq!(report.metrics.ndcg_10, 100.0);
//! # Ok::<(), capstore::eval::EvalError>(())
//! ```

pub mod conversations;
mod load;
mod metrics;
mod run;

pub use conversations::{
    ConversationMetrics, ConversationReport, SEARCH_DEPTH, ScriptedConversation, ScriptedTurn,
    TurnRun, learn_from_conversations, load_conversations, parse_conversations, run_conversations,
    run_conversations_learning,
};
pub use load::{EvalError, Query, ToolEntry, load_queries, load_tools, parse_queries, parse_tools};
pub use metrics::{Metrics, complete_at, mrr_at, ndcg_at, recall_at};
pub use run::{
    EmbeddingTimes, EvalConfig, EvalReport, QueryRun, assign_keys, run, run_with_embedder,
};
