//! What the usage table costs (issue 49): recording a call, counting a turn into the store, and a
//! selection that reads the learned companions.
//!
//! Run: `cargo bench --features models --bench usage`.
//!
//! - `usage/record_call`: one [`UsageRecorder::called`] (a key copied, a lock, a push). Each
//!   iteration records one call into a recorder whose turn already holds 0–3 calls (in
//!   rotation, so the push is a turn's first to fourth: the first allocates the list); making
//!   and dropping the recorders is untimed (criterion's `iter_batched`). Target: under 5 µs.
//! - `usage/commit_turn`: [`UsageRecorder::commit_turn`] of a turn of 4 distinct calls and 15
//!   tools sent (the 4 among them), the previous turn's 4 calls remembered, into a store holding
//!   the bundled catalog (222 tools) whose usage table already counted 1,000 such turns (its
//!   rows full of companions: the steady state). Recording the turn is untimed. Turns are
//!   pseudo-random over the catalog's keys (fixed seed). Reported, no target.
//! - `select/usage_10k/222` and, in the same run, `select/no_usage/222`: a lexical
//!   `ContextBuilder::select` over the bundled catalog (its pinned tools, default policy,
//!   explain on), each iteration the next turn of the development conversations
//!   (`bench/conversations/dev.jsonl`) as its conversation made it, as `select/conversation/222`
//!   in `benches/select.rs` does. `usage_10k`: the store's usage table first counted 10,000
//!   calls with [`learn`]: dev's turns, each turn's `gold` tools as its calls (the previous
//!   turn's calls as `previous`, nothing sent), the conversations over and over until 10,000
//!   calls (the last turn cut to fit); `no_usage`: the same store without. Target: under 100 µs
//!   a select.
//!
//! Without `--bench` (as under `cargo test --benches`) each bench runs once.

use std::hint::black_box;
use std::time::Duration;

use capstore::context::{Channel, ContextBuilder, Conversation, Selection, Turn};
use capstore::eval::{ScriptedConversation, load_conversations};
use capstore::store::Snapshot;
use capstore::usage::{TurnUse, UsageRecorder, learn};
use capstore::{Store, TOOLS, USAGE};
use criterion::{BatchSize, BenchmarkId, Criterion};

mod synthetic;
use synthetic::SplitMix64;

/// Calls counted into the usage table before `select/usage_10k`.
const LEARNED_CALLS: usize = 10_000;

fn main() {
    let mut crit = Criterion::default().configure_from_args();
    record_call(&mut crit);
    commit_turn(&mut crit);
    selections(&mut crit);
    crit.final_summary();
}

/// A store holding the bundled catalog, and the catalog's selection policy.
fn bundled_store() -> (Store, ContextBuilder) {
    let catalog = capstore::catalog::Catalog::bundled().expect("bundled catalog");
    let store = Store::new();
    catalog.load_into(&store).expect("load");
    let builder = ContextBuilder::with_policy(catalog.policy()).expect("policy");
    (store, builder)
}

/// The bundled catalog's tool keys, in key order.
fn tool_keys(snapshot: &Snapshot) -> Vec<String> {
    let mut keys: Vec<String> = snapshot
        .iter(&TOOLS)
        .expect("tools")
        .keys()
        .map(|k| k.to_string())
        .collect();
    keys.sort();
    keys
}

/// `usage/record_call`.
fn record_call(crit: &mut Criterion) {
    let (store, _) = bundled_store();
    let keys = tool_keys(&store.snapshot());
    let mut group = crit.benchmark_group("usage");
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut i = 0usize;
    group.bench_function("record_call", |b| {
        b.iter_batched(
            || {
                // A turn already holding 0–3 calls, in rotation.
                i += 1;
                let recorder = UsageRecorder::new();
                for k in 0..i % 4 {
                    recorder.called(&keys[(i + k) % keys.len()]);
                }
                (recorder, keys[i % keys.len()].as_str())
            },
            |(recorder, key)| {
                recorder.called(black_box(key));
                recorder
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// Calls and sent tools of one pseudo-random turn: 4 distinct calls, 15 distinct tools sent
/// (the calls first).
fn random_turn(mix: &mut SplitMix64, keys: &[String]) -> (Vec<usize>, Vec<usize>) {
    let mut sent: Vec<usize> = Vec::with_capacity(15);
    while sent.len() < 15 {
        let k = mix.below(keys.len());
        if !sent.contains(&k) {
            sent.push(k);
        }
    }
    (sent[..4].to_vec(), sent)
}

/// `usage/commit_turn`.
fn commit_turn(crit: &mut Criterion) {
    let (store, _) = bundled_store();
    let keys = tool_keys(&store.snapshot());
    let mut mix = SplitMix64::new(49);
    let record = |recorder: &UsageRecorder, (calls, sent): &(Vec<usize>, Vec<usize>)| {
        recorder.sent(sent.iter().map(|&k| keys[k].as_str()));
        for &k in calls {
            recorder.called(&keys[k]);
        }
    };
    // The steady state: 1,000 turns counted, one conversation.
    let warm = UsageRecorder::new();
    for _ in 0..1_000 {
        record(&warm, &random_turn(&mut mix, &keys));
        warm.commit_turn(&store).expect("commit");
    }
    let snapshot = store.snapshot();
    let rows: Vec<_> = snapshot.iter(&USAGE).expect("usage").collect();
    let full = rows
        .iter()
        .filter(|(_, u)| u.companions.len() == capstore::usage::MAX_COMPANIONS)
        .count();
    eprintln!(
        "usage/commit_turn: {} usage rows after 1,000 turns, {full} with {} companions",
        rows.len(),
        capstore::usage::MAX_COMPANIONS
    );
    drop(rows);
    drop(snapshot);

    let mut group = crit.benchmark_group("usage");
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let mut previous = random_turn(&mut mix, &keys);
    group.bench_function("commit_turn", |b| {
        b.iter_batched(
            || {
                let recorder = UsageRecorder::new();
                for &k in &previous.0 {
                    recorder.called(&keys[k]);
                }
                recorder.finish_turn();
                let turn = random_turn(&mut mix, &keys);
                record(&recorder, &turn);
                previous = turn;
                recorder
            },
            |recorder| recorder.commit_turn(&store).expect("commit"),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// Counts dev's turns into `store`'s usage table, each turn's `gold` as its calls, over and
/// over, until `calls` calls (the last turn cut to fit). Returns the turns counted.
fn learn_calls(store: &Store, conversations: &[ScriptedConversation], calls: usize) -> usize {
    let mut counted = 0;
    let mut turns = 0;
    while counted < calls {
        for c in conversations {
            let mut previous: Vec<String> = Vec::new();
            for scripted in &c.turns {
                if counted == calls {
                    return turns;
                }
                let take = scripted.gold.len().min(calls - counted);
                let called = scripted.gold[..take].to_vec();
                let mut next: Vec<String> = Vec::new();
                for tool in &called {
                    if !next.contains(tool) {
                        next.push(tool.clone());
                    }
                }
                let turn =
                    TurnUse::new(called).with_previous(std::mem::replace(&mut previous, next));
                store.write(|tx| learn(tx, &turn)).expect("learn");
                counted += take;
                turns += 1;
            }
        }
    }
    turns
}

/// Dev's turns, each as its conversation made it over `snapshot` (history, tools used, the list
/// carried), as `select/conversation/222` builds them.
fn conversation_turns(
    snapshot: &Snapshot,
    builder: &ContextBuilder,
    conversations: &[ScriptedConversation],
) -> Vec<Turn> {
    let mut turns = Vec::new();
    for scripted in conversations {
        let mut conversation = Conversation::new();
        for t in &scripted.turns {
            let turn = conversation.next_turn(t.user.as_str());
            let selection = builder.select(snapshot, &turn).expect("select");
            conversation.record_selection(&selection);
            for used in t.used.as_ref().unwrap_or(&t.gold) {
                if selection.contains(used) {
                    conversation.record_tool_use(used.as_str());
                }
            }
            turns.push(turn);
        }
    }
    turns
}

/// How many tools the turns' selections over `snapshot` bring through the companion channel.
fn companions_brought(snapshot: &Snapshot, builder: &ContextBuilder, turns: &[Turn]) -> usize {
    turns
        .iter()
        .map(|turn| {
            let selection = builder.select(snapshot, turn).expect("select");
            selection
                .tools
                .iter()
                .filter(|t| t.channel == Channel::Companion)
                .count()
        })
        .sum()
}

/// `select/usage_10k/222` and `select/no_usage/222`.
fn selections(crit: &mut Criterion) {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/conversations/dev.jsonl");
    let conversations = load_conversations(file).expect("conversations");

    let (plain, builder) = bundled_store();
    let plain = plain.snapshot();
    assert_eq!(
        plain.count(&TOOLS).expect("tools"),
        222,
        "the bundled catalog's tools"
    );
    let plain_turns = conversation_turns(&plain, &builder, &conversations);

    let (learned, _) = bundled_store();
    let counted = learn_calls(&learned, &conversations, LEARNED_CALLS);
    let learned = learned.snapshot();
    let learned_turns = conversation_turns(&learned, &builder, &conversations);
    let rows = learned.count(&USAGE).expect("usage");
    let brought = companions_brought(&learned, &builder, &learned_turns);
    eprintln!(
        "select/usage_10k: {LEARNED_CALLS} calls in {counted} turns, {rows} usage rows; \
         companions brought to {} turns: {brought} tools ({:.2} a turn)",
        learned_turns.len(),
        brought as f64 / learned_turns.len() as f64
    );
    assert!(brought > 0, "the companion channel brought nothing");
    assert_eq!(companions_brought(&plain, &builder, &plain_turns), 0);

    for (name, snapshot, turns) in [
        ("select/usage_10k", &learned, &learned_turns),
        ("select/no_usage", &plain, &plain_turns),
    ] {
        time_selections(crit, name, turns.len(), |q| {
            builder.select(snapshot, &turns[q]).expect("select")
        });
    }
}

/// Times `select(q)` in criterion group `name` (parameter 222, the catalog's tools), `q`
/// cycling over `0..count`.
fn time_selections(
    crit: &mut Criterion,
    name: &str,
    count: usize,
    mut select: impl FnMut(usize) -> Selection,
) {
    let mut group = crit.benchmark_group(name);
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut q = 0usize;
    group.bench_function(BenchmarkId::from_parameter(222), |b| {
        b.iter(|| {
            q = (q + 1) % count;
            black_box(select(q))
        })
    });
    group.finish();
}
