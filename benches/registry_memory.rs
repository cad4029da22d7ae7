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

use std::alloc::System;
use std::time::Instant;

use capstore::catalog::Catalog;
use capstore::store::{IndexSchema, StoreBuilder, TableSchema};
use capstore::tools::{ToolTextOptions, tool_text};
use capstore::{Store, Tool};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

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
