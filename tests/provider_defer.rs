//! `ToolExport::with_deferred`: the complete `tools` array for a provider's hosted tool search:
//! the search tool first, the selection's tools, then the rest of the catalog marked
//! `defer_loading`.

use std::path::PathBuf;

use capstore::context::{ContextBuilder, Selection, Turn};
use capstore::mcp::{McpToolList, import_server};
use capstore::provider::{Provider, ToolExport, ToolSearch};
use capstore::{Store, TOOLS};
use serde_json::{Value, json};

const SEARCHES: [ToolSearch; 3] = [
    ToolSearch::AnthropicBm25,
    ToolSearch::AnthropicRegex,
    ToolSearch::OpenAiResponses,
];

fn import(store: &Store, server: &str, file: &str) {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", "mcp", file]
        .iter()
        .collect();
    let text = std::fs::read_to_string(&path).expect("fixture");
    let list = McpToolList::from_json(&text).expect("list");
    import_server(store, server, &list).expect("import");
}

fn catalog() -> Store {
    let store = Store::new();
    import(&store, "filesystem", "filesystem.json");
    import(&store, "github", "github.json");
    import(&store, "web", "web.json");
    store
}

/// A function tool's exported name, in either provider's shape (both keep it at `name`).
fn name(tool: &Value) -> &str {
    tool["name"].as_str().expect("a name")
}

#[test]
fn the_search_tool_then_the_selection_then_every_other_tool_deferred_in_key_order() {
    let store = catalog();
    let snap = store.snapshot();
    let selection = ContextBuilder::new()
        .select(&snap, &Turn::new("search the web for rust release notes"))
        .expect("select");
    assert!(!selection.tools.is_empty());
    let export = ToolExport::for_snapshot(&snap).expect("export");
    for search in SEARCHES {
        let provider = search.provider();
        let all = export
            .with_deferred(search, &snap, &selection)
            .expect("deferred");

        // The search tool first, as the provider names it, never deferred, and only there.
        assert_eq!(all[0], search.tool_json(), "{search:?}");
        assert!(all[0].get("defer_loading").is_none());
        assert_eq!(
            all.iter().filter(|t| **t == search.tool_json()).count(),
            1,
            "{search:?}"
        );

        // Then the selection, in send order, as selection_json gives it, not deferred.
        let selected = export.selection_json(provider, &selection);
        let (head, tail) = all[1..].split_at(selected.len());
        assert_eq!(head, selected.as_slice(), "{search:?}");
        assert!(head.iter().all(|t| t.get("defer_loading").is_none()));

        // Then every other tool, in key order, deferred, in the provider's function shape.
        let expected_rest: Vec<String> = snap
            .iter(&TOOLS)
            .expect("iter")
            .filter(|(key, _)| !selection.contains(key))
            .map(|(key, _)| export.export_name(key).expect("named").to_string())
            .collect();
        let rest: Vec<&str> = tail.iter().map(name).collect();
        assert_eq!(rest, expected_rest, "{search:?}");
        assert!(tail.iter().all(|t| t["defer_loading"] == Value::Bool(true)));
        match provider {
            Provider::Anthropic => {
                assert!(tail.iter().all(|t| t["input_schema"].is_object()));
                assert!(all[1..].iter().all(|t| t.get("type").is_none()));
            }
            Provider::OpenAiResponses => {
                assert!(tail.iter().all(|t| t["parameters"].is_object()));
                assert!(all[1..].iter().all(|t| t["type"] == "function"));
            }
            Provider::OpenAiChat => unreachable!("no tool search"),
        }

        // Keys sorted at every level (`defer_loading` too): the array writes the same bytes in
        // every build, also with serde_json's `preserve_order` (the `rig` feature turns it on).
        let mut sorted = Value::from(all.clone());
        sorted.sort_all_objects();
        assert_eq!(
            serde_json::to_string(&all).expect("writes"),
            sorted.to_string(),
            "{search:?}"
        );

        // Every tool of the catalog exactly once, after the search tool.
        assert_eq!(all.len(), 1 + snap.count(&TOOLS).expect("count"));
        let mut names: Vec<&str> = all[1..].iter().map(name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len() - 1);
    }
}

#[test]
fn an_empty_selection_defers_the_whole_catalog_but_not_the_search_tool() {
    let store = catalog();
    let snap = store.snapshot();
    let export = ToolExport::for_snapshot(&snap).expect("export");
    for search in SEARCHES {
        let all = export
            .with_deferred(search, &snap, &Selection::default())
            .expect("deferred");
        assert_eq!(all.len(), 1 + snap.count(&TOOLS).expect("count"));
        // The one tool not deferred, as the providers require of a request.
        assert_eq!(all[0], search.tool_json());
        assert!(all[0].get("defer_loading").is_none());
        assert!(
            all[1..]
                .iter()
                .all(|t| t["defer_loading"] == Value::Bool(true))
        );
        assert_eq!(all[1]["name"], "create_directory"); // filesystem/create_directory sorts first
    }
}

#[test]
fn each_provider_gets_its_own_search_tool() {
    assert_eq!(ToolSearch::for_provider(Provider::OpenAiChat), None);
    assert_eq!(
        ToolSearch::for_provider(Provider::Anthropic),
        Some(ToolSearch::AnthropicBm25)
    );
    assert_eq!(
        ToolSearch::for_provider(Provider::OpenAiResponses),
        Some(ToolSearch::OpenAiResponses)
    );
    assert_eq!(
        ToolSearch::AnthropicBm25.tool_json(),
        json!({ "type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25" })
    );
    assert_eq!(
        ToolSearch::AnthropicRegex.tool_json(),
        json!({ "type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex" })
    );
    assert_eq!(
        ToolSearch::OpenAiResponses.tool_json(),
        json!({ "type": "tool_search" })
    );
    for search in [ToolSearch::AnthropicBm25, ToolSearch::AnthropicRegex] {
        assert_eq!(search.provider(), Provider::Anthropic);
        assert_eq!(
            search.anthropic_beta(),
            Some("advanced-tool-use-2025-11-20")
        );
    }
    assert_eq!(ToolSearch::OpenAiResponses.anthropic_beta(), None);
}

/// A catalog tool named like a hosted search tool is exported under another name, so the
/// request's `tools` array names every tool once, and a call by the search tool's name never
/// resolves to the catalog tool.
#[test]
fn a_catalog_tool_named_like_the_search_tool_takes_another_name() {
    let store = catalog();
    store
        .write(|tx| {
            tx.insert(
                &TOOLS,
                capstore::Tool::new("tool_search_tool_bm25", "Search the tool shed")
                    .with_source("shed"),
            )?;
            tx.insert(
                &TOOLS,
                capstore::Tool::new("tool_search_tool_regex", "Grep the tool shed"),
            )
        })
        .expect("insert");
    let snap = store.snapshot();
    let selection = ContextBuilder::new()
        .select(&snap, &Turn::new("search the tool shed"))
        .expect("select");
    let export = ToolExport::for_snapshot(&snap).expect("export");
    for search in [ToolSearch::AnthropicBm25, ToolSearch::AnthropicRegex] {
        let tools = export
            .with_deferred(search, &snap, &selection)
            .expect("tools");
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(names.len(), tools.len());
        assert_eq!(tools[0]["name"], search.tool_json()["name"]);
    }
    for (key, reserved) in [
        ("shed/tool_search_tool_bm25", "tool_search_tool_bm25"),
        ("tool_search_tool_regex", "tool_search_tool_regex"),
    ] {
        let exported = export.export_name(key).expect("named");
        assert!(exported.starts_with(&format!("{reserved}_")), "{exported}");
        assert_eq!(export.resolve(exported), Some(key));
        assert_eq!(export.resolve(reserved), None);
    }
    // Every name a search tool goes by is reserved.
    for search in SEARCHES {
        if let Some(name) = search.tool_json()["name"].as_str() {
            assert!(
                capstore::tools::RESERVED_EXPORT_NAMES.contains(&name),
                "{name}"
            );
        }
    }
    assert!(capstore::tools::RESERVED_EXPORT_NAMES.contains(&capstore::context::SEARCH_TOOLS));
    assert!(capstore::tools::RESERVED_EXPORT_NAMES.contains(&"call_tool"));
}
