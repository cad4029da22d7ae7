//! `ToolExport::anthropic_with_deferred`: the whole catalog for Anthropic, with the tools the
//! selection did not choose marked `defer_loading`.

use std::path::PathBuf;

use capstore::context::{ContextBuilder, Selection, Turn};
use capstore::mcp::{McpToolList, import_server};
use capstore::provider::{Provider, ToolExport};
use capstore::{Store, TOOLS};
use serde_json::Value;

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

#[test]
fn selected_tools_come_first_and_every_other_tool_is_deferred_in_key_order() {
    let store = catalog();
    let snap = store.snapshot();
    let selection = ContextBuilder::new()
        .select(&snap, &Turn::new("search the web for rust release notes"))
        .expect("select");
    assert!(!selection.tools.is_empty());
    let export = ToolExport::for_snapshot(&snap).expect("export");
    let all = export
        .anthropic_with_deferred(&snap, &selection)
        .expect("deferred");

    let selected = export.selection_json(Provider::Anthropic, &selection);
    let (head, tail) = all.split_at(selected.len());
    assert_eq!(head, selected.as_slice());
    assert!(head.iter().all(|t| t.get("defer_loading").is_none()));

    let expected_rest: Vec<String> = snap
        .iter(&TOOLS)
        .expect("iter")
        .filter(|(key, _)| !selection.contains(key))
        .map(|(key, _)| export.export_name(key).expect("named").to_string())
        .collect();
    let rest: Vec<&str> = tail
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(rest, expected_rest);
    assert!(tail.iter().all(|t| t["defer_loading"] == Value::Bool(true)));
    assert!(tail.iter().all(|t| t["input_schema"].is_object()));

    // Every tool of the catalog exactly once.
    assert_eq!(all.len(), snap.count(&TOOLS).expect("count"));
    let mut names: Vec<&str> = all
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len());
}

#[test]
fn an_empty_selection_defers_the_whole_catalog() {
    let store = catalog();
    let snap = store.snapshot();
    let export = ToolExport::for_snapshot(&snap).expect("export");
    let all = export
        .anthropic_with_deferred(&snap, &Selection::default())
        .expect("deferred");
    assert_eq!(all.len(), snap.count(&TOOLS).expect("count"));
    assert!(all.iter().all(|t| t["defer_loading"] == Value::Bool(true)));
    assert_eq!(all[0]["name"], "create_directory"); // filesystem/create_directory sorts first
}
