//! What a tool costs in memory at registry scale, counted by an allocator (issue 24): the live
//! heap a store keeps after loading a catalog file, split into the parts a tool row is made of.
//!
//! ```text
//! CAPSTORE_CATALOG=big.json cargo bench --bench registry_memory
//! ```
//!
//! Each part is measured as the live heap (bytes allocated and not freed, `stats_alloc`) that
//! a store keeps once the parsed catalog is dropped, for stores that hold more and more of
//! what the built-in `tools` table holds:
//! - **records**: a table of the catalog's `Tool` rows keyed by qualified name, nothing else;
//! - **+ indexes**: the same with the built-in table's secondary indexes (name, source, tags,
//!   skill);
//! - **+ BM25**: the same with the built-in text index (the full `tools` table);
//! - **catalog load**: `Catalog::load_into` a new store, skills and their indexes included.
//!
//! The differences between consecutive rows are what each part costs.
//!
//! ```text
//! cargo bench --bench registry_memory -- usage
//! ```
//!
//! **Usage mode** (argument `usage`): what the built-in `usage` table adds (issue 49). A store
//! loads a catalog (`CAPSTORE_CATALOG`, or by default 100,000 synthetic tools made in memory by
//! `capstore::catalog::synthetic`, the same bytes as `capstore gen-catalog --tools 100000`),
//! then counts 1,000,000 calls (`CAPSTORE_USAGE_CALLS`) into its usage table with
//! `usage::learn`, one transaction a turn, as `UsageRecorder::commit_turn` does: conversations
//! of 5 turns, each turn 1–5 calls (uniform), each call a tool drawn from a Zipf popularity
//! (P(rank r) ∝ 1 / r over every tool, the ranks shuffled over the catalog), the previous turn's
//! calls remembered, nothing sent; a fixed-seed SplitMix64. Reported: the live heap the store
//! holds more after the calls than before (the usage rows and their place in the table), the
//! rows, their companions, and the time the turns took (the counting allocator's overhead
//! included).

use std::alloc::System;
use std::time::Instant;

use capstore::catalog::Catalog;
use capstore::catalog::synthetic::{Spec, write_catalog};
use capstore::store::{IndexSchema, StoreBuilder, TableSchema};
use capstore::tools::{ToolTextOptions, tool_text};
use capstore::usage::{Companion, MAX_COMPANIONS, TurnUse, Usage, learn};
use capstore::{Store, TOOLS, Tool, USAGE};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

mod synthetic;
use synthetic::SplitMix64;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap bytes allocated and not yet freed since `region` started.
fn live_bytes(region: &Region<'_, System>) -> i64 {
    let c = region.change();
    c.bytes_allocated as i64 - c.bytes_deallocated as i64
}

/// The catalog's tools, moved out of it.
fn tools_of(catalog: Catalog) -> Vec<Tool> {
    let mut tools = catalog.tools;
    for skill in catalog.skills {
        tools.extend(skill.tools);
    }
    tools
}

/// Which of the `tools` table's parts a measured table has.
#[derive(Clone, Copy)]
enum Parts {
    Records,
    Indexes,
    Text,
}

/// A store with one table of `tools` holding `parts`, filled in one transaction by
/// [`WriteTxn::insert_many`](capstore::store::WriteTxn::insert_many), as a catalog load fills it.
fn store_with(tools: Vec<Tool>, parts: Parts) -> Store {
    let mut schema = TableSchema::new("measured", |t: &Tool| t.qualified_name());
    if matches!(parts, Parts::Indexes | Parts::Text) {
        schema = schema
            .index(IndexSchema::single("name", |t: &Tool| Some(t.name.clone())))
            .index(IndexSchema::single("source", |t: &Tool| t.source.clone()))
            .index(IndexSchema::multi("tags", |t: &Tool| t.tags.clone()))
            .index(IndexSchema::multi("skill", |t: &Tool| t.skills.clone()));
    }
    if matches!(parts, Parts::Text) {
        let options = ToolTextOptions::default();
        schema = schema.text_index(
            capstore::store::TextSchema::new(tool_text)
                .tokenizer(options.tokenizer)
                .config(options.index),
        );
    }
    let mut builder = StoreBuilder::new();
    let table = builder.table(schema).expect("schema");
    let store = builder.build();
    let mut tx = store.begin();
    tx.insert_many(&table, tools).expect("insert");
    tx.commit();
    store
}

fn main() {
    if std::env::args().any(|a| a == "usage") {
        usage_memory();
        return;
    }
    let Ok(path) = std::env::var("CAPSTORE_CATALOG") else {
        eprintln!("registry_memory: set CAPSTORE_CATALOG to a catalog file (see the file's docs)");
        return;
    };
    let text = std::fs::read_to_string(&path).expect("read the catalog");
    let n = tools_of(Catalog::from_json_str(&text).expect("parse")).len();
    println!(
        "{path}: {n} tools, {:.1} MB of JSON ({:.0} B a tool)",
        text.len() as f64 / 1e6,
        text.len() as f64 / n as f64
    );
    let per_tool = |bytes: i64| bytes as f64 / n as f64;

    let region = Region::new(GLOBAL);
    let catalog = Catalog::from_json_str(&text).expect("parse");
    println!(
        "parsed catalog (Catalog value): {:.0} B a tool",
        per_tool(live_bytes(&region))
    );
    drop(catalog);

    let mut previous = 0;
    for (label, parts) in [
        ("records", Parts::Records),
        ("+ indexes", Parts::Indexes),
        ("+ BM25", Parts::Text),
    ] {
        let region = Region::new(GLOBAL);
        let started = Instant::now();
        let store = store_with(
            tools_of(Catalog::from_json_str(&text).expect("parse")),
            parts,
        );
        let elapsed = started.elapsed();
        let live = live_bytes(&region);
        println!(
            "{label:<10} {:>7.0} B a tool ({:+.0} B), {:>7.1} MB in all; parse + load {:.2} s",
            per_tool(live),
            per_tool(live - previous),
            live as f64 / 1e6,
            elapsed.as_secs_f64()
        );
        previous = live;
        drop(store);
    }

    let region = Region::new(GLOBAL);
    let started = Instant::now();
    let store = Store::new();
    Catalog::from_json_str(&text)
        .expect("parse")
        .load_into(&store)
        .expect("load");
    let elapsed = started.elapsed();
    let live = live_bytes(&region);
    println!(
        "catalog load {:>7.0} B a tool ({:+.0} B: skills), {:>7.1} MB in all; parse + load {:.2} s",
        per_tool(live),
        per_tool(live - previous),
        live as f64 / 1e6,
        elapsed.as_secs_f64()
    );
}

/// A number from the environment variable `name`, or `default`.
fn env_count(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v.replace(['_', ','], "").parse().expect("a count"),
        Err(_) => default,
    }
}

/// Turns in a conversation of the usage mode (the previous turn's calls are remembered within one).
const TURNS_A_CONVERSATION: usize = 5;

/// The usage mode: the live heap the `usage` table adds after `CAPSTORE_USAGE_CALLS` calls.
fn usage_memory() {
    let calls = env_count("CAPSTORE_USAGE_CALLS", 1_000_000);
    let catalog = match std::env::var("CAPSTORE_CATALOG") {
        Ok(path) => {
            let text = std::fs::read_to_string(&path).expect("read the catalog");
            println!("{path}");
            Catalog::from_json_str(&text).expect("parse")
        }
        Err(_) => {
            let spec = Spec {
                tools: env_count("CAPSTORE_USAGE_TOOLS", 100_000),
                ..Spec::default()
            };
            let mut json = Vec::new();
            write_catalog(&spec, &mut json).expect("generate");
            println!(
                "synthetic catalog: {} tools, {} a skill, seed {}",
                spec.tools, spec.tools_per_skill, spec.seed
            );
            Catalog::from_json_str(std::str::from_utf8(&json).expect("utf-8")).expect("parse")
        }
    };
    let store = Store::new();
    catalog.load_into(&store).expect("load");
    drop(catalog);
    let mut keys: Vec<String> = store
        .snapshot()
        .iter(&TOOLS)
        .expect("tools")
        .keys()
        .map(|k| k.to_string())
        .collect();
    keys.sort();
    let n = keys.len();
    // Popularity: rank r (0-based) drawn with weight 1 / (r + 1); the ranks shuffled over the keys.
    let mut mix = SplitMix64::new(49);
    for i in (1..n).rev() {
        keys.swap(i, mix.below(i + 1));
    }
    let mut cumulative = Vec::with_capacity(n);
    let mut total = 0.0f64;
    for r in 0..n {
        total += 1.0 / (r + 1) as f64;
        cumulative.push(total);
    }
    let draw = |mix: &mut SplitMix64| {
        let u = mix.next_f64() * total;
        cumulative.partition_point(|&c| c <= u).min(n - 1)
    };
    println!("{n} tools in the store; counting {calls} calls into usage");

    let region = Region::new(GLOBAL);
    let started = Instant::now();
    let mut counted = 0usize;
    let mut turns = 0usize;
    let mut previous: Vec<String> = Vec::new();
    while counted < calls {
        let k = (1 + mix.below(5)).min(calls - counted);
        let called: Vec<String> = (0..k).map(|_| keys[draw(&mut mix)].clone()).collect();
        let mut turn = TurnUse::new(called);
        // A conversation's first turn follows none.
        let last = std::mem::take(&mut previous);
        if !turns.is_multiple_of(TURNS_A_CONVERSATION) {
            turn.previous = last;
        }
        store.write(|tx| learn(tx, &turn)).expect("learn");
        // The next turn's `previous`: this one's distinct calls.
        for tool in turn.called {
            if !previous.contains(&tool) {
                previous.push(tool);
            }
        }
        counted += k;
        turns += 1;
    }
    drop(previous);
    let elapsed = started.elapsed();
    let live = live_bytes(&region);

    let snapshot = store.snapshot();
    let rows: Vec<&Usage> = snapshot
        .iter(&USAGE)
        .expect("usage")
        .map(|(_, u)| u)
        .collect();
    let companions: usize = rows.iter().map(|u| u.companions.len()).sum();
    let full = rows
        .iter()
        .filter(|u| u.companions.len() == MAX_COMPANIONS)
        .count();
    let learned_calls: u64 = rows.iter().map(|u| u.calls).sum();
    assert_eq!(learned_calls, calls as u64, "every call counted");
    // The rows' own heap (key strings, companion lists and their keys), without the table's.
    let own: usize = rows
        .iter()
        .map(|u| {
            u.tool.capacity()
                + u.companions.capacity() * std::mem::size_of::<Companion>()
                + u.companions
                    .iter()
                    .map(|c| c.tool.capacity())
                    .sum::<usize>()
        })
        .sum();
    let per_row = |bytes: f64| bytes / rows.len() as f64;
    println!(
        "{calls} calls in {turns} turns counted in {:.2} s ({:.1} µs a turn, one transaction each)",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / turns as f64
    );
    println!(
        "usage rows: {} ({:.1}% of the tools); companions {companions} ({:.1} a row, {full} rows full at {MAX_COMPANIONS})",
        rows.len(),
        100.0 * rows.len() as f64 / n as f64,
        companions as f64 / rows.len() as f64
    );
    println!(
        "live heap the usage table adds: {:.1} MB, {:.0} B a row, {:.0} B a tool of the store; \
         of which the rows' own heap (keys, companion lists) {:.1} MB, {:.0} B a row (+ {} B the record in the table)",
        live as f64 / 1e6,
        per_row(live as f64),
        live as f64 / n as f64,
        own as f64 / 1e6,
        per_row(own as f64),
        std::mem::size_of::<Usage>()
    );
}
