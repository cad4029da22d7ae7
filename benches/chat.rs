//! A conversation's turn through `agent::Chat`, learning on against learning off (issue 57:
//! learning should cost a turn at most 1.2× the turn without it).
//!
//! Run: `cargo bench --bench chat`.
//!
//! The store holds the bundled catalog (222 tools), each tool with a handler that answers at
//! once. One iteration is one turn of `bench/conversations/dev.jsonl` (its 384 turns in order,
//! over and over): `Chat::turn(message)` (the selection with the conversation so far and the
//! definitions in OpenAI's shape), then `Chat::call` of each of the turn's gold tools, by
//! qualified name, with the smallest arguments its schema takes; at a conversation's end,
//! `Chat::finish` and a new `Chat` (both timed). Every arm does the same work but for learning:
//!
//! - `chat/turn_no_learning`: `with_learning(false)`.
//! - `chat/turn_learning`: the default: each finished turn queued on the chat's own
//!   `UsageQueue` (default limits), the queue written when the conversation finishes.
//! - `chat/turn_learning_per_turn`: a queue of `max_turns: 1`: a transaction per turn, as
//!   before issue 57 (the export names cached as after it), for comparison.
//! - `chat/turn_reading_usage`: learning off over a store whose usage table the script's turns
//!   filled first (10 passes, 3,840 turns): what reading the learned rows costs a turn (the
//!   companions brought, their definitions) without writing any.
//!
//! The learning arms' usage table grows as they run and soon holds its steady state (every
//! row dev's gold names, companions full where they fill). Without `--bench` (as under
//! `cargo test --benches`) each bench runs once.
//!
//! `chat/paired` (printed after criterion's figures): the same four arms in rounds, each round
//! every arm playing the whole script (384 turns) in turn, 5 rounds of warm-up and 30
//! measured; the median of each arm's time a turn, and the median of the rounds' ratios to
//! `turn_no_learning`. The arms share the machine's moments, so the ratio holds where the
//! criterion figures, taken one arm after the other on a shared machine, drift.

use std::time::Duration;

use capstore::agent::Chat;
use capstore::context::ContextBuilder;
use capstore::eval::{ScriptedConversation, load_conversations};
use capstore::exec::ToolHandler;
use capstore::usage::{BatchLimits, UsageQueue};
use capstore::{HANDLERS, Store, TOOLS};
use criterion::Criterion;
use serde_json::{Map, Value, json};

fn main() {
    let mut crit = Criterion::default().configure_from_args();
    turns(&mut crit);
    crit.final_summary();
    if std::env::args().any(|a| a == "--bench") {
        paired(5, 30);
    }
}

/// `chat/paired`: the arms in alternation, `warm` rounds then `rounds` measured.
fn paired(warm: usize, rounds: usize) {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/conversations/dev.jsonl");
    let conversations = load_conversations(file).expect("conversations");
    let mut players: Vec<Player> = ARMS.iter().map(|name| player_for(name)).collect();
    let script = script(&players[0].store, &conversations);
    let mut per_turn: Vec<Vec<f64>> = vec![Vec::new(); ARMS.len()];
    for round in 0..warm + rounds {
        for (arm, player) in players.iter_mut().enumerate() {
            let started = std::time::Instant::now();
            for _ in 0..script.len() {
                std::hint::black_box(player.turn(&script));
            }
            if round >= warm {
                per_turn[arm].push(started.elapsed().as_secs_f64() * 1e6 / script.len() as f64);
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    for (arm, name) in ARMS.iter().enumerate() {
        let ratios: Vec<f64> = per_turn[arm]
            .iter()
            .zip(&per_turn[0])
            .map(|(t, base)| t / base)
            .collect();
        eprintln!(
            "chat/paired/{name}: median {:.1} µs a turn over {rounds} rounds of {} turns; median ratio to turn_no_learning {:.3}x",
            median(per_turn[arm].clone()),
            script.len(),
            median(ratios)
        );
    }
}

/// The arms, the first the one the others are compared with.
const ARMS: [&str; 4] = [
    "turn_no_learning",
    "turn_learning",
    "turn_reading_usage",
    "turn_learning_per_turn",
];

/// A player for the arm `name`, its store prepared (`turn_reading_usage`: usage learned first).
fn player_for(name: &str) -> Player {
    let learning = match name {
        "turn_learning" => Learning::Batched,
        "turn_learning_per_turn" => Learning::PerTurn,
        _ => Learning::Off,
    };
    let mut player = Player::new(learning);
    if name == "turn_reading_usage" {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/conversations/dev.jsonl");
        let conversations = load_conversations(file).expect("conversations");
        let script = script(&player.store, &conversations);
        player.learning = Learning::Batched;
        for _ in 0..10 * script.len() {
            player.turn(&script);
        }
        if let Some(mut chat) = player.chat.take() {
            chat.finish().expect("finish");
        }
        player.learning = Learning::Off;
        player.next = 0;
        player.finishing = Duration::ZERO;
    }
    player
}

/// How a chat of the bench learns.
#[derive(Clone, Copy)]
enum Learning {
    Off,
    Batched,
    PerTurn,
}

/// The bundled catalog, every tool with a handler that answers at once; its selection policy.
fn store() -> (Store, ContextBuilder) {
    let catalog = capstore::catalog::Catalog::bundled().expect("bundled catalog");
    let store = Store::new();
    catalog.load_into(&store).expect("load");
    let keys: Vec<String> = store
        .snapshot()
        .iter(&TOOLS)
        .expect("tools")
        .keys()
        .map(|k| k.to_string())
        .collect();
    store
        .write(|tx| {
            for key in &keys {
                tx.upsert(
                    &HANDLERS,
                    ToolHandler::new(key.as_str(), |_| async { Ok(json!("done")) }),
                )?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("handlers");
    let builder = ContextBuilder::with_policy(catalog.policy()).expect("policy");
    (store, builder)
}

/// The smallest arguments `schema` takes: each required property, a value of its type.
fn arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    let properties = schema.get("properties");
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("x"),
        };
        args.insert(name.to_string(), value);
    }
    Value::Object(args)
}

/// One turn to play: its message and the calls the model makes (qualified name, arguments).
struct Scripted {
    message: String,
    calls: Vec<(String, Value)>,
    /// The conversation's first turn.
    first: bool,
}

fn script(store: &Store, conversations: &[ScriptedConversation]) -> Vec<Scripted> {
    let snap = store.snapshot();
    let mut out = Vec::new();
    for c in conversations {
        for (i, t) in c.turns.iter().enumerate() {
            let calls = t
                .used
                .as_ref()
                .unwrap_or(&t.gold)
                .iter()
                .filter_map(|key| {
                    let tool = snap.get(&TOOLS, key).ok()??;
                    Some((key.clone(), arguments(&tool.input_schema.to_value())))
                })
                .collect();
            out.push(Scripted {
                message: t.user.clone(),
                calls,
                first: i == 0,
            });
        }
    }
    out
}

/// Plays the script turn after turn, a chat per conversation.
struct Player {
    store: Store,
    builder: ContextBuilder,
    learning: Learning,
    chat: Option<Chat>,
    next: usize,
    runtime: tokio::runtime::Runtime,
    failed_calls: usize,
    /// Time spent in `Chat::finish` (where the default queue writes its batch).
    finishing: Duration,
}

impl Player {
    fn new(learning: Learning) -> Player {
        let (store, builder) = store();
        Player {
            store,
            builder,
            learning,
            chat: None,
            next: 0,
            runtime: tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime"),
            failed_calls: 0,
            finishing: Duration::ZERO,
        }
    }

    fn new_chat(&self) -> Chat {
        let chat = Chat::new(self.store.clone()).with_builder(self.builder.clone());
        match self.learning {
            Learning::Off => chat.with_learning(false),
            Learning::Batched => chat,
            Learning::PerTurn => {
                let each = BatchLimits {
                    max_turns: 1,
                    ..BatchLimits::default()
                };
                chat.with_usage_queue(UsageQueue::with_limits(self.store.clone(), each))
            }
        }
    }

    fn turn(&mut self, script: &[Scripted]) -> usize {
        let scripted = &script[self.next % script.len()];
        self.next += 1;
        if scripted.first || self.chat.is_none() {
            if let Some(mut done) = self.chat.take() {
                let started = std::time::Instant::now();
                done.finish().expect("finish");
                self.finishing += started.elapsed();
            }
            self.chat = Some(self.new_chat());
        }
        let Some(chat) = self.chat.as_mut() else {
            return 0;
        };
        let turn = chat.turn(&scripted.message).expect("turn");
        let mut sent = turn.tools.len();
        for (key, args) in &scripted.calls {
            match self.runtime.block_on(chat.call(key, args.clone())) {
                Ok(out) => sent += usize::from(out.output.is_string()),
                Err(_) => self.failed_calls += 1,
            }
        }
        sent
    }
}

fn turns(crit: &mut Criterion) {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/conversations/dev.jsonl");
    let conversations = load_conversations(file).expect("conversations");
    let mut group = crit.benchmark_group("chat");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6));
    for name in ARMS {
        let mut player = player_for(name);
        let script = script(&player.store, &conversations);
        let calls: usize = script.iter().map(|s| s.calls.len()).sum();
        group.bench_function(name, |b| b.iter(|| player.turn(&script)));
        let version = player.store.version();
        let rows = player
            .store
            .snapshot()
            .count(&capstore::USAGE)
            .expect("usage");
        eprintln!(
            "chat/{name}: {} turns played ({} turns, {calls} calls in the script), {} calls refused, store version {version}, {rows} usage rows, {:.1} µs a turn in Chat::finish",
            player.next,
            script.len(),
            player.failed_calls,
            player.finishing.as_secs_f64() * 1e6 / player.next.max(1) as f64
        );
    }
    group.finish();
}
