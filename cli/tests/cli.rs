//! The `capstore` binary, run as a user runs it: exit status, stdout and stderr. Expectations
//! come from the library (the bundled catalog, a `ContextBuilder` with the catalog's policy,
//! `ToolExport`), never from the catalog file's size, so the tests follow the catalog as it grows.

use std::path::Path;
use std::process::{Command, Output};

use capstore::catalog::Catalog;
use capstore::context::{ContextBuilder, Reason, Selection, SelectionPolicy, Turn};
use capstore::mcp::{McpToolList, import_server};
use capstore::provider::{Provider, ToolExport, ToolSearch};
use capstore::{HOOKS, SKILLS, Store, TOOLS};
use serde_json::{Value, json};

// Only the model's directory is used here (the CLI loads the model itself).
#[allow(dead_code)]
#[path = "../../tests/common/minilm_dir.rs"]
mod minilm_dir;

const FLIGHT: &str = "book a flight to Lisbon next Friday";
const ORDERS: &str = "how many orders did we get last week? query the database";
/// `path` (relative to the repository's root, where the binary runs) from this test process,
/// which runs in the command line's package directory.
fn at(path: &str) -> std::path::PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path)
}

const SMALL_CATALOG: &str = "tests/fixtures/cli/small_catalog.json";
const INVALID_CATALOG: &str = "tests/fixtures/cli/invalid_catalog.json";
const FILESYSTEM_MCP: &str = "tests/fixtures/mcp/filesystem.json";
const WEB_MCP: &str = "tests/fixtures/mcp/web.json";
const BAD_MCP: &str = "tests/fixtures/mcp/bad/bad_name.json";

// ---- running the binary ----

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("the capstore binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("output is UTF-8")
}

/// Runs a command that must succeed; its stdout and stderr.
fn ok(args: &[&str]) -> (String, String) {
    let out = run(args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "capstore {args:?} failed with {:?}\nstderr: {stderr}",
        out.status
    );
    (stdout, stderr)
}

/// Runs a command that must fail as the CLI fails: status 2, nothing on stdout, and a last
/// stderr line `capstore: ...` (progress lines written before the failure may precede it).
/// Returns that error line and the whole of stderr.
fn failure(args: &[&str]) -> (String, String) {
    let out = run(args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(2),
        "capstore {args:?}: status\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(stdout, "", "capstore {args:?}: nothing on stdout on error");
    let last = stderr.lines().last().unwrap_or_default().to_owned();
    assert!(
        last.starts_with("capstore: "),
        "capstore {args:?}: error line {last:?} in {stderr:?}"
    );
    (last, stderr)
}

/// [`failure`]'s error line.
fn fails(args: &[&str]) -> String {
    failure(args).0
}

/// A failure found while parsing the arguments, before anything is loaded: the error is the
/// whole of stderr.
fn fails_early(args: &[&str]) -> String {
    let (line, stderr) = failure(args);
    assert_eq!(
        stderr,
        format!("{line}\n"),
        "capstore {args:?}: no progress before an argument error"
    );
    line
}

// ---- the library's view of the same sources ----

fn bundled() -> Catalog {
    Catalog::bundled().expect("the bundled catalog is valid")
}

/// A store with the bundled catalog, and the policy the CLI uses for it.
fn bundled_store() -> (Store, SelectionPolicy) {
    let catalog = bundled();
    let store = Store::new();
    catalog.load_into(&store).expect("loads");
    (store, catalog.policy())
}

/// What the library selects for `message` on `store` under `policy`.
fn library_selection(store: &Store, policy: SelectionPolicy, message: &str) -> Selection {
    ContextBuilder::with_policy(policy)
        .expect("valid policy")
        .select(&store.snapshot(), &Turn::new(message))
        .expect("selects")
}

fn keys(selection: &Selection) -> Vec<String> {
    selection.keys().map(str::to_owned).collect()
}

/// The tool column of the `select` table, in order; checks the row numbers run 1, 2, ...
fn table_tools(stdout: &str) -> Vec<String> {
    let mut lines = stdout.lines();
    lines
        .by_ref()
        .find(|l| l.trim_start().starts_with("#  tool"))
        .unwrap_or_else(|| panic!("no table header in {stdout}"));
    let mut tools = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        // Term-contribution lines under a row (--explain) are indented past the row number.
        if line.starts_with("    ") {
            continue;
        }
        let mut cells = line.split_whitespace();
        let rank: usize = cells
            .next()
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("row without a number: {line:?}"));
        assert_eq!(rank, tools.len() + 1, "row numbers in {stdout}");
        tools.push(cells.next().expect("a tool cell").to_owned());
    }
    tools
}

/// `tools: N, skills: M, hooks: H` from `stats`.
fn stats_counts(stdout: &str) -> (usize, usize, usize) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("tools: "))
        .unwrap_or_else(|| panic!("no counts line in {stdout}"));
    let numbers: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("a count"))
        .collect();
    assert_eq!(numbers.len(), 3, "{line}");
    (numbers[0], numbers[1], numbers[2])
}

fn store_counts(store: &Store) -> (usize, usize, usize) {
    let snap = store.snapshot();
    (
        snap.count(&TOOLS).expect("count"),
        snap.count(&SKILLS).expect("count"),
        snap.count(&HOOKS).expect("count"),
    )
}

fn parse_json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"))
}

// ---- select ----

#[test]
fn select_sends_pinned_and_domain_tools_in_the_library_order() {
    let (store, policy) = bundled_store();
    let total = store.snapshot().count(&TOOLS).expect("count");
    for (message, expected) in [(FLIGHT, "travel/book_flight"), (ORDERS, "sql/query")] {
        let (stdout, stderr) = ok(&["select", message]);
        let listed = table_tools(&stdout);
        for pinned in &policy.pinned_tools {
            assert!(listed.contains(pinned), "pinned {pinned} in {stdout}");
        }
        assert!(
            listed.contains(&expected.to_owned()),
            "{expected} in {stdout}"
        );
        let selection = library_selection(&store, policy.clone(), message);
        assert_eq!(listed, keys(&selection), "{message}");
        assert!(
            stdout.contains(&format!(
                "{} of {total} tools selected",
                selection.tools.len()
            )),
            "{stdout}"
        );
        // Why the list has that size, as the library says it.
        assert!(
            stdout.contains(&format!("list size: {}\n", selection.size)),
            "{stdout}"
        );
        assert!(stdout.starts_with(&format!("message: {message:?}\n")));
        // Progress goes to stderr, the result to stdout.
        assert!(
            stderr.contains(&format!("loaded {total} tools")),
            "{stderr}"
        );
        assert!(!stdout.contains("loaded "), "{stdout}");
    }
}

#[test]
fn max_tools_limits_the_table_and_explain_prints_term_contributions() {
    let (store, policy) = bundled_store();
    let limit = policy.pinned_tools.len() + 2;
    let limited = SelectionPolicy {
        max_tools: limit,
        ..policy.clone()
    };
    let selection = library_selection(&store, limited, FLIGHT);
    assert_eq!(selection.tools.len(), limit, "enough candidates to cut");

    let n = limit.to_string();
    let (plain, _) = ok(&["select", FLIGHT, "--max-tools", &n]);
    assert_eq!(table_tools(&plain), keys(&selection));
    assert!(
        plain.contains(&format!("over the turn's limit of {limit} tools")),
        "{plain}"
    );

    let (explained, _) = ok(&["select", FLIGHT, "--max-tools", &n, "--explain"]);
    assert_eq!(table_tools(&explained), keys(&selection));
    let mut explained_rows = 0;
    for tool in &selection.tools {
        let Some(explanation) = tool.reasons.iter().find_map(|r| match r {
            Reason::Retrieved {
                explanation: Some(e),
                ..
            } => Some(e),
            _ => None,
        }) else {
            continue;
        };
        // The line under the tool's row lists each contributing term with its score.
        let mut lines = explained.lines();
        lines
            .by_ref()
            .find(|l| l.split_whitespace().nth(1) == Some(&*tool.key))
            .expect("the tool's row");
        let terms = lines.next().expect("a line under the row");
        for term in explanation.terms.iter().filter(|t| t.score > 0.0) {
            let part = format!("{} {:.2}", term.term, term.score);
            assert!(
                terms.contains(&part),
                "{part} under {}: {terms:?}",
                tool.key
            );
        }
        explained_rows += 1;
    }
    assert!(explained_rows > 0, "some tool was retrieved by BM25");
    let indented = |out: &str| out.lines().filter(|l| l.starts_with("    ")).count();
    assert_eq!(
        indented(&plain),
        0,
        "no term lines without --explain: {plain}"
    );
    assert_eq!(indented(&explained), explained_rows, "{explained}");
}

#[test]
fn select_on_a_catalog_file_plus_the_bundled_one_matches_the_library() {
    let message = "add two bags of rice to the pantry";
    let store = Store::new();
    let mut pinned = Vec::new();
    for catalog in [
        bundled(),
        Catalog::from_path(at(SMALL_CATALOG)).expect("fixture"),
    ] {
        pinned.extend(catalog.load_into(&store).expect("loads").pinned);
    }
    let policy = SelectionPolicy {
        pinned_tools: pinned,
        ..SelectionPolicy::default()
    };
    let selection = library_selection(&store, policy, message);
    assert!(selection.contains("pantry/add_item"));
    assert!(selection.contains("kitchen/set_timer"), "the file's pin");
    let (stdout, _) = ok(&["select", message, "--catalog", SMALL_CATALOG, "--bundled"]);
    assert_eq!(table_tools(&stdout), keys(&selection));
}

// ---- select --json ----

#[test]
fn json_output_is_the_library_export_in_each_provider_shape() {
    let (store, policy) = bundled_store();
    let snap = store.snapshot();
    let export = ToolExport::for_snapshot(&snap).expect("export");
    let selection = library_selection(&store, policy, FLIGHT);
    let cases: [(&[&str], Provider); 4] = [
        (&[], Provider::OpenAiChat),
        (&["--provider", "openai"], Provider::OpenAiChat),
        (
            &["--provider", "openai-responses"],
            Provider::OpenAiResponses,
        ),
        (&["--provider", "anthropic"], Provider::Anthropic),
    ];
    for (flags, provider) in cases {
        let mut args = vec!["select", FLIGHT, "--json"];
        args.extend_from_slice(flags);
        let (stdout, stderr) = ok(&args);
        assert!(stderr.contains("loaded "), "progress on stderr: {stderr}");
        let request = parse_json(&stdout);
        let object = request.as_object().expect("an object");
        assert_eq!(object.keys().collect::<Vec<_>>(), ["tools"], "{flags:?}");
        let tools = request["tools"].as_array().expect("a tools array");
        assert_eq!(tools.len(), selection.tools.len());
        for (json, chosen) in tools.iter().zip(&selection.tools) {
            let name = export.export_name(&chosen.key).expect("exported");
            let (name_at, schema_at) = match provider {
                Provider::OpenAiChat => {
                    assert_eq!(json["type"], "function");
                    assert_eq!(
                        json["function"].as_object().expect("function").len(),
                        3,
                        "{json}"
                    );
                    (&json["function"]["name"], &json["function"]["parameters"])
                }
                Provider::OpenAiResponses => {
                    assert_eq!(json["type"], "function");
                    assert!(json.get("function").is_none());
                    (&json["name"], &json["parameters"])
                }
                Provider::Anthropic => {
                    assert!(json.get("type").is_none() && json.get("defer_loading").is_none());
                    (&json["name"], &json["input_schema"])
                }
            };
            assert_eq!(name_at, name, "{flags:?}");
            assert_eq!(schema_at, &chosen.tool.input_schema);
        }
        // And exactly what the library's export gives, field for field.
        assert_eq!(
            request,
            json!({ "tools": export.selection_json(provider, &selection) }),
            "{flags:?}"
        );
    }
}

/// `--defer`: a complete request for the provider's hosted tool search. The search tool once,
/// first and not deferred; the selection next, in send order, not deferred; every other tool of
/// the catalog once, deferred; and for Anthropic the beta its header must name.
#[test]
fn defer_prints_a_complete_tool_search_request_for_each_provider_that_has_one() {
    let (store, policy) = bundled_store();
    let snap = store.snapshot();
    let export = ToolExport::for_snapshot(&snap).expect("export");
    let selection = library_selection(&store, policy, ORDERS);
    let cases = [
        (
            "anthropic",
            json!({ "type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25" }),
            Some("advanced-tool-use-2025-11-20"),
        ),
        ("openai-responses", json!({ "type": "tool_search" }), None),
    ];
    for (provider, search_tool, beta) in cases {
        let (stdout, _) = ok(&[
            "select",
            ORDERS,
            "--json",
            "--provider",
            provider,
            "--defer",
        ]);
        let request = parse_json(&stdout);
        let object = request.as_object().expect("an object");
        match beta {
            Some(beta) => {
                assert_eq!(object.len(), 2, "{provider}: {object:?}");
                assert_eq!(request["betas"], json!([beta]), "{provider}");
            }
            None => assert_eq!(object.keys().collect::<Vec<_>>(), ["tools"], "{provider}"),
        }
        let tools = request["tools"].as_array().expect("a tools array");

        assert_eq!(tools[0], search_tool, "{provider}: the search tool first");
        let searches = tools.iter().filter(|t| **t == search_tool).count();
        assert_eq!(searches, 1, "{provider}: the search tool once");
        assert!(tools[0].get("defer_loading").is_none(), "{provider}");

        let functions = &tools[1..];
        let mut listed: Vec<&str> = functions
            .iter()
            .map(|t| t["name"].as_str().expect("a name"))
            .collect();
        let selected: Vec<&str> = selection
            .keys()
            .map(|k| export.export_name(k).expect("exported"))
            .collect();
        assert_eq!(
            listed[..selected.len()],
            selected,
            "{provider}: the selection next, in send order"
        );
        for tool in functions {
            let name = tool["name"].as_str().expect("a name");
            let key = export.resolve(name).expect("an exported name");
            if provider == "openai-responses" {
                assert_eq!(tool["type"], "function", "{name}");
            }
            if selection.contains(key) {
                assert!(tool.get("defer_loading").is_none(), "{name} is selected");
            } else {
                assert_eq!(tool["defer_loading"], true, "{name} is not selected");
            }
        }
        listed.sort_unstable();
        let mut all: Vec<&str> = snap
            .iter(&TOOLS)
            .expect("iterates")
            .map(|(key, _)| export.export_name(key).expect("exported"))
            .collect();
        all.sort_unstable();
        assert_eq!(listed, all, "{provider}: every tool of the catalog, once");

        let search = ToolSearch::for_provider(match provider {
            "anthropic" => Provider::Anthropic,
            _ => Provider::OpenAiResponses,
        })
        .expect("a hosted tool search");
        assert_eq!(
            request["tools"],
            json!(
                export
                    .with_deferred(search, &snap, &selection)
                    .expect("export")
            ),
            "{provider}: the library's export"
        );
    }
}

// ---- explain ----

#[test]
fn explain_says_whether_a_tool_was_selected() {
    let (store, policy) = bundled_store();
    let export = ToolExport::for_snapshot(&store.snapshot()).expect("export");
    let selection = library_selection(&store, policy, FLIGHT);
    let chosen = "travel/book_flight";
    let other = "sql/query";
    assert!(selection.contains(chosen) && !selection.contains(other));

    let (stdout, _) = ok(&["explain", chosen, FLIGHT]);
    let at = selection
        .keys()
        .position(|k| k == chosen)
        .expect("selected")
        + 1;
    assert!(
        stdout.starts_with(&format!(
            "tool: {chosen} (sent to the model as `{}`)\n",
            export.export_name(chosen).expect("exported")
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "selected: yes, #{at} of {} in send order",
            selection.tools.len()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("skill travel: matched this turn"),
        "{stdout}"
    );

    let (stdout, _) = ok(&["explain", other, FLIGHT]);
    assert!(stdout.contains("\nselected: no"), "{stdout}");
    assert!(!stdout.contains("selected: yes"), "{stdout}");
}

#[test]
fn explain_takes_an_exported_name() {
    let (store, _) = bundled_store();
    let snap = store.snapshot();
    let export = ToolExport::for_snapshot(&snap).expect("export");
    // A bare name several sources share is exported with its source.
    let exported = export.export_name("github/search").expect("exported");
    assert_ne!(exported, "search", "`search` is shared, so it is qualified");
    let (stdout, _) = ok(&["explain", exported, "search code on GitHub"]);
    assert!(
        stdout.starts_with(&format!(
            "tool: github/search (sent to the model as `{exported}`)"
        )),
        "{stdout}"
    );
    // A name no other tool has is exported as it is, and resolves too.
    assert_eq!(export.resolve("book_flight"), Some("travel/book_flight"));
    let (stdout, _) = ok(&["explain", "book_flight", FLIGHT]);
    assert!(stdout.starts_with("tool: travel/book_flight "), "{stdout}");
}

#[test]
fn explain_an_unknown_tool_fails_and_suggests_qualified_names() {
    let (store, _) = bundled_store();
    let snap = store.snapshot();
    let same_name: Vec<String> = snap
        .by_index(&TOOLS, "name", "search")
        .expect("index")
        .map(|(key, _)| key.to_string())
        .collect();
    assert!(same_name.len() > 1, "`search` is in several sources");
    let error = fails(&["explain", "search", "search the web"]);
    assert!(error.contains("no tool `search`"), "{error}");
    assert!(error.contains("did you mean"), "{error}");
    for key in &same_name {
        assert!(error.contains(key.as_str()), "{key} in {error}");
    }

    let error = fails(&["explain", "no_such_tool_anywhere", "search the web"]);
    assert!(error.contains("no tool `no_such_tool_anywhere`"), "{error}");
    assert!(!error.contains("did you mean"), "{error}");
}

/// `explain` of a tool none of whose text matches prints "no query term occurs in its text",
/// then a score formula with an empty term table under it.
#[test]
fn explain_prints_no_score_table_when_no_term_matches() {
    let (stdout, _) = ok(&["explain", "clock/now", FLIGHT]);
    assert!(
        stdout.contains("BM25: no query term occurs in its text"),
        "{stdout}"
    );
    assert!(!stdout.contains("score "), "{stdout}");
}

// ---- stats ----

#[test]
fn stats_counts_are_the_library_counts_for_each_source() {
    // The bundled catalog, by default.
    let catalog = bundled();
    let (store, policy) = bundled_store();
    let (stdout, _) = ok(&["stats"]);
    assert_eq!(stats_counts(&stdout), store_counts(&store));
    assert!(stdout.starts_with("source: bundled catalog\n"), "{stdout}");
    assert!(
        stdout.contains(&format!("pinned: {}\n", policy.pinned_tools.join(", "))),
        "{stdout}"
    );
    let total = store.snapshot().count(&TOOLS).expect("count");
    assert!(
        stdout.contains(&format!("tool index: {total} documents")),
        "{stdout}"
    );

    // A catalog file alone.
    let small = Catalog::from_path(at(SMALL_CATALOG)).expect("fixture");
    let small_store = Store::new();
    small.load_into(&small_store).expect("loads");
    let (stdout, _) = ok(&["stats", "--catalog", SMALL_CATALOG]);
    assert_eq!(stats_counts(&stdout), store_counts(&small_store));
    assert!(
        stdout.contains(&format!("pinned: {}\n", small.pinned.join(", "))),
        "{stdout}"
    );

    // A catalog file and the bundled catalog.
    let both = Store::new();
    catalog.load_into(&both).expect("loads");
    small.load_into(&both).expect("loads");
    let (stdout, _) = ok(&["stats", "--catalog", SMALL_CATALOG, "--bundled"]);
    assert_eq!(stats_counts(&stdout), store_counts(&both));
    assert!(
        stdout.starts_with(&format!("source: bundled catalog + {SMALL_CATALOG}\n")),
        "{stdout}"
    );
}

#[test]
fn stats_counts_an_mcp_tool_list() {
    let list =
        McpToolList::from_json(&std::fs::read_to_string(at(FILESYSTEM_MCP)).expect("fixture"))
            .expect("a valid list");
    let store = Store::new();
    import_server(&store, "files", &list).expect("imports");
    let spec = format!("files={FILESYSTEM_MCP}");
    let (stdout, stderr) = ok(&["stats", "--mcp", &spec]);
    assert_eq!(stats_counts(&stdout), store_counts(&store));
    assert_eq!(stats_counts(&stdout).0, list.len());
    assert!(stdout.starts_with("source: MCP files\n"), "{stdout}");
    assert!(
        stdout.contains(&format!("sources (1): files {}\n", list.len())),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("files: {} tools imported", list.len())),
        "{stderr}"
    );

    // With --bundled the MCP tools come on top of the catalog.
    let (bundled_store, _) = bundled_store();
    import_server(&bundled_store, "files", &list).expect("imports");
    let (stdout, _) = ok(&["stats", "--mcp", &spec, "--bundled"]);
    assert_eq!(stats_counts(&stdout), store_counts(&bundled_store));
}

/// Two `--mcp` lists under one server name: the second import replaces the first server's
/// tools, so the first file's tools silently vanish.
#[test]
fn one_server_name_twice_is_an_error() {
    let error = fails_early(&[
        "stats",
        "--mcp",
        &format!("dup={WEB_MCP}"),
        "--mcp",
        &format!("dup={FILESYSTEM_MCP}"),
    ]);
    assert!(error.contains("dup"), "{error}");
}

// ---- errors and help ----

#[test]
fn argument_errors_exit_2_and_name_the_problem() {
    let cases: [(&[&str], &[&str]); 10] = [
        (&["frobnicate"], &["unknown command `frobnicate`"]),
        (&["select", FLIGHT, "--frob"], &["unknown flag `--frob`"]),
        (&["stats", "--frob"], &["unknown flag `--frob`"]),
        (
            &["explain", "travel/book_flight", FLIGHT, "--frob"],
            &["unknown flag `--frob`"],
        ),
        (&["select"], &["give a message"]),
        (
            &["explain", "travel/book_flight"],
            &["usage", "explain TOOL"],
        ),
        (
            &["select", FLIGHT, "--mcp", "files"],
            &["--mcp", "SERVER=FILE", "`files`"],
        ),
        (
            &["select", FLIGHT, "--defer"],
            &[
                "--defer",
                "anthropic",
                "openai-responses",
                "chat completions",
            ],
        ),
        (
            &[
                "select",
                FLIGHT,
                "--json",
                "--provider",
                "openai",
                "--defer",
            ],
            &[
                "--defer",
                "anthropic",
                "openai-responses",
                "chat completions",
            ],
        ),
        (
            &["select", FLIGHT, "--provider", "gemini"],
            &["--provider", "`gemini`"],
        ),
    ];
    for (args, wanted) in cases {
        let error = fails_early(args);
        for part in wanted {
            assert!(error.contains(part), "{args:?}: {part:?} in {error}");
        }
    }
    let error = fails_early(&["select", FLIGHT, "--max-tools", "many"]);
    assert!(
        error.contains("--max-tools") && error.contains("`many`"),
        "{error}"
    );
    let error = fails_early(&["select", FLIGHT, "--max-tools"]);
    assert!(error.contains("--max-tools needs a value"), "{error}");
}

#[test]
fn file_errors_exit_2_and_name_the_file() {
    let missing = "tests/fixtures/cli/no_such_file.json";
    let error = fails(&["stats", "--catalog", missing]);
    assert!(
        error.contains(missing) && error.contains("cannot read"),
        "{error}"
    );
    let error = fails(&["select", FLIGHT, "--mcp", &format!("x={missing}")]);
    assert!(
        error.starts_with(&format!("capstore: {missing}: ")),
        "{error}"
    );

    // An invalid catalog: the library's error, naming the file, the JSON path and the tool.
    let invalid = at(INVALID_CATALOG);
    let invalid = invalid.to_str().expect("a UTF-8 path");
    let expected = Catalog::from_path(invalid).expect_err("the fixture is invalid");
    assert_eq!(expected.path, "/skills/0/tools/1/input_schema");
    let error = fails(&["select", FLIGHT, "--catalog", invalid]);
    assert_eq!(error, format!("capstore: {expected}"));
    for part in [
        INVALID_CATALOG,
        "/skills/0/tools/1/input_schema",
        "pantry/add_item",
    ] {
        assert!(error.contains(part), "{part} in {error}");
    }

    // An invalid MCP list: the library's error, after the file's name.
    let bad = std::fs::read_to_string(at(BAD_MCP)).expect("fixture");
    let expected = McpToolList::from_json(&bad).expect_err("the fixture is invalid");
    let error = fails(&["stats", "--mcp", &format!("s3={BAD_MCP}")]);
    assert_eq!(error, format!("capstore: {BAD_MCP}: {expected}"));

    // A catalog whose skills are already loaded (the bundled one twice) names the clash.
    let error = fails(&["stats", "--catalog", "catalog/default.json", "--bundled"]);
    assert!(error.contains("already in the store"), "{error}");
}

#[test]
fn help_lists_the_commands() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["help"],
        &[],
        &["select", "--help"],
    ] {
        let (stdout, _) = ok(args);
        for command in ["select", "explain", "stats", "eval"] {
            assert!(
                stdout.contains(&format!("capstore {command} ")),
                "{args:?}: {command} in {stdout}"
            );
        }
        for flag in [
            "--catalog",
            "--mcp",
            "--bundled",
            "--max-tools",
            "--json",
            "--defer",
        ] {
            assert!(stdout.contains(flag), "{args:?}: {flag}");
        }
    }
}

// ---- live MCP servers (installed by scripts/test-deps.sh) ----

const LIVE: &str = "tests/fixtures/mcp/live.mcp.json";

/// A copy of [`LIVE`] in a scratch folder of its own, and its path: the trust file written
/// beside it (`<config>.quarantine.json`) stays out of the source tree. The servers' paths in
/// it are relative to the working directory, not to the file, so the copy starts the same ones.
fn live_config(test: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("capstore-cli-live-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let live = dir.join("live.mcp.json");
    std::fs::copy(at(LIVE), &live).expect("copy the live config");
    let live = live.to_str().expect("a UTF-8 temp path").to_string();
    (dir, live)
}

/// `--mcp-config` connects to filesystem + everything + time (real servers nobody here wrote)
/// and selects each message's tools from the right server; a server that cannot start is named
/// on stderr and the command goes on.
#[test]
fn select_over_live_mcp_servers() {
    assert!(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join(".test-deps/venv/bin/mcp-server-time")
            .exists(),
        "run `bash scripts/test-deps.sh` first (the README's test command does)"
    );
    let (dir, live) = live_config("select");
    let live = live.as_str();
    for (message, server) in [
        ("write a note to the file notes.txt", "files/"),
        ("what time is it in Tokyo?", "time/"),
        ("echo back hello", "everything/"),
    ] {
        let (table, stderr) = ok(&["select", message, "--mcp-config", live]);
        let top = table
            .lines()
            .find(|line| line.trim_start().starts_with("1 "))
            .unwrap_or_else(|| panic!("no first row in {table}"));
        assert!(top.contains(server), "{message}: {top}");
        assert!(
            stderr.contains("MCP server `broken`: initialize failed")
                && stderr.contains("permission denied")
                && stderr.contains("going on without it"),
            "{stderr}"
        );
        assert!(
            !stderr.contains("`off`"),
            "a disabled server is not started: {stderr}"
        );
    }
    // `stats` and `explain` take the same source.
    let (stats, _) = ok(&["stats", "--mcp-config", live]);
    assert!(stats.contains("29"), "{stats}");
    let (explain, _) = ok(&[
        "explain",
        "time/get_current_time",
        "what time is it in Tokyo?",
        "--mcp-config",
        live,
    ]);
    assert!(explain.contains("time/get_current_time"), "{explain}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn call_runs_a_live_tool_and_prints_its_result() {
    let (dir, live) = live_config("call");
    let live = live.as_str();
    let (stdout, _) = ok(&[
        "call",
        "time/get_current_time",
        r#"{"timezone": "Europe/Lisbon"}"#,
        "--mcp-config",
        live,
    ]);
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("JSON result");
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("Europe/Lisbon"), "{text}");

    // A tool error says which server failed and why.
    let error = fails(&[
        "call",
        "files/read_text_file",
        r#"{"path": "/etc/hostname"}"#,
        "--mcp-config",
        live,
    ]);
    assert!(
        error.contains("MCP server `files`") && error.contains("denied"),
        "{error}"
    );
    // Bad input is named before anything runs.
    let error = fails(&[
        "call",
        "time/get_current_time",
        "{not json",
        "--mcp-config",
        live,
    ]);
    assert!(error.contains("JSON-ARGS"), "{error}");
    let error = fails(&["call", "time/no_such_tool", "{}", "--mcp-config", live]);
    assert!(error.contains("no tool `time/no_such_tool`"), "{error}");
    // A catalog tool has no handler: said plainly.
    let error = fails(&["call", "weather/get_forecast", r#"{"location": "Oslo"}"#]);
    assert!(error.contains("has no handler here"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mcp_config_errors_name_the_server_and_field() {
    let dir = std::env::temp_dir().join(format!("capstore-cli-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"mcpServers": {"time": {"command": "uvx", "args": "mcp-server-time"}}}"#,
    )
    .expect("write");
    let error = fails(&["select", "hi", "--mcp-config", bad.to_str().expect("utf-8")]);
    assert_eq!(
        error,
        "capstore: --mcp-config: MCP server `time`: field `args` must be an array of strings, not a string"
    );
    let error = fails(&["select", "hi", "--mcp-config", "no/such.json"]);
    assert!(
        error.starts_with("capstore: --mcp-config: cannot read no/such.json"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `eval --conversations --embedder DIR` runs every turn with hybrid retrieval: a paraphrase
/// whose words no tool text shares ("VMs") gets its tool, which the lexical run does not send.
/// A fusion knob without the model is an argument error.
#[test]
fn eval_runs_conversations_with_the_embedder() {
    let dir = std::env::temp_dir().join(format!("capstore-cli-conv-dense-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let missed = |extra: &[&str]| {
        let turns = dir.join("turns.jsonl");
        let mut args = vec![
            "eval",
            "--conversations",
            "tests/fixtures/conversations/paraphrase.jsonl",
            "--turns-out",
            turns.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(extra);
        ok(&args);
        let written = std::fs::read_to_string(&turns).expect("turns written");
        written
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON")["missed"].clone())
            .collect::<Vec<_>>()
    };
    let vms = json!(["cloud/list_instances"]);
    assert_eq!(missed(&[])[0], vms);
    let model = minilm_dir::model_dir();
    let model = model.to_str().expect("utf-8");
    let hybrid = missed(&["--embedder", model, "--lexical-weight", "0.5"]);
    assert_eq!(hybrid.len(), 2);
    assert_eq!(hybrid[0], json!([]), "{hybrid:?}");

    let error = fails_early(&[
        "eval",
        "--conversations",
        "tests/fixtures/conversations/paraphrase.jsonl",
        "--lexical-weight",
        "0.5",
    ]);
    assert_eq!(
        error,
        "capstore: --lexical-weight, --depth and --vector-cache need --embedder DIR"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `select --embedder DIR --vector-cache FILE`: the first run embeds the bundled catalog's
/// tools and writes them to FILE, the second reads every one back and embeds none, and both
/// select what a run without the cache does. A file that is not a vector cache is an error
/// naming it, and is left as it was.
#[test]
fn select_keeps_the_tools_vectors_in_the_vector_cache() {
    let dir = std::env::temp_dir().join(format!("capstore-cli-vectors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let cache = dir.join("tools.vectors");
    let _ = std::fs::remove_file(&cache);
    let model = minilm_dir::model_dir();
    let args = [
        "select",
        "what VMs have we got in eu-west-1?",
        "--embedder",
        model.to_str().expect("utf-8"),
        "--vector-cache",
        cache.to_str().expect("utf-8"),
    ];
    let total = store_counts(&bundled_store().0).0;
    let (first, first_log) = ok(&args);
    assert!(
        first_log.contains(&format!("embedded {total} tools in "))
            && first_log.contains(&format!(
                "({total} texts new to the vector cache {})",
                cache.display()
            )),
        "{first_log}"
    );
    let (second, second_log) = ok(&args);
    assert!(
        second_log.contains(&format!(
            "(0 texts new to the vector cache {})",
            cache.display()
        )),
        "{second_log}"
    );
    assert_eq!(table_tools(&second), table_tools(&first));
    // The vectors read back select what freshly made ones do.
    let (fresh, _) = ok(&args[..4]);
    assert_eq!(table_tools(&second), table_tools(&fresh));

    std::fs::write(&cache, "not vectors").expect("write");
    let error = fails(&args);
    assert!(
        error.starts_with(&format!(
            "capstore: the vector cache {}: not a capstore vector cache",
            cache.display()
        )),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(&cache).expect("read"),
        "not vectors"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `eval --conversations --sweep --plot` runs the grid of list settings: one line a setting,
/// the default marked, each line's figures those of a plain run with that policy; the plot is
/// an SVG with the default ringed. `--plot` without `--sweep` is an error.
#[test]
fn eval_sweeps_list_settings_and_plots_recall_against_tokens() {
    let dir = std::env::temp_dir().join(format!("capstore-cli-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let svg = dir.join("sweep.svg");
    let file = "tests/fixtures/conversations/tiny.jsonl";
    let (out, _) = ok(&[
        "eval",
        "--conversations",
        file,
        "--sweep",
        "--plot",
        svg.to_str().expect("utf-8"),
    ]);
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    assert_eq!(
        header,
        [
            "retrieval",
            "turn",
            "list",
            "message",
            "repack",
            "recall",
            "within_search",
            "stable",
            "repacks_per_switch",
            "most_after_switch",
            "tools",
            "tokens",
            "uncached",
            "default"
        ],
        "{out}"
    );
    let column = |name: &str| header.iter().position(|h| *h == name).expect("column");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    assert!(
        rows.len() > 20
            && rows
                .iter()
                .all(|r| r.len() == header.len() && r[0] == "lexical"),
        "{out}"
    );
    // Every value of the conversation's re-pack share is swept, `all` as it was before the knob.
    for repack in ["0", "1", "2", "all"] {
        assert!(rows.iter().any(|r| r[column("repack")] == repack), "{out}");
    }
    let defaults: Vec<&Vec<&str>> = rows
        .iter()
        .filter(|r| r[column("default")] == "*")
        .collect();
    assert_eq!(defaults.len(), 1, "{out}");
    // The default's figures are a plain run's.
    let (plain, _) = ok(&["eval", "--conversations", file]);
    let default = defaults[0];
    assert_eq!(default[column("repack")], "1", "{default:?}");
    assert!(
        plain.contains(&format!(
            "recall of each turn's tools: {}%",
            default[column("recall")]
        )),
        "{default:?} vs {plain}"
    );
    assert!(
        plain.contains(&format!(" tools, {} tokens;", default[column("tokens")])),
        "{default:?} vs {plain}"
    );
    // Uncached: the tokens a turn less the cached prefix, spread over every turn.
    let number_after = |text: &str, key: &str| -> f64 {
        let rest = &plain[plain.find(key).expect(text) + key.len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        rest[..end].parse().expect(text)
    };
    let conversations = number_after("conversations", "conversations: ");
    let turns = number_after("turns", &format!("conversations: {conversations} ("));
    let tokens = number_after("tokens", " tools, ");
    let cached = number_after("cached", "cached prefix ");
    let expected = tokens - cached * (turns - conversations) / turns;
    let uncached: f64 = default[column("uncached")].parse().expect("uncached");
    assert!(
        (uncached - expected).abs() <= 1.0,
        "{uncached} vs {expected}: {plain}"
    );
    let plot = std::fs::read_to_string(&svg).expect("svg written");
    assert!(plot.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(plot.contains("default (lexical): "), "{plot}");
    assert_eq!(
        plot.matches("<circle").count(),
        rows.len() + 2,
        "a dot a setting, the ring, the legend"
    );
    let error = fails(&["eval", "--conversations", file, "--plot", "x.svg"]);
    assert_eq!(error, "capstore: eval: --plot needs --sweep");
}

/// `eval --conversations` runs scripted conversations over the bundled catalog, prints the
/// multi-turn figures and writes each turn; a bad file or an unknown tool is a clear error.
#[test]
fn eval_runs_conversations_over_the_bundled_catalog() {
    let dir = std::env::temp_dir().join(format!("capstore-cli-conv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let turns = dir.join("turns.jsonl");
    let (out, _) = ok(&[
        "eval",
        "--conversations",
        "tests/fixtures/conversations/tiny.jsonl",
        "--turns-out",
        turns.to_str().expect("utf-8"),
    ]);
    assert!(
        out.starts_with("conversations: 2 (7 turns) from tests/fixtures/conversations/tiny.jsonl, over bundled catalog\n"),
        "{out}"
    );
    for line in [
        "recall of each turn's tools: ",
        "prefix-stable follow-ups: ",
        "re-packs per topic switch: ",
        "tool definitions per turn: ",
    ] {
        assert!(out.contains(line), "{line} in {out}");
    }
    let written = std::fs::read_to_string(&turns).expect("turns written");
    let rows: Vec<serde_json::Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(rows.len(), 7);
    // The catalog's pinned tools lead every list, and a follow-up carries the list on.
    let sent = |i: usize| rows[i]["sent"].as_array().expect("sent").clone();
    assert_eq!(
        sent(0)[..3],
        [
            json!("ask_user"),
            json!("clock/now"),
            json!("memory/recall")
        ]
    );
    assert!(
        sent(1).starts_with(&sent(0)),
        "{:?} -> {:?}",
        sent(0),
        sent(1)
    );
    assert_eq!(rows[1]["prefix_stable"], json!(true));

    let policy = r#"{"max_tools": 0}"#;
    let (small, _) = ok(&[
        "eval",
        "--conversations",
        "tests/fixtures/conversations/tiny.jsonl",
        "--policy",
        policy,
    ]);
    assert!(
        small.contains("tool definitions per turn: 3.0 tools"),
        "{small}"
    );

    let unknown = dir.join("unknown.jsonl");
    std::fs::write(
        &unknown,
        r#"{"id": "x", "turns": [{"user": "hi", "gold": ["no/such_tool"]}]}"#,
    )
    .expect("write");
    let error = fails(&["eval", "--conversations", unknown.to_str().expect("utf-8")]);
    assert_eq!(
        error,
        "capstore: conversation \"x\", turn 1: no tool \"no/such_tool\" in the store"
    );
    let error = fails_early(&[
        "eval",
        "--conversations",
        "x.jsonl",
        "--policy",
        "{\"max_tols\": 3}",
    ]);
    assert!(
        error.contains("--policy: unknown field `max_tols`"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
