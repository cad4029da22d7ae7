//! Build a store, register tools from three sources, query them by source and tag, search them
//! by BM25 for a user message, and let a ContextBuilder choose what to send, with its reasons.
//!
//! Run with `cargo run --release --example quickstart` (optionally followed by a message).

use capstore::context::{ContextBuilder, Turn};
use capstore::{Store, TOOLS, TOOLS_BY_SOURCE, TOOLS_BY_TAG, Tool};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::new();

    // One transaction: all of these become visible together, as version 1.
    let info = store.update(|tx| {
        for tool in catalog() {
            tx.insert(&TOOLS, tool)?;
        }
        Ok(())
    })?;
    println!(
        "registered {} tools as version {}",
        info.changes.changes.len(),
        info.version
    );

    let snap = store.snapshot();
    for source in ["fs", "github", "web"] {
        let names: Vec<&str> = snap
            .by(&TOOLS_BY_SOURCE, source)?
            .map(|(key, _)| &**key)
            .collect();
        println!("source {source:>7}: {}", names.join(", "));
    }
    for tag in ["read-only", "search"] {
        let names: Vec<&str> = snap
            .by(&TOOLS_BY_TAG, tag)?
            .map(|(key, _)| &**key)
            .collect();
        println!("tag {tag:>9}: {}", names.join(", "));
    }

    let message = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let message = if message.is_empty() {
        "find open issues about the login bug in our repo".to_string()
    } else {
        message
    };
    println!("\nBM25 top 3 for {message:?}:");
    for hit in snap.search(&TOOLS, &message, 3)? {
        println!("  {:>6.3}  {}", hit.score, hit.key);
        if let Some(why) = snap.explain(&TOOLS, &hit.key, &message)? {
            for term in why.terms.iter().filter(|t| t.score > 0.0) {
                println!(
                    "          {:<10} tf {:.0} df {} idf {:.3} -> {:.3}",
                    term.term, term.tf, term.doc_freq, term.idf, term.score
                );
            }
        }
    }
    let selection = ContextBuilder::new().select(&snap, &Turn::new(message.clone()))?;
    println!(
        "\nContextBuilder selection (snapshot v{}, ~{} tokens):",
        selection.version, selection.tokens
    );
    for tool in &selection.tools {
        println!("  {:<22} {}", tool.key, tool.reasons[0]);
    }
    for miss in selection.dropped.iter().take(3) {
        println!("  dropped {:<14} {}", miss.key, miss.reason);
    }
    Ok(())
}

fn catalog() -> Vec<Tool> {
    let path = json!({"type": "object", "properties": {"path": {"type": "string", "description": "File path"}}, "required": ["path"]});
    vec![
        Tool::new("read_file", "Read the contents of a file")
            .with_source("fs")
            .with_tags(["files", "read-only"])
            .with_input_schema(path.clone()),
        Tool::new("write_file", "Write text to a file, replacing it")
            .with_source("fs")
            .with_tags(["files"])
            .with_input_schema(path.clone()),
        Tool::new("list_directory", "List the entries of a directory")
            .with_source("fs")
            .with_tags(["files", "read-only"])
            .with_input_schema(path),
        Tool::new("search_files", "Search file contents for a pattern")
            .with_source("fs")
            .with_tags(["files", "search", "read-only"]),
        Tool::new(
            "search_issues",
            "Search issues and pull requests in a repository",
        )
        .with_source("github")
        .with_tags(["code", "search", "read-only"]),
        Tool::new("create_issue", "Open a new issue in a repository")
            .with_source("github")
            .with_tags(["code"]),
        Tool::new(
            "get_pull_request",
            "Get a pull request with its diff and review comments",
        )
        .with_source("github")
        .with_tags(["code", "read-only"]),
        Tool::new("search", "Search the public code of a repository")
            .with_source("github")
            .with_tags(["code", "search", "read-only"]),
        Tool::new("search", "Search the web and return the top results")
            .with_source("web")
            .with_tags(["web", "search", "read-only"]),
        Tool::new("fetch", "Fetch a URL and return its text")
            .with_source("web")
            .with_tags(["web", "read-only"]),
        Tool::new("get_weather", "Current weather and forecast for a city")
            .with_source("web")
            .with_tags(["web", "read-only"]),
    ]
}
