//! The Rust side of the binding's speed benchmark (`bindings/python/bench/speed.py`, which runs
//! this and then the same selections through Python, and prints both).
//!
//! Over the bundled catalog with the default policy, lexical, OpenAI's shape, for every user
//! message of the conversations file given (by default `bench/conversations/dev.jsonl`):
//! - `select`: `ContextBuilder::select` on a snapshot, what `Store.select(message)` runs;
//! - `select_definitions`: the same and the definitions (`ToolExport::selection_json`, the
//!   export computed once per version as the binding caches it), what
//!   `Store.select(message).definitions` asks of the library;
//! - `conversation`, `conversation_definitions`: the same per turn of each conversation, as
//!   `store.conversation(learn=False).select(message)` runs it: the turn before ended (its
//!   usage dropped), a snapshot, `Conversation::next_turn`, `select`, `record_selection`, the
//!   tools sent recorded (`UsageRecorder::sent`), the export names (`ToolExport::cached`);
//! - `learning`, `learning_definitions`: the same with learning on, as
//!   `store.conversation().select(message)` runs it: the turn before queued
//!   (`UsageQueue::push`, which writes a batch when one fills), the queue flushed when a
//!   conversation ends (untimed, as Python's when the conversation is dropped).
//!
//! Prints one JSON object: each mode's median call, in microseconds, over `ROUNDS` rounds.
//!
//! Run: `cargo run --release -p capstore-python --example select_speed -- [FILE] [ROUNDS]`.

use std::hint::black_box;
use std::time::Instant;

use std::sync::Arc;

use capstore::Store;
use capstore::catalog::Catalog;
use capstore::context::{ContextBuilder, Conversation, SelectionPolicy, Turn};
use capstore::provider::{Provider, ToolExport};
use capstore::usage::{UsageQueue, UsageRecorder};
use serde_json::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .unwrap_or_else(|| "bench/conversations/dev.jsonl".into());
    let rounds: usize = args.next().map_or(Ok(20), |r| r.parse())?;
    let conversations = read_conversations(&file)?;

    let store = Store::new();
    let report = Catalog::bundled()?.move_into(&store)?;
    let builder = ContextBuilder::with_policy(SelectionPolicy {
        pinned_tools: report.pinned,
        ..SelectionPolicy::default()
    })?;
    let snapshot = store.snapshot();
    let export = ToolExport::for_snapshot(&snapshot)?;

    let messages: Vec<&str> = conversations.iter().flatten().map(String::as_str).collect();
    let queue = UsageQueue::new(store.clone());
    let mut cache: Option<Arc<ToolExport>> = None;
    let mut times: [Vec<f64>; 6] = Default::default();
    for _ in 0..rounds {
        for (mode, definitions) in [(0, false), (1, true)] {
            for message in &messages {
                let started = Instant::now();
                let selection = builder.select(&snapshot, &Turn::new(*message))?;
                if definitions {
                    black_box(export.selection_json(Provider::OpenAiChat, &selection));
                }
                black_box(selection);
                times[mode].push(started.elapsed().as_secs_f64());
            }
        }
        for (mode, definitions, learn) in [
            (2, false, false),
            (3, true, false),
            (4, false, true),
            (5, true, true),
        ] {
            for conversation in &conversations {
                let mut state = Conversation::new();
                let recorder = UsageRecorder::new();
                for message in conversation {
                    let started = Instant::now();
                    let turn = recorder.finish_turn();
                    if learn {
                        queue.push(turn)?;
                    }
                    let snapshot = store.snapshot();
                    let next = state.next_turn(message.as_str());
                    let selection = builder.select(&snapshot, &next)?;
                    state.record_selection(&selection);
                    recorder.sent(selection.offered());
                    let export = ToolExport::cached(&mut cache, &snapshot)?;
                    if definitions {
                        black_box(export.selection_json(Provider::OpenAiChat, &selection));
                    }
                    black_box(selection);
                    times[mode].push(started.elapsed().as_secs_f64());
                }
                if learn {
                    queue.push(recorder.finish_turn())?;
                    queue.flush()?;
                }
            }
        }
    }
    let [
        select,
        select_definitions,
        conversation,
        conversation_definitions,
        learning,
        learning_definitions,
    ] = &mut times;
    println!(
        "{}",
        serde_json::json!({
            "messages": messages.len(),
            "rounds": rounds,
            "select_us": median(select) * 1e6,
            "select_definitions_us": median(select_definitions) * 1e6,
            "conversation_us": median(conversation) * 1e6,
            "conversation_definitions_us": median(conversation_definitions) * 1e6,
            "learning_us": median(learning) * 1e6,
            "learning_definitions_us": median(learning_definitions) * 1e6,
        })
    );
    Ok(())
}

/// Each conversation's user messages, in order.
fn read_conversations(file: &str) -> Result<Vec<Vec<String>>, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(file)?;
    let mut conversations = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line)?;
        let turns = value["turns"].as_array().ok_or("a line without turns")?;
        conversations.push(
            turns
                .iter()
                .filter_map(|t| t["user"].as_str().map(str::to_string))
                .collect(),
        );
    }
    Ok(conversations)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
