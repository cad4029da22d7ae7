//! Multi-turn evaluation: scripted conversations, each turn a user message and the tools that
//! turn needs, run through a [`Conversation`] and a [`ContextBuilder`] the way an agent runs
//! them, measuring what a user pays for and what a provider's prompt cache keeps.
//!
//! # What is measured
//! For each turn the builder selects the tool list to send; the simulated model then calls the
//! turn's `used` tools (by default its gold tools) among those sent, and the conversation
//! records both. Per turn:
//! - **recall**: the share of the turn's gold tools that were sent (turns with no gold tools
//!   are not averaged in);
//! - **prefix-stable**: the previous turn's list is a prefix of this turn's (tools only get
//!   appended), so a provider that caches the request by prefix (tools come first in OpenAI's
//!   and Anthropic's requests) reuses all of it;
//! - **tokens**: estimated tokens of the tool definitions sent
//!   ([`estimate_tokens`]);
//! - **cached tokens**: the tokens of the longest common prefix of this turn's list and the
//!   last one: what the provider's cache can still serve of the tool definitions.
//!
//! Turns carry a `topic` label. A *follow-up within one topic* is a turn whose topic is the
//! previous turn's; a *topic switch* starts a run of turns with a new label. A *re-pack* is a
//! follow-up turn that is not prefix-stable. A topic run's re-packs are counted from its first
//! turn to its last.
//!
//! # File format
//! One conversation a line (blank lines skipped; unknown fields ignored):
//! `{"id": "trip", "turns": [{"user": "...", "gold": ["travel/search_flights"], "topic":
//! "travel", "used": [...]}, ...]}`. `gold` lists the qualified names of the tools the turn
//! needs (`[]` for none); `used` (optional) the tools the model calls that turn, when they are
//! not exactly the gold ones; `topic` (optional) names the task the turn belongs to (absent:
//! the conversation is one topic). Every error names the file and line, and every tool name
//! must exist in the store.
//!
//! ```
//! use capstore::context::ContextBuilder;
//! use capstore::eval::{parse_conversations, run_conversations};
//! use capstore::{Store, Tool, TOOLS};
//!
//! let store = Store::new();
//! store.write(|tx| {
//!     tx.insert(&TOOLS, Tool::new("get_forecast", "Weather forecast for a city"))?;
//!     tx.insert(&TOOLS, Tool::new("search_flights", "Search flights between two cities"))
//! })?;
//! let conversations = parse_conversations("c.jsonl", concat!(
//!     r#"{"id": "trip", "turns": [{"user": "flights from Oslo to Rome on Friday?", "gold": ["search_flights"]}, "#,
//!     r#"{"user": "and the weather forecast there?", "gold": ["get_forecast"]}]}"#,
//! ))?;
//! let report = run_conversations(&store.snapshot(), &ContextBuilder::new(), &conversations)?;
//! assert_eq!(report.metrics.recall, 100.0);
//! assert_eq!(report.turns[1].sent, ["search_flights", "get_forecast"]);
//! assert!(report.turns[1].prefix_stable);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::context::{Channel, ContextBuilder, Conversation, estimate_tokens, search_tools};
use crate::store::{Snapshot, Store};
use crate::tools::TOOLS;
use crate::usage::{TurnUse, learn};

use super::load::EvalError;

/// How many tools the "within one search" figure looks at: `search_tools`'s default limit.
pub const SEARCH_DEPTH: usize = 5;

/// A scripted conversation.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ScriptedConversation {
    /// Unique within the file.
    pub id: String,
    /// What kind of conversation it is (`"two_asks"`, `"multi_server"`, ...): the report gives
    /// figures by kind when its conversations name one ([`ConversationReport::by_kind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The user's turns, in order.
    pub turns: Vec<ScriptedTurn>,
}

/// One user turn of a [`ScriptedConversation`].
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ScriptedTurn {
    /// The user's message.
    pub user: String,
    /// Qualified names of the tools this turn needs (empty: none).
    pub gold: Vec<String>,
    /// The tools the model calls this turn, when not exactly `gold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used: Option<Vec<String>>,
    /// The task the turn belongs to; `None` counts as one topic for the whole conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
}

/// Reads a conversations file (see [the module](self) for the format).
///
/// ```
/// assert!(capstore::eval::load_conversations("/no/such.jsonl").is_err());
/// ```
pub fn load_conversations(path: impl AsRef<Path>) -> Result<Vec<ScriptedConversation>, EvalError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_conversations(path, &text)
}

/// Parses the text of a conversations file; `path` only names it in errors.
///
/// ```
/// use capstore::eval::parse_conversations;
/// let c = parse_conversations("c.jsonl", r#"{"id": "a", "turns": [{"user": "hi", "gold": []}]}"#)?;
/// assert_eq!(c[0].turns[0].user, "hi");
/// let err = parse_conversations("c.jsonl", "\n{\"id\": \"a\", \"turns\": [{\"user\": 1}]}").unwrap_err();
/// assert!(err.to_string().starts_with("c.jsonl:2: invalid JSON: turns[0].user"), "{err}");
/// # Ok::<(), capstore::eval::EvalError>(())
/// ```
pub fn parse_conversations(
    path: impl AsRef<Path>,
    text: &str,
) -> Result<Vec<ScriptedConversation>, EvalError> {
    let path = path.as_ref();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let line = i + 1;
        let mut de = serde_json::Deserializer::from_str(raw);
        let conversation: ScriptedConversation = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| EvalError::Json {
                path: path.to_path_buf(),
                line,
                message: format!("{}: {}", e.path(), e.inner()),
            })?;
        if !seen.insert(conversation.id.clone()) {
            return Err(EvalError::DuplicateId {
                path: path.to_path_buf(),
                line,
                id: conversation.id,
            });
        }
        out.push(conversation);
    }
    Ok(out)
}

/// What one turn sent, and how it fared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnRun {
    /// The conversation's id.
    pub conversation: String,
    /// The turn's 0-based position in its conversation.
    pub turn: usize,
    /// The tools sent, in send order.
    pub sent: Vec<String>,
    /// Which channel brought each tool sent, in send order: "asked for by this message", "brought
    /// by a skill the message matched", "from the conversation", "kept from turn N" (N counts the conversation's turns from 1),
    /// "pinned".
    pub channels: Vec<String>,
    /// The turn's gold tools that were not sent.
    pub missed: Vec<String>,
    /// Of those, the ones not within one search either: not among the best
    /// [`SEARCH_DEPTH`] that `search_tools` returns for the turn's message.
    pub unreachable: Vec<String>,
    /// How many gold tools the turn has.
    pub gold: usize,
    /// Estimated tokens of the definitions sent.
    pub tokens: usize,
    /// Estimated tokens of the longest common prefix of this list and the last turn's.
    pub cached_tokens: usize,
    /// Whether the last turn's list is a prefix of this one (false on a conversation's first
    /// turn).
    pub prefix_stable: bool,
    /// Whether the turn's topic differs from the last turn's (false on a first turn).
    pub topic_switch: bool,
}

/// The figures of a [`run_conversations`], ×100 where a share.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConversationMetrics {
    /// Conversations run.
    pub conversations: usize,
    /// Turns run.
    pub turns: usize,
    /// Mean share of a turn's gold tools that were sent, over turns with gold tools (%).
    pub recall: f64,
    /// Mean share of a turn's gold tools that were sent or are reachable within one search
    /// (among the best [`SEARCH_DEPTH`] that `search_tools` returns for the turn's message),
    /// over turns with gold tools (%). A floor: the model's own search query is usually better
    /// than the raw message.
    pub reachable: f64,
    /// Turns with gold tools that got every one of them sent (%).
    pub complete: f64,
    /// Follow-up turns (every turn but a conversation's first).
    pub follow_ups: usize,
    /// Follow-ups whose topic is the last turn's.
    pub same_topic_follow_ups: usize,
    /// Of those, the prefix-stable ones (%).
    pub prefix_stable_same_topic: f64,
    /// Of all follow-ups, the prefix-stable ones (%).
    pub prefix_stable: f64,
    /// Topic switches (follow-ups whose topic differs from the last turn's).
    pub topic_switches: usize,
    /// Re-packs (follow-ups that are not prefix-stable) per topic run that starts with a
    /// switch, on average.
    pub repacks_per_switch: f64,
    /// The most re-packs in any one topic run after a switch.
    pub max_repacks_after_switch: usize,
    /// The most re-packs in any one topic run, the conversation's first included.
    pub max_repacks_per_topic: usize,
    /// Mean estimated tokens of tool definitions sent per turn.
    pub tokens_per_turn: f64,
    /// Mean estimated cached prefix tokens per follow-up turn.
    pub cached_tokens_per_follow_up: f64,
    /// Cached prefix tokens as a share of the tokens sent on follow-up turns (%).
    pub cached_share: f64,
    /// Mean number of tools sent per turn.
    pub tools_per_turn: f64,
}

/// The outcome of [`run_conversations`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConversationReport {
    /// Every turn, conversation by conversation.
    pub turns: Vec<TurnRun>,
    /// The figures.
    pub metrics: ConversationMetrics,
    /// The figures of each kind of conversation ([`ScriptedConversation::kind`]), in the
    /// order the kinds first appear; empty when no conversation names its kind.
    pub by_kind: Vec<(String, ConversationMetrics)>,
    /// Wall time of all the selections.
    #[serde(skip)]
    pub select_time: Duration,
}

/// Runs every conversation through a fresh [`Conversation`] and `builder` over `snapshot`, as
/// an agent would: each turn is selected, then the model's calls (`used`, else `gold`, among
/// the tools sent) are recorded in the conversation. Nothing is learned from the calls (the
/// cold figure; [`run_conversations_learning`] learns as it goes). Errors if a turn names a
/// tool the snapshot does not hold.
///
/// ```
/// use capstore::context::ContextBuilder;
/// use capstore::eval::{ScriptedConversation, ScriptedTurn, run_conversations};
/// let c = ScriptedConversation { id: "c".into(), kind: None, turns: vec![ScriptedTurn {
///     user: "hi".into(), gold: vec!["nope".into()], used: None, topic: None }] };
/// let err = run_conversations(&capstore::Store::new().snapshot(), &ContextBuilder::new(), &[c]).unwrap_err();
/// assert_eq!(err.to_string(), "conversation \"c\", turn 1: no tool \"nope\" in the store");
/// ```
pub fn run_conversations(
    snapshot: &Snapshot,
    builder: &ContextBuilder,
    conversations: &[ScriptedConversation],
) -> Result<ConversationReport, EvalError> {
    check_names(snapshot, conversations)?;
    run(Source::Fixed(snapshot), builder, conversations)
}

/// [`run_conversations`] as a deployed agent learns: after each turn is scored, the turn's
/// calls (`used`, else `gold`, in order, sent or not: the model would have found the missing
/// ones with `search_tools`) are counted into `store`'s [`USAGE`](crate::USAGE) table with
/// what the turn sent ([`learn`]), so each later turn (of this conversation and the next) is
/// selected with what the earlier ones taught.
///
/// ```
/// use capstore::context::ContextBuilder;
/// use capstore::eval::{parse_conversations, run_conversations_learning};
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("startEngine", "Start the engine").with_source("car"))?;
///     tx.insert(&TOOLS, Tool::new("pressBrakePedal", "Press the brake pedal").with_source("car"))
/// })?;
/// let line = r#"{"id": "ID", "turns": [{"user": "start the engine", "gold": ["car/pressBrakePedal", "car/startEngine"]}]}"#;
/// let text: Vec<String> = (0..4).map(|i| line.replace("ID", &i.to_string())).collect();
/// let conversations = parse_conversations("c.jsonl", &text.join("\n"))?;
/// let report = run_conversations_learning(&store, &ContextBuilder::new(), &conversations)?;
/// // Cold for two conversations (a companion needs two turns of evidence), then learned.
/// let complete: Vec<bool> = report.turns.iter().map(|t| t.missed.is_empty()).collect();
/// assert_eq!(complete, [false, false, true, true]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_conversations_learning(
    store: &Store,
    builder: &ContextBuilder,
    conversations: &[ScriptedConversation],
) -> Result<ConversationReport, EvalError> {
    check_names(&store.snapshot(), conversations)?;
    run(Source::Learning(store), builder, conversations)
}

/// Counts every turn's calls of `conversations` (`used`, else `gold`, in order) into `store`'s
/// [`USAGE`](crate::USAGE) table, as if an agent had run them, without selecting anything:
/// what `capstore eval --learn-from FILE` replays before it measures. Returns the turns
/// counted. Errors if a turn names a tool the store does not hold.
///
/// ```
/// use capstore::eval::{learn_from_conversations, parse_conversations};
/// use capstore::{Store, Tool, TOOLS, USAGE};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory")))?;
/// let c = parse_conversations("c.jsonl", r#"{"id": "a", "turns": [{"user": "go to docs", "gold": ["cd"]}]}"#)?;
/// assert_eq!(learn_from_conversations(&store, &c)?, 1);
/// assert_eq!(store.snapshot().get(&USAGE, "cd")?.map(|u| u.turns), Some(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn learn_from_conversations(
    store: &Store,
    conversations: &[ScriptedConversation],
) -> Result<usize, EvalError> {
    check_names(&store.snapshot(), conversations)?;
    let mut turns = 0;
    for c in conversations {
        let mut previous: Vec<String> = Vec::new();
        for scripted in &c.turns {
            let called = scripted.used.as_ref().unwrap_or(&scripted.gold).clone();
            let turn = TurnUse {
                called,
                sent: Vec::new(),
                previous: std::mem::take(&mut previous),
            };
            store
                .write(|tx| learn(tx, &turn))
                .map_err(|source| EvalError::Store { id: None, source })?;
            previous = distinct(&turn.called);
            turns += 1;
        }
    }
    Ok(turns)
}

/// Where a run reads its snapshots: one fixed snapshot, or a store it learns into.
#[derive(Clone, Copy)]
enum Source<'s> {
    Fixed(&'s Snapshot),
    Learning(&'s Store),
}

/// Errors if a turn of `conversations` names a tool `snapshot` does not hold.
fn check_names(
    snapshot: &Snapshot,
    conversations: &[ScriptedConversation],
) -> Result<(), EvalError> {
    for c in conversations {
        for (i, turn) in c.turns.iter().enumerate() {
            let named = turn.gold.iter().chain(turn.used.iter().flatten());
            for key in named {
                let known = snapshot
                    .contains(&TOOLS, key)
                    .map_err(|source| EvalError::Store { id: None, source })?;
                if !known {
                    return Err(EvalError::UnknownTool {
                        conversation: c.id.clone(),
                        turn: i + 1,
                        key: key.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The distinct names of `called`, in first-call order.
fn distinct(called: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for tool in called {
        if !out.contains(tool) {
            out.push(tool.clone());
        }
    }
    out
}

fn run(
    source: Source<'_>,
    builder: &ContextBuilder,
    conversations: &[ScriptedConversation],
) -> Result<ConversationReport, EvalError> {
    let mut turns = Vec::new();
    let mut select_time = Duration::ZERO;
    for c in conversations {
        let mut conversation = Conversation::new();
        let mut last: Vec<(String, usize)> = Vec::new();
        let mut last_topic: Option<&str> = None;
        let mut last_called: Vec<String> = Vec::new();
        for (i, scripted) in c.turns.iter().enumerate() {
            let current: Arc<Snapshot>;
            let snapshot: &Snapshot = match source {
                Source::Fixed(snapshot) => snapshot,
                Source::Learning(store) => {
                    current = store.snapshot();
                    &current
                }
            };
            let turn = conversation.next_turn(scripted.user.as_str());
            let started = Instant::now();
            let selection = builder.select(snapshot, &turn).map_err(EvalError::Select)?;
            select_time += started.elapsed();
            conversation.record_selection(&selection);
            let sent: Vec<(String, usize)> = selection
                .tools
                .iter()
                .map(|t| (t.key.to_string(), estimate_tokens(&t.tool)))
                .collect();
            let was_sent = |key: &String| sent.iter().any(|(k, _)| k == key);
            let called = scripted.used.as_ref().unwrap_or(&scripted.gold);
            for key in called {
                if was_sent(key) {
                    conversation.record_tool_use(key.as_str());
                }
            }
            let common = last
                .iter()
                .zip(&sent)
                .take_while(|(a, b)| a.0 == b.0)
                .count();
            let topic = scripted.topic.as_deref();
            let missed: Vec<String> = scripted
                .gold
                .iter()
                .filter(|k| !was_sent(k))
                .cloned()
                .collect();
            let unreachable = if missed.is_empty() {
                Vec::new()
            } else {
                let arguments = json!({"query": scripted.user, "limit": SEARCH_DEPTH});
                let found = search_tools(snapshot, &arguments)
                    .map_err(|source| EvalError::Store { id: None, source })?;
                missed
                    .iter()
                    .filter(|k| !found.iter().any(|f| f.name == **k))
                    .cloned()
                    .collect()
            };
            let channels = selection
                .tools
                .iter()
                .map(|t| match t.channel {
                    // The turn numbered i + 1 last needed it `idle_turns` turns before.
                    Channel::Kept { idle_turns } => format!(
                        "kept from turn {}",
                        (i + 1).saturating_sub(idle_turns as usize)
                    ),
                    other => other.to_string(),
                })
                .collect();
            if let Source::Learning(store) = source {
                // Scored first: what the turn teaches reaches only the turns after it.
                let turn = TurnUse {
                    called: called.clone(),
                    sent: selection.offered().map(str::to_string).collect(),
                    previous: std::mem::replace(&mut last_called, distinct(called)),
                };
                store
                    .write(|tx| learn(tx, &turn))
                    .map_err(|source| EvalError::Store { id: None, source })?;
            }
            turns.push(TurnRun {
                conversation: c.id.clone(),
                turn: i,
                channels,
                missed,
                unreachable,
                gold: scripted.gold.len(),
                tokens: sent.iter().map(|(_, t)| t).sum(),
                cached_tokens: sent.iter().take(common).map(|(_, t)| t).sum(),
                prefix_stable: i > 0 && common == last.len(),
                topic_switch: i > 0 && topic != last_topic,
                sent: sent.iter().map(|(k, _)| k.clone()).collect(),
            });
            last = sent;
            last_topic = topic;
        }
    }
    let metrics = ConversationMetrics::of(conversations.len(), &turns);
    let by_kind = by_kind(conversations, &turns);
    Ok(ConversationReport {
        turns,
        metrics,
        by_kind,
        select_time,
    })
}

/// The figures of each kind of the `conversations` that name one, from their `turns`.
fn by_kind(
    conversations: &[ScriptedConversation],
    turns: &[TurnRun],
) -> Vec<(String, ConversationMetrics)> {
    let mut kinds: Vec<&str> = Vec::new();
    for kind in conversations.iter().filter_map(|c| c.kind.as_deref()) {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
        .into_iter()
        .map(|kind| {
            let ids: HashSet<&str> = conversations
                .iter()
                .filter(|c| c.kind.as_deref() == Some(kind))
                .map(|c| c.id.as_str())
                .collect();
            let of_kind: Vec<TurnRun> = turns
                .iter()
                .filter(|t| ids.contains(t.conversation.as_str()))
                .cloned()
                .collect();
            (
                kind.to_string(),
                ConversationMetrics::of(ids.len(), &of_kind),
            )
        })
        .collect()
}

impl ConversationMetrics {
    /// The figures of `turns` (in conversation order, as [`run_conversations`] gives them) of
    /// `conversations` conversations.
    ///
    /// ```
    /// use capstore::eval::{ConversationMetrics, TurnRun};
    /// let turn = |turn: usize, sent: &[&str], stable: bool| TurnRun {
    ///     conversation: "c".into(), turn, sent: sent.iter().map(|s| s.to_string()).collect(), channels: vec![],
    ///     missed: vec![], unreachable: vec![], gold: 1, tokens: 10 * sent.len(), cached_tokens: if stable { 10 } else { 0 },
    ///     prefix_stable: stable, topic_switch: false };
    /// let m = ConversationMetrics::of(1, &[turn(0, &["a"], false), turn(1, &["a", "b"], true)]);
    /// assert_eq!((m.recall, m.prefix_stable_same_topic, m.tokens_per_turn, m.cached_share), (100.0, 100.0, 15.0, 50.0));
    /// ```
    pub fn of(conversations: usize, turns: &[TurnRun]) -> Self {
        let percent = |part: usize, whole: usize| {
            if whole == 0 {
                0.0
            } else {
                100.0 * part as f64 / whole as f64
            }
        };
        let mean = |sum: f64, n: usize| if n == 0 { 0.0 } else { sum / n as f64 };
        let with_gold: Vec<&TurnRun> = turns.iter().filter(|t| t.gold > 0).collect();
        let recall_sum: f64 = with_gold
            .iter()
            .map(|t| (t.gold - t.missed.len()) as f64 / t.gold as f64)
            .sum();
        let reachable_sum: f64 = with_gold
            .iter()
            .map(|t| (t.gold - t.unreachable.len()) as f64 / t.gold as f64)
            .sum();
        let follow_ups: Vec<&TurnRun> = turns.iter().filter(|t| t.turn > 0).collect();
        let same_topic: Vec<&&TurnRun> = follow_ups.iter().filter(|t| !t.topic_switch).collect();
        // Re-packs per topic run: a run starts at a conversation's first turn or a switch.
        let mut runs: Vec<(bool, usize)> = Vec::new();
        for t in turns {
            if t.turn == 0 || t.topic_switch {
                runs.push((t.topic_switch, 0));
            }
            if t.turn > 0
                && !t.prefix_stable
                && let Some(run) = runs.last_mut()
            {
                run.1 += 1;
            }
        }
        let after_switch: Vec<usize> = runs.iter().filter(|r| r.0).map(|r| r.1).collect();
        let follow_up_tokens: usize = follow_ups.iter().map(|t| t.tokens).sum();
        let cached: usize = follow_ups.iter().map(|t| t.cached_tokens).sum();
        ConversationMetrics {
            conversations,
            turns: turns.len(),
            recall: 100.0 * mean(recall_sum, with_gold.len()),
            reachable: 100.0 * mean(reachable_sum, with_gold.len()),
            complete: percent(
                with_gold.iter().filter(|t| t.missed.is_empty()).count(),
                with_gold.len(),
            ),
            follow_ups: follow_ups.len(),
            same_topic_follow_ups: same_topic.len(),
            prefix_stable_same_topic: percent(
                same_topic.iter().filter(|t| t.prefix_stable).count(),
                same_topic.len(),
            ),
            prefix_stable: percent(
                follow_ups.iter().filter(|t| t.prefix_stable).count(),
                follow_ups.len(),
            ),
            topic_switches: after_switch.len(),
            repacks_per_switch: mean(
                after_switch.iter().sum::<usize>() as f64,
                after_switch.len(),
            ),
            max_repacks_after_switch: after_switch.iter().copied().max().unwrap_or(0),
            max_repacks_per_topic: runs.iter().map(|r| r.1).max().unwrap_or(0),
            tokens_per_turn: mean(
                turns.iter().map(|t| t.tokens).sum::<usize>() as f64,
                turns.len(),
            ),
            cached_tokens_per_follow_up: mean(cached as f64, follow_ups.len()),
            cached_share: percent(cached, follow_up_tokens),
            tools_per_turn: mean(
                turns.iter().map(|t| t.sent.len()).sum::<usize>() as f64,
                turns.len(),
            ),
        }
    }
}
