//! Importing MCP `tools/list` results: parsing, namespacing, re-import diffs, skills, errors.

use std::path::PathBuf;

use capstore::context::{ContextBuilder, Turn};
use capstore::mcp::{
    McpError, McpToolList, import_server, import_server_in, remove_server, remove_server_in,
};
use capstore::provider::ToolExport;
use capstore::skills::{register_skill, unregister_skill};
use capstore::tools::is_provider_safe;
use capstore::{HANDLERS, Skill, Store, TOOLS, Tool, ToolHandler};
use serde_json::json;

fn fixture(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", "mcp", name]
        .iter()
        .collect();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn list(name: &str) -> McpToolList {
    McpToolList::from_json(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn notion() -> McpToolList {
    McpToolList::from_pages([
        fixture("notion_page1.json").as_str(),
        fixture("notion_page2.json").as_str(),
    ])
    .expect("notion pages")
}

/// The store's whole observable state: its version and every tool, in key order.
fn state(store: &Store) -> (u64, Vec<(String, Tool)>) {
    let snap = store.snapshot();
    let tools = snap
        .iter(&TOOLS)
        .expect("tools")
        .map(|(k, t)| (k.to_string(), t.clone()))
        .collect();
    (snap.version(), tools)
}

fn keys_of(store: &Store, server: &str) -> Vec<String> {
    store
        .snapshot()
        .by_index(&TOOLS, "source", server)
        .expect("source index")
        .map(|(k, _)| k.to_string())
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// filesystem, github, web and notion, imported one after the other.
fn catalog() -> Store {
    let store = Store::new();
    import_server(&store, "filesystem", &list("filesystem.json")).expect("filesystem");
    import_server(&store, "github", &list("github.json")).expect("github");
    import_server(&store, "web", &list("web.json")).expect("web");
    import_server(&store, "notion", &notion()).expect("notion");
    store
}

#[test]
fn every_imported_tool_is_keyed_server_slash_name() {
    let store = Store::new();
    let fs = list("filesystem.json");
    let report = import_server(&store, "filesystem", &fs).expect("import");
    let names: Vec<String> = fs
        .tools()
        .iter()
        .map(|t| format!("filesystem/{}", t.name))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(report.server, "filesystem");
    assert_eq!(report.added, sorted);
    assert!(report.removed.is_empty() && report.changed.is_empty());
    assert_eq!(report.unchanged, 0);
    assert_eq!(report.version, Some(1));
    assert_eq!(keys_of(&store, "filesystem"), sorted);
    let snap = store.snapshot();
    for key in &names {
        let tool = snap.get(&TOOLS, key).expect("read").expect("present");
        assert_eq!(tool.source.as_deref(), Some("filesystem"));
        assert_eq!(tool.tags, ["filesystem"]);
    }
    assert_eq!(
        snap.count_by_index(&TOOLS, "tags", "filesystem")
            .expect("tags"),
        fs.len()
    );
}

#[test]
fn the_same_tool_name_on_three_servers_never_collides() {
    let store = catalog();
    let snap = store.snapshot();
    let searches: Vec<String> = snap
        .by_index(&TOOLS, "name", "search")
        .expect("name index")
        .map(|(k, _)| k.to_string())
        .collect();
    assert_eq!(
        searches,
        strings(&["github/search", "notion/search", "web/search"])
    );
    let descriptions: Vec<&str> = searches
        .iter()
        .map(|k| {
            snap.get(&TOOLS, k)
                .expect("read")
                .expect("present")
                .description
                .as_str()
        })
        .collect();
    assert!(descriptions[0].starts_with("Search GitHub"));
    assert!(descriptions[1].starts_with("Search over the Notion workspace"));
    assert!(descriptions[2].starts_with("Search the web"));

    let export = ToolExport::for_snapshot(&snap).expect("export");
    assert_eq!(export.export_name("github/search"), Some("github__search"));
    assert_eq!(export.export_name("notion/search"), Some("notion__search"));
    assert_eq!(export.export_name("web/search"), Some("web__search"));
    assert_eq!(export.export_name("web/fetch"), Some("web__fetch"));
    assert_eq!(export.export_name("notion/fetch"), Some("notion__fetch"));
    // Unshared names stay as the server wrote them, sanitized where needed.
    assert_eq!(
        export.export_name("github/create_issue"),
        Some("create_issue")
    );
    assert_eq!(export.export_name("web/search.news"), Some("search_news"));
    assert_eq!(
        export.export_name("filesystem/read_text_file"),
        Some("read_text_file")
    );

    let total = snap.count(&TOOLS).expect("count");
    let mut exported = Vec::with_capacity(total);
    for (key, _) in snap.iter(&TOOLS).expect("iter") {
        let name = export
            .export_name(key)
            .expect("every tool has an export name");
        assert!(is_provider_safe(name), "{name}");
        assert_eq!(export.resolve(name), Some(&**key));
        exported.push(name.to_string());
    }
    exported.sort();
    exported.dedup();
    assert_eq!(exported.len(), total);
}

#[test]
fn mcp_fields_land_in_the_record_and_unknown_ones_are_ignored() {
    let store = catalog();
    let snap = store.snapshot();
    let get = |key: &str| snap.get(&TOOLS, key).expect("read").expect(key).clone();

    let web = get("web/search");
    assert_eq!(
        web.description,
        "Search the web for pages matching a query. Returns titles, URLs and snippets."
    );
    assert_eq!(web.input_schema.to_value()["required"], json!(["query"]));
    assert_eq!(web.annotations["title"], "Web Search");
    assert_eq!(web.annotations["readOnlyHint"], true);
    assert_eq!(web.annotations["openWorldHint"], true);
    assert_eq!(
        web.annotations["outputSchema"]["required"],
        json!(["results"])
    );
    // `icons` is not a field this module knows: tolerated, not stored.
    assert!(web.annotations.get("icons").is_none());
    // Sorted: serde_json keeps the order written under `preserve_order` (the `rig` feature).
    let mut keys: Vec<&String> = web
        .annotations
        .as_object()
        .expect("object")
        .keys()
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        ["openWorldHint", "outputSchema", "readOnlyHint", "title"]
    );

    let news = get("web/search.news");
    assert_eq!(
        news.annotations["_meta"],
        json!({"vendor/rateLimit": "10/min"})
    );

    // Without a tool-level title, annotations.title stays.
    let gh = get("github/search");
    assert_eq!(gh.annotations["title"], "Search GitHub");
    assert!(gh.annotations.get("outputSchema").is_none());

    let write = get("filesystem/write_file");
    assert_eq!(write.annotations["destructiveHint"], true);
    assert_eq!(write.annotations["title"], "Write File");
}

#[test]
fn a_tool_title_takes_precedence_over_annotations_title() {
    let list = McpToolList::from_value(json!({"tools": [{
        "name": "t", "title": "Tool title", "inputSchema": {},
        "annotations": {"title": "Annotation title", "readOnlyHint": false}
    }]}))
    .expect("list");
    let tool = &list.to_tools("s").expect("tools")[0];
    assert_eq!(
        tool.annotations,
        json!({"title": "Tool title", "readOnlyHint": false})
    );
    assert_eq!(tool.description, "");
}

#[test]
fn a_tool_with_no_extras_has_null_annotations() {
    let list = McpToolList::from_value(json!({"tools": [
        {"name": "t", "inputSchema": {"type": "object"}, "annotations": null, "title": null}
    ]}))
    .expect("list");
    assert!(list.to_tools("s").expect("tools")[0].annotations.is_null());
}

#[test]
fn a_changed_list_reimports_as_one_commit_with_the_exact_diff() {
    let store = Store::new();
    import_server(&store, "github", &list("github.json")).expect("github");
    import_server(&store, "web", &list("web.json")).expect("web");
    let web_before: Vec<(String, Tool)> = state(&store)
        .1
        .into_iter()
        .filter(|(k, _)| k.starts_with("web/"))
        .collect();
    let before = store.version();

    let commits = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&commits);
    let _sub = store.subscribe(move |changes| {
        let keys: Vec<String> = changes.changes.iter().map(|c| c.key.to_string()).collect();
        seen.lock().expect("lock").push(keys);
    });

    let report = import_server(&store, "github", &list("github_changed.json")).expect("re-import");
    assert_eq!(report.added, strings(&["github/create_branch"]));
    assert_eq!(report.removed, strings(&["github/update_issue"]));
    assert_eq!(
        report.changed,
        strings(&["github/create_issue", "github/list_issues"])
    );
    assert_eq!(report.unchanged, 5);
    assert_eq!(report.version, Some(before + 1));
    assert_eq!(store.version(), before + 1);

    // One commit, touching exactly the four github keys.
    let commits = commits.lock().expect("lock").clone();
    assert_eq!(commits.len(), 1);
    let mut touched = commits[0].clone();
    touched.sort();
    assert_eq!(
        touched,
        strings(&[
            "github/create_branch",
            "github/create_issue",
            "github/list_issues",
            "github/update_issue"
        ])
    );

    let snap = store.snapshot();
    assert!(
        snap.get(&TOOLS, "github/update_issue")
            .expect("read")
            .is_none()
    );
    let issue = snap
        .get(&TOOLS, "github/create_issue")
        .expect("read")
        .expect("present");
    assert_eq!(
        issue.input_schema.to_value()["properties"]["milestone"]["type"],
        "integer"
    );
    let listed = snap
        .get(&TOOLS, "github/list_issues")
        .expect("read")
        .expect("present");
    assert_eq!(
        listed.description,
        "List and filter issues in a GitHub repository, newest first."
    );
    assert_eq!(keys_of(&store, "github").len(), 8);
    let web_after: Vec<(String, Tool)> = state(&store)
        .1
        .into_iter()
        .filter(|(k, _)| k.starts_with("web/"))
        .collect();
    assert_eq!(web_after, web_before);
}

#[test]
fn importing_the_same_list_again_commits_nothing() {
    let store = catalog();
    let before = state(&store);
    let report = import_server(&store, "github", &list("github.json")).expect("again");
    assert!(report.is_unchanged());
    assert_eq!(report.unchanged, 8);
    assert_eq!(report.version, None);
    assert_eq!(state(&store), before);
}

#[test]
fn a_reimport_keeps_the_skills_that_own_a_tool() {
    let store = Store::new();
    import_server(&store, "github", &list("github.json")).expect("github");
    // Bundle an imported tool into a skill: the skill now owns it.
    let list_issues = list("github.json")
        .to_tools("github")
        .expect("tools")
        .into_iter()
        .find(|t| t.name == "list_issues")
        .expect("list_issues");
    store
        .write(|tx| {
            register_skill(
                tx,
                Skill::new("triage", "Sort new issues"),
                vec![list_issues],
            )
        })
        .expect("skill");
    let report = import_server(&store, "github", &list("github_changed.json")).expect("re-import");
    assert!(report.changed.contains(&"github/list_issues".to_string()));
    let snap = store.snapshot();
    let tool = snap
        .get(&TOOLS, "github/list_issues")
        .expect("read")
        .expect("present");
    assert_eq!(tool.skills, ["triage"]);
    assert!(tool.description.contains("newest first"));
    let owned: Vec<String> = snap
        .by_index(&TOOLS, "skill", "triage")
        .expect("skill index")
        .map(|(k, _)| k.to_string())
        .collect();
    assert_eq!(owned, strings(&["github/list_issues"]));
}

#[test]
fn removing_a_tool_a_skill_lists_is_refused_whole() {
    let store = Store::new();
    import_server(&store, "github", &list("github.json")).expect("github");
    import_server(&store, "web", &list("web.json")).expect("web");
    store
        .write(|tx| {
            register_skill(
                tx,
                Skill::new("triage", "Sort issues")
                    .with_tools(["github/update_issue", "github/list_issues"]),
                Vec::<capstore::Tool>::new(),
            )?;
            register_skill(
                tx,
                Skill::new("release", "Cut a release").with_tools(["github/update_issue"]),
                Vec::<capstore::Tool>::new(),
            )
        })
        .expect("skills");
    let before = state(&store);

    let err = import_server(&store, "github", &list("github_changed.json")).unwrap_err();
    assert_eq!(
        err,
        McpError::ToolInUse {
            server: "github".into(),
            tool: "github/update_issue".into(),
            skills: strings(&["release", "triage"]),
        }
    );
    assert_eq!(
        err.to_string(),
        "server `github` no longer offers `github/update_issue`, but skill(s) `release`, \
         `triage` list it; unregister or change them first"
    );
    assert_eq!(state(&store), before);
    // remove_server is refused the same way.
    assert!(matches!(
        remove_server(&store, "github"),
        Err(McpError::ToolInUse { .. })
    ));
    assert_eq!(state(&store), before);

    // Once the skills let go, the same re-import goes through.
    store
        .write(|tx| {
            let mut tx_skills = Vec::new();
            for name in ["triage", "release"] {
                tx_skills.push(unregister_skill(tx, name)?);
            }
            Ok::<_, capstore::skills::SkillError>(tx_skills)
        })
        .expect("unregister");
    let report = import_server(&store, "github", &list("github_changed.json")).expect("re-import");
    assert_eq!(report.removed, strings(&["github/update_issue"]));
}

#[test]
fn remove_server_removes_only_that_servers_tools() {
    let store = catalog();
    let others: Vec<(String, Tool)> = state(&store)
        .1
        .into_iter()
        .filter(|(k, _)| !k.starts_with("web/"))
        .collect();
    let report = remove_server(&store, "web").expect("remove");
    assert_eq!(
        report.removed,
        strings(&["web/fetch", "web/search", "web/search.news"])
    );
    assert!(report.added.is_empty() && report.changed.is_empty());
    assert_eq!(report.unchanged, 0);
    assert!(report.version.is_some());
    assert_eq!(state(&store).1, others);
    // Nothing left to remove: no commit.
    let again = remove_server(&store, "web").expect("remove again");
    assert!(again.is_unchanged());
    assert_eq!(again.version, None);
}

#[test]
fn the_transaction_variants_compose_and_undo_only_their_own_failure() {
    let store = Store::new();
    let info = store
        .write(|tx| {
            import_server_in(tx, "github", &list("github.json"))?;
            let after_github = tx.view().count(&TOOLS)?;
            let err = import_server_in(tx, "bad/server", &list("web.json")).unwrap_err();
            assert!(matches!(err, McpError::InvalidServer { .. }));
            assert_eq!(tx.view().count(&TOOLS)?, after_github);
            let report = import_server_in(tx, "web", &list("web.json"))?;
            assert_eq!(report.version, None);
            assert_eq!(report.added.len(), 3);
            let removed = remove_server_in(tx, "web")?;
            assert_eq!(removed.removed.len(), 3);
            Ok::<_, McpError>(())
        })
        .expect("write");
    assert_eq!(info.version, 1);
    assert_eq!(keys_of(&store, "github").len(), 8);
    assert!(keys_of(&store, "web").is_empty());
}

#[test]
fn a_jsonrpc_response_is_unwrapped_and_its_error_is_typed() {
    let wrapped = list("github.json");
    assert_eq!(wrapped.len(), 8);
    assert_eq!(wrapped.tools()[0].name, "search");
    let value: serde_json::Value = serde_json::from_str(&fixture("github.json")).expect("json");
    let bare = McpToolList::from_value(value["result"].clone()).expect("bare result");
    assert_eq!(bare, wrapped);

    let err = McpToolList::from_json(&fixture("rpc_error.json")).unwrap_err();
    assert_eq!(
        err,
        McpError::Rpc {
            code: -32603,
            message: "Internal error: GitHub token expired".into(),
            data: Some(json!({"retryAfter": 30})),
        }
    );
    assert_eq!(
        err.to_string(),
        "MCP server answered tools/list with error -32603: Internal error: GitHub token expired \
         ({\"retryAfter\":30})"
    );
}

#[test]
fn bad_fixtures_are_typed_errors_and_leave_the_store_as_it_was() {
    let store = catalog();
    let before = state(&store);
    let import = |name: &str| {
        McpToolList::from_json(&fixture(name)).and_then(|l| import_server(&store, "s3", &l))
    };

    let err = import("bad/missing_name.json").unwrap_err();
    assert_eq!(
        err,
        McpError::InvalidTool {
            index: 1,
            name: None,
            field: "name",
            reason: "`name` is missing".into()
        }
    );
    assert_eq!(err.to_string(), "MCP tool #1: `name` is missing");

    let err = import("bad/bad_name.json").unwrap_err();
    assert!(
        matches!(&err, McpError::InvalidTool { index: 2, name: Some(n), field: "name", .. }
            if n == "put_object\u{7}"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("must not contain control characters"),
        "{err}"
    );

    let err = import("bad/non_object_schema.json").unwrap_err();
    assert_eq!(
        err,
        McpError::InvalidTool {
            index: 1,
            name: Some("put_object".into()),
            field: "inputSchema",
            reason: "`inputSchema` must describe an object (`\"type\": \"object\"`), not \
                     `\"type\": \"string\"`"
                .into()
        }
    );

    let err = import("bad/duplicate_names.json").unwrap_err();
    assert_eq!(
        err,
        McpError::DuplicateName {
            name: "get_object".into(),
            first: 1,
            second: 3
        }
    );
    assert_eq!(
        err.to_string(),
        "MCP tools #1 and #3 are both named `get_object`"
    );

    let err = import("bad/not_json.txt").unwrap_err();
    assert!(matches!(err, McpError::NotJson { .. }), "{err:?}");
    assert!(err.to_string().contains("line 1"), "{err}");

    let err = import("bad/wrong_shape.json").unwrap_err();
    assert_eq!(
        err,
        McpError::Shape {
            reason: "`tools` must be an array, found an object".into()
        }
    );

    assert_eq!(state(&store), before);
}

#[test]
fn malformed_shapes_name_what_is_wrong() {
    let shape = |value: serde_json::Value| match McpToolList::from_value(value) {
        Err(McpError::Shape { reason }) => reason,
        other => panic!("expected a shape error, got {other:?}"),
    };
    assert_eq!(
        shape(json!("tools")),
        "expected an object with `tools`, or a JSON-RPC response, found a string"
    );
    assert_eq!(
        shape(json!({"result": {"tools": []}})),
        "expected `tools` (a tools/list result) or `jsonrpc` (a JSON-RPC response)"
    );
    assert_eq!(
        shape(json!({"jsonrpc": "1.0", "result": {"tools": []}})),
        "`jsonrpc` must be \"2.0\", found \"1.0\""
    );
    assert_eq!(
        shape(json!({"jsonrpc": "2.0", "id": 1, "result": {"items": []}})),
        "the JSON-RPC result has no `tools` array"
    );
    assert_eq!(
        shape(
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}, "error": {"code": 1, "message": "x"}})
        ),
        "a JSON-RPC response must not carry both `result` and `error`"
    );
    assert_eq!(
        shape(json!({"jsonrpc": "2.0", "id": 1, "error": {"message": "no code"}})),
        "the JSON-RPC `error` has no integer `code`"
    );
    assert_eq!(
        shape(json!({"tools": [], "nextCursor": 2})),
        "`nextCursor` must be a string, found a number"
    );

    let invalid = |tool: serde_json::Value| match McpToolList::from_value(json!({"tools": [tool]}))
    {
        Err(McpError::InvalidTool { field, reason, .. }) => (field, reason),
        other => panic!("expected an invalid tool, got {other:?}"),
    };
    assert_eq!(
        invalid(json!("read_file")),
        ("tool", "must be an object, found a string".to_string())
    );
    assert_eq!(
        invalid(json!({"name": 7, "inputSchema": {}})),
        (
            "name",
            "`name` must be a string, found a number".to_string()
        )
    );
    assert_eq!(
        invalid(json!({"name": "t"})),
        ("inputSchema", "`inputSchema` is missing".to_string())
    );
    assert_eq!(
        invalid(json!({"name": "t", "inputSchema": []})),
        (
            "inputSchema",
            "`inputSchema` must be a JSON Schema object, found an array".to_string()
        )
    );
    assert_eq!(
        invalid(json!({"name": "t", "inputSchema": {}, "annotations": ["readOnly"]})),
        (
            "annotations",
            "`annotations` must be an object, found an array".to_string()
        )
    );
    assert_eq!(
        invalid(json!({"name": "t", "inputSchema": {}, "outputSchema": {"type": "array"}})),
        ("outputSchema", "`outputSchema` must describe an object (`\"type\": \"object\"`), not `\"type\": \"array\"`".to_string())
    );
    assert_eq!(
        invalid(json!({"name": "t", "inputSchema": {}, "description": false})),
        (
            "description",
            "`description` must be a string, found a boolean".to_string()
        )
    );
    assert_eq!(invalid(json!({"name": " t", "inputSchema": {}})).0, "name");
}

#[test]
fn invalid_server_names_are_refused_before_anything_is_written() {
    let store = catalog();
    let before = state(&store);
    let web = list("web.json");
    for server in [
        "",
        "  ",
        "git/hub",
        " padded",
        "tab\there",
        &"x".repeat(129),
    ] {
        let err = import_server(&store, server, &web).unwrap_err();
        assert!(
            matches!(err, McpError::InvalidServer { .. }),
            "{server:?}: {err:?}"
        );
    }
    assert_eq!(state(&store), before);
}

#[test]
fn pages_join_with_positions_counted_across_pages() {
    let joined = notion();
    assert_eq!(
        joined
            .tools()
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["search", "fetch", "create_pages", "update_page"]
    );
    assert_eq!(joined.next_cursor(), None);

    let mut stepwise = list("notion_page1.json");
    assert_eq!(stepwise.next_cursor(), Some("eyJwYWdlIjoyfQ=="));
    stepwise.extend(list("notion_page2.json")).expect("page 2");
    assert_eq!(stepwise, joined);

    let page1 = fixture("notion_page1.json");
    let err = McpToolList::from_pages([page1.as_str(), page1.as_str()]).unwrap_err();
    assert_eq!(
        err,
        McpError::DuplicateName {
            name: "search".into(),
            first: 0,
            second: 2
        }
    );
    let before = stepwise.clone();
    assert!(stepwise.extend(list("notion_page1.json")).is_err());
    assert_eq!(stepwise, before);

    let bad_page =
        r#"{"tools": [{"name": "ok", "inputSchema": {}}, {"name": "broken", "inputSchema": 1}]}"#;
    let err = McpToolList::from_pages([page1.as_str(), bad_page]).unwrap_err();
    assert!(
        matches!(&err, McpError::InvalidTool { index: 3, name: Some(n), field: "inputSchema", .. } if n == "broken"),
        "{err:?}"
    );
}

#[test]
fn imported_tools_are_found_by_search_and_selection() {
    let store = catalog();
    let snap = store.snapshot();
    let hits = snap
        .search(&TOOLS, "rename a file or move it to another folder", 3)
        .expect("search");
    assert_eq!(&*hits[0].key, "filesystem/move_file");
    let hits = snap
        .search(&TOOLS, "latest news articles about the election", 3)
        .expect("search");
    assert_eq!(&*hits[0].key, "web/search.news");

    let selection = ContextBuilder::new()
        .select(
            &snap,
            &Turn::new("open a new issue in the capstore repo about the crash"),
        )
        .expect("select");
    assert_eq!(
        selection.ranked().next().map(|t| &*t.key),
        Some("github/create_issue")
    );
    let export = ToolExport::for_snapshot(&snap).expect("export");
    let sent = export.selection_json(capstore::provider::Provider::Anthropic, &selection);
    assert!(sent.iter().any(|t| t["name"] == "create_issue"));
}

#[test]
fn a_removed_tools_handler_goes_with_it_and_the_others_stay() {
    let store = Store::new();
    import_server(&store, "github", &list("github.json")).expect("github");
    store
        .write(|tx| {
            for key in ["github/update_issue", "github/get_issue"] {
                tx.upsert(
                    &HANDLERS,
                    ToolHandler::new(key, |args| async move { Ok(args) }),
                )?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("handlers");
    import_server(&store, "github", &list("github_changed.json")).expect("re-import");
    let snap = store.snapshot();
    assert!(
        !snap
            .contains(&HANDLERS, "github/update_issue")
            .expect("read")
    );
    assert!(snap.contains(&HANDLERS, "github/get_issue").expect("read"));
}

/// MCP's tool-name rules (SEP-986) allow `/` and `.`: the specification's own examples import,
/// are selectable, export under a provider-safe unique name and resolve back to server and name.
#[test]
fn spec_valid_names_with_slash_and_dot_import_select_and_export() {
    let store = Store::new();
    let crm = McpToolList::from_json(
        r#"{"tools": [
        {"name": "user-profile/update", "description": "Update a user's profile: display name, email, avatar", "inputSchema": {"type": "object"}},
        {"name": "user-profile/get", "description": "Read a user's profile", "inputSchema": {"type": "object"}},
        {"name": "admin.tools.list", "description": "List the tools an administrator can use", "inputSchema": {"type": "object"}}
    ]}"#,
    )
    .expect("spec-valid names parse");
    // A second server with a tool whose sanitized name clashes with the first one's.
    let other = McpToolList::from_json(
        r#"{"tools": [{"name": "user-profile_update", "description": "Another update", "inputSchema": {}}]}"#,
    )
    .expect("parses");
    let report = import_server(&store, "crm", &crm).expect("imports");
    assert_eq!(
        report.added,
        [
            "crm/admin.tools.list",
            "crm/user-profile/get",
            "crm/user-profile/update"
        ]
    );
    import_server(&store, "other", &other).expect("imports");
    let snap = store.snapshot();
    let tool = snap
        .get(&TOOLS, "crm/user-profile/update")
        .expect("read")
        .expect("stored under source/name");
    assert_eq!(
        (tool.source.as_deref(), tool.name.as_str()),
        (Some("crm"), "user-profile/update")
    );

    let selection = ContextBuilder::new()
        .select(&snap, &Turn::new("update the user profile email address"))
        .expect("selects");
    assert_eq!(selection.keys().next(), Some("crm/user-profile/update"));

    let export = ToolExport::for_snapshot(&snap).expect("exports");
    let mut seen = std::collections::BTreeSet::new();
    for key in [
        "crm/user-profile/update",
        "crm/user-profile/get",
        "crm/admin.tools.list",
        "other/user-profile_update",
    ] {
        let exported = export.export_name(key).expect("every tool is exported");
        assert!(is_provider_safe(exported), "{exported}");
        assert!(seen.insert(exported.to_string()), "{exported} is unique");
        assert_eq!(export.resolve(exported), Some(key));
    }
    assert_eq!(
        export.export_name("crm/admin.tools.list"),
        Some("admin_tools_list")
    );
    // A tool without a source still may not have `/`: its key would read as `source/name`.
    let err = store
        .write(|tx| tx.insert(&TOOLS, Tool::new("user-profile/update", "")))
        .unwrap_err();
    assert!(err.to_string().contains("must not contain `/`"), "{err}");
}
