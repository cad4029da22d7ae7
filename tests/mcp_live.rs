//! Live MCP: real servers nobody on this project wrote (filesystem and everything from the npm
//! registry, mcp-server-time from PyPI, installed pinned by `scripts/test-deps.sh`), and a
//! server written here to misbehave (`tests/fixtures/mcp/servers/fault_server.py`).
#![cfg(feature = "mcp-live")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use capstore::context::{ContextBuilder, Turn};
use capstore::mcp::live::{
    CallError, LiveError, LiveEvent, LiveOptions, McpHub, Quarantine, QuarantineReason, ServerState,
};
use capstore::mcp::{McpConfig, McpError, ServerConfig};
use capstore::{ExecError, Executor, HANDLERS, Store, TOOLS, ToolCall, UnselectedCallPolicy};
use serde_json::{Value, json};

// ---- where the servers are ----

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A server installed by `scripts/test-deps.sh`. Missing is a failure, not a skip.
fn installed(path: &str) -> String {
    let full = root().join(".test-deps").join(path);
    assert!(
        full.exists(),
        "{} is missing: run `bash scripts/test-deps.sh` (the README's test command does)",
        full.display()
    );
    full.display().to_string()
}

fn filesystem(name: &str, dir: &Path) -> ServerConfig {
    ServerConfig::stdio(
        name,
        installed("node/node_modules/.bin/mcp-server-filesystem"),
        [dir.display().to_string()],
    )
}

fn everything(name: &str) -> ServerConfig {
    ServerConfig::stdio(
        name,
        installed("node/node_modules/.bin/mcp-server-everything"),
        ["stdio"],
    )
}

fn time(name: &str) -> ServerConfig {
    ServerConfig::stdio(
        name,
        installed("venv/bin/mcp-server-time"),
        Vec::<String>::new(),
    )
}

fn fault(name: &str, mode: &str) -> ServerConfig {
    let script = root().join("tests/fixtures/mcp/servers/fault_server.py");
    ServerConfig::stdio(
        name,
        "python3",
        [script.display().to_string(), mode.to_string()],
    )
}

fn config(servers: Vec<ServerConfig>) -> McpConfig {
    McpConfig {
        servers,
        disabled: Vec::new(),
    }
}

fn options() -> LiveOptions {
    LiveOptions {
        connect_timeout: Duration::from_secs(20),
        list_timeout: Duration::from_secs(20),
        call_timeout: Duration::from_secs(20),
        reconnect_initial: Duration::from_millis(100),
        reconnect_max: Duration::from_millis(400),
        ..LiveOptions::default()
    }
}

/// A scratch directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capstore-live-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.canonicalize().expect("canonical temp dir")
}

fn executor(store: &Store) -> Executor {
    Executor::new(store.clone()).with_policy(UnselectedCallPolicy::Allow)
}

async fn call(store: &Store, tool: &str, args: Value) -> Result<Value, ExecError> {
    executor(store)
        .execute(ToolCall::new("t", tool, args), &[])
        .await
        .map(|output| output.output)
}

/// The typed MCP error behind a failed call.
fn call_error(result: Result<Value, ExecError>) -> CallError {
    match result {
        Err(ExecError::Handler { error, .. }) => error
            .downcast_ref::<CallError>()
            .cloned()
            .unwrap_or_else(|| panic!("not a CallError: {error:?}")),
        other => panic!("expected a handler error, got {other:?}"),
    }
}

fn text(output: &Value) -> String {
    output["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {output}"))
        .to_string()
}

fn keys(store: &Store) -> Vec<String> {
    store
        .snapshot()
        .iter(&TOOLS)
        .expect("tools")
        .map(|(key, _)| key.to_string())
        .collect()
}

fn selected(store: &Store, message: &str) -> Vec<String> {
    ContextBuilder::new()
        .select(&store.snapshot(), &Turn::new(message))
        .expect("selects")
        .keys()
        .map(str::to_string)
        .collect()
}

async fn next_event(
    events: &mut tokio::sync::broadcast::Receiver<LiveEvent>,
    wanted: impl Fn(&LiveEvent) -> bool,
) -> LiveEvent {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let event = events.recv().await.expect("events");
            if wanted(&event) {
                return event;
            }
        }
    })
    .await
    .expect("the event comes within 20 s")
}

// ---- real servers ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_servers_import_select_and_run_their_tools() {
    let dir = scratch("real");
    let store = Store::new();
    let hub = McpHub::connect(
        &store,
        &config(vec![
            filesystem("files", &dir),
            everything("everything"),
            time("time"),
        ]),
        options(),
    )
    .await;
    for startup in hub.startup() {
        let report = startup
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("{} failed: {e}", startup.server));
        assert!(
            !report.added.is_empty(),
            "{} offered no tools",
            startup.server
        );
        assert!(report.version.is_some());
    }
    let tools = keys(&store);
    for key in [
        "files/write_file",
        "files/read_text_file",
        "everything/echo",
        "everything/get-sum",
        "time/get_current_time",
        "time/convert_time",
    ] {
        assert!(
            tools.contains(&key.to_string()),
            "{key} missing from {tools:?}"
        );
        assert!(store.snapshot().contains(&HANDLERS, key).expect("read"));
    }
    for status in hub.status() {
        assert_eq!(status.state, ServerState::Ready, "{status:?}");
        assert!(status.server_info.is_some() && status.protocol_version.is_some());
    }

    // Selection picks each message's tools from the right server.
    let picks = selected(&store, "write a note to a file called notes.txt");
    assert!(
        picks[..3].contains(&"files/write_file".to_string()),
        "{picks:?}"
    );
    let picks = selected(&store, "what time is it in Tokyo right now?");
    assert!(picks[0].starts_with("time/"), "{picks:?}");
    assert!(
        picks[..2].contains(&"time/get_current_time".to_string()),
        "{picks:?}"
    );
    let picks = selected(&store, "add these two numbers and give me the sum");
    assert_eq!(picks[0], "everything/get-sum", "{picks:?}");

    // Write a file through capstore, read it back through capstore and from the disk.
    let path = dir.join("note.txt");
    let written = call(
        &store,
        "files/write_file",
        json!({"path": path.display().to_string(), "content": "hello from capstore"}),
    )
    .await
    .expect("write_file runs");
    assert!(text(&written).contains("Successfully wrote"), "{written}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("on disk"),
        "hello from capstore"
    );
    let read = call(
        &store,
        "files/read_text_file",
        json!({"path": path.display().to_string()}),
    )
    .await
    .expect("read_text_file runs");
    assert_eq!(text(&read), "hello from capstore");

    // The filesystem server refuses paths outside its directory: its isError text comes back.
    let refused = call_error(
        call(
            &store,
            "files/read_text_file",
            json!({"path": "/etc/hostname"}),
        )
        .await,
    );
    assert!(
        matches!(&refused, CallError::Tool { server, text, .. } if server == "files" && text.contains("denied")),
        "{refused:?}"
    );

    // Structured content is kept as the server sent it.
    let sum = call(&store, "everything/get-sum", json!({"a": 2, "b": 40}))
        .await
        .expect("get-sum runs");
    assert!(text(&sum).contains("42"), "{sum}");
    let weather = call(
        &store,
        "everything/get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await
    .expect("structured content");
    assert!(
        weather["structuredContent"]["temperature"].is_number(),
        "{weather}"
    );

    let now = call(
        &store,
        "time/get_current_time",
        json!({"timezone": "Asia/Tokyo"}),
    )
    .await
    .expect("get_current_time runs");
    let now: Value = serde_json::from_str(&text(&now)).expect("the time server answers JSON");
    assert_eq!(now["timezone"], "Asia/Tokyo");

    hub.shutdown().await;
    let after = call_error(call(&store, "time/get_current_time", json!({"timezone": "UTC"})).await);
    assert!(matches!(after, CallError::Unavailable { .. }), "{after:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_server() {
    // server-everything's Streamable HTTP transport, on a loopback port of this test's own.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("addr").port()
    };
    let mut server =
        tokio::process::Command::new(installed("node/node_modules/.bin/mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("starts");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the HTTP server did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let store = Store::new();
    let text_config = format!(
        r#"{{"mcpServers": {{"web": {{"type": "http", "url": "{url}", "headers": {{"X-Test": "1"}}}}}}}}"#
    );
    let hub = McpHub::connect(
        &store,
        &McpConfig::from_json(&text_config).expect("config"),
        options(),
    )
    .await;
    let report = hub.startup()[0]
        .result
        .as_ref()
        .expect("connects over HTTP");
    assert!(report.added.contains(&"web/echo".to_string()), "{report:?}");
    let echoed = call(&store, "web/echo", json!({"message": "over http"}))
        .await
        .expect("echo runs");
    assert!(text(&echoed).contains("over http"), "{echoed}");
    hub.shutdown().await;
    server.kill().await.expect("stops");
}

// ---- results, errors, names ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_errors_and_spec_names_through_the_executor() {
    let store = Store::new();
    let hub = McpHub::connect(&store, &config(vec![fault("f", "ok")]), options()).await;
    hub.startup()[0].result.as_ref().expect("connects");

    let echoed = call(&store, "f/echo", json!({"message": "hi"}))
        .await
        .expect("echo");
    assert_eq!(echoed["content"], json!([{"type": "text", "text": "hi"}]));
    assert_eq!(echoed["structuredContent"], json!({"echoed": "hi"}));

    // MCP's own examples of valid names import, are selected and run.
    assert_eq!(
        text(
            &call(&store, "f/user-profile/update", json!({"email": "a@b.c"}))
                .await
                .expect("runs")
        ),
        "profile updated"
    );
    assert_eq!(
        text(
            &call(&store, "f/admin.tools.list", json!({}))
                .await
                .expect("runs")
        ),
        "admin tools: none"
    );
    assert_eq!(
        selected(&store, "update the user profile email")[0],
        "f/user-profile/update"
    );

    // isError: a handler error with the server's text and the whole result.
    let failed = call_error(call(&store, "f/fail", json!({})).await);
    assert!(
        matches!(&failed, CallError::Tool { text, result, .. }
            if text == "disk quota exceeded" && result["isError"] == true),
        "{failed:?}"
    );
    // A JSON-RPC error: typed, with code, message and data.
    let boom = call_error(call(&store, "f/boom", json!({})).await);
    assert_eq!(
        boom,
        CallError::Protocol {
            server: "f".into(),
            tool: "boom".into(),
            code: -32602,
            message: "unknown argument `x`".into(),
            data: Some(json!({"hint": 1})),
        }
    );
    // The executor's own checks still come first: a missing required argument never reaches
    // the server.
    let missing = call(&store, "f/echo", json!({})).await;
    assert!(
        matches!(missing, Err(ExecError::InvalidArguments { .. })),
        "{missing:?}"
    );
    hub.shutdown().await;
}

// ---- keeping in step ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_reimports_in_one_transaction() {
    let store = Store::new();
    let hub = McpHub::connect(&store, &config(vec![fault("f", "ok")]), options()).await;
    hub.startup()[0].result.as_ref().expect("connects");
    let mut events = hub.subscribe();
    let before = store.version();
    call(&store, "f/grow", json!({"name": "summarize_ledger"}))
        .await
        .expect("grow runs");
    let event = next_event(&mut events, |e| matches!(e, LiveEvent::ToolsChanged { .. })).await;
    let LiveEvent::ToolsChanged { report, .. } = event else {
        unreachable!()
    };
    assert_eq!(report.added, ["f/summarize_ledger"]);
    assert!(report.removed.is_empty() && report.changed.is_empty());
    // One commit made the tool and its handler visible together.
    assert_eq!(report.version, Some(before + 1));
    let snap = store.snapshot();
    assert!(snap.contains(&TOOLS, "f/summarize_ledger").expect("read"));
    assert!(
        snap.contains(&HANDLERS, "f/summarize_ledger")
            .expect("read")
    );
    assert_eq!(
        selected(&store, "summarize the ledger")[0],
        "f/summarize_ledger"
    );
    assert_eq!(hub.status()[0].tools, 10);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_fails_fast_reconnects_and_leaves_other_servers_alone() {
    let store = Store::new();
    let hub = McpHub::connect(
        &store,
        &config(vec![fault("a", "ok"), fault("b", "ok")]),
        LiveOptions {
            // Long enough to see the server down before it is back.
            reconnect_initial: Duration::from_millis(1500),
            ..options()
        },
    )
    .await;
    let mut events = hub.subscribe();
    let tools_before = keys(&store);
    let crashed = call_error(call(&store, "a/crash", json!({})).await);
    assert!(
        matches!(&crashed, CallError::Disconnected { server, .. } if server == "a"),
        "{crashed:?}"
    );
    // The very next call, made before the hub has seen the connection end, fails at once as
    // unavailable: it does not reach the dead connection.
    let start = Instant::now();
    let unavailable = call_error(call(&store, "a/echo", json!({"message": "x"})).await);
    assert!(
        matches!(unavailable, CallError::Unavailable { .. }),
        "{unavailable:?}"
    );
    assert!(start.elapsed() < Duration::from_millis(500), "fails fast");
    let down = next_event(&mut events, |e| matches!(e, LiveEvent::Down { .. })).await;
    assert!(
        matches!(&down, LiveEvent::Down { server, reason } if server == "a" && reason.contains("crashing on purpose")),
        "{down:?}"
    );
    // While it is down: its tools stay, fail at once, and the other server works.
    let unavailable = call_error(call(&store, "a/echo", json!({"message": "x"})).await);
    assert!(
        matches!(unavailable, CallError::Unavailable { .. }),
        "{unavailable:?}"
    );
    assert_eq!(keys(&store), tools_before);
    let status = &hub.status()[0];
    assert!(
        status.down_since.is_some() && status.state == ServerState::Reconnecting,
        "{status:?}"
    );
    assert_eq!(
        text(
            &call(&store, "b/echo", json!({"message": "still here"}))
                .await
                .expect("b works")
        ),
        "still here"
    );
    // It comes back, and its tools work again; nothing changed in the store.
    let version = store.version();
    next_event(&mut events, |e| matches!(e, LiveEvent::Reconnected { .. })).await;
    assert_eq!(
        text(
            &call(&store, "a/echo", json!({"message": "back"}))
                .await
                .expect("a is back")
        ),
        "back"
    );
    assert_eq!(store.version(), version);
    let status = &hub.status()[0];
    assert_eq!((status.state, status.connects), (ServerState::Ready, 2));
    assert_eq!(status.down_since, None);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_or_dropped_call_is_cancelled_on_the_server() {
    let dir = scratch("cancel");
    let log = dir.join("cancelled.log");
    let mut server = fault("f", "ok");
    if let capstore::mcp::ServerTransport::Stdio { env, .. } = &mut server.transport {
        env.insert("FAULT_LOG".into(), log.display().to_string());
    }
    let store = Store::new();
    let hub = McpHub::connect(
        &store,
        &config(vec![server]),
        LiveOptions {
            call_timeout: Duration::from_millis(800),
            ..options()
        },
    )
    .await;
    hub.startup()[0].result.as_ref().expect("connects");

    let start = Instant::now();
    let timed_out = call_error(call(&store, "f/slow", json!({})).await);
    assert!(
        matches!(timed_out, CallError::Timeout { .. }),
        "{timed_out:?}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );

    // The caller gives up first: dropping the call's future cancels it too. It gives up once
    // the call runs upstream (before that there is nothing there to cancel), well inside the
    // call's own timeout.
    tokio::select! {
        answer = call(&store, "f/slow", json!({})) => panic!("the slow call ended: {answer:?}"),
        () = logged(&log, "started slow", 2) => {}
    }
    logged(&log, "cancelled", 2).await;
    // The server is still fine.
    assert_eq!(
        text(
            &call(&store, "f/echo", json!({"message": "ok"}))
                .await
                .expect("echo")
        ),
        "ok"
    );
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits (10 s at most) until exactly `count` lines of the fault server's `log` begin `prefix`.
async fn logged(log: &Path, prefix: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lines = std::fs::read_to_string(log).unwrap_or_default();
        if lines.lines().filter(|l| l.starts_with(prefix)).count() == count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "waited for {count} {prefix:?}; the server saw: {lines:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---- faults ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_servers_fail_typed_within_their_timeouts_and_leave_the_store_alone() {
    let store = Store::new();
    let short = LiveOptions {
        connect_timeout: Duration::from_secs(2),
        list_timeout: Duration::from_secs(2),
        ..options()
    };
    let start = Instant::now();
    let hub = McpHub::connect(
        &store,
        &config(vec![
            fault("silent", "silent"),
            fault("garbage", "garbage"),
            fault("exits", "exit"),
            fault("dupes", "duplicate"),
            fault("dies", "die_on_list"),
            ServerConfig::stdio("nowhere", "/no/such/mcp-server", ["x"]),
            fault("good", "ok"),
        ]),
        short,
    )
    .await;
    // All at once: the slowest failure bounds the start-up, not their sum.
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );

    // `LiveError` holds a JSON value (an MCP error's `data`), which passes clippy's size line
    // when serde_json keeps key order (`preserve_order`, turned on by the `rig` feature).
    #[allow(clippy::result_large_err)]
    let result = |server: &str| {
        hub.startup()
            .iter()
            .find(|s| s.server == server)
            .expect("listed")
            .result
            .clone()
    };
    assert!(
        matches!(
            result("silent"),
            Err(LiveError::Timeout {
                phase: "initialize",
                ..
            })
        ),
        "{:?}",
        result("silent")
    );
    assert!(
        matches!(
            result("garbage"),
            Err(LiveError::Timeout {
                phase: "initialize",
                ..
            } | LiveError::Handshake { .. })
        ),
        "{:?}",
        result("garbage")
    );
    assert!(
        matches!(result("exits"), Err(LiveError::Handshake { stderr: Some(ref s), .. }) if s.contains("permission denied")),
        "{:?}",
        result("exits")
    );
    assert!(
        matches!(result("dupes"), Err(LiveError::Import { error: McpError::DuplicateName { ref name, .. }, .. }) if name == "echo"),
        "{:?}",
        result("dupes")
    );
    assert!(
        matches!(
            result("dies"),
            Err(LiveError::List { .. }
                | LiveError::Timeout {
                    phase: "tools/list",
                    ..
                })
        ),
        "{:?}",
        result("dies")
    );
    assert!(
        matches!(result("nowhere"), Err(LiveError::Spawn { .. })),
        "{:?}",
        result("nowhere")
    );
    for startup in hub.startup() {
        if let Err(error) = &startup.result {
            assert!(
                error.to_string().contains(&format!("`{}`", startup.server)),
                "{error}"
            );
        }
    }
    // Only the good server's tools are in the store, and they work.
    assert!(
        keys(&store).iter().all(|key| key.starts_with("good/")),
        "{:?}",
        keys(&store)
    );
    assert_eq!(keys(&store).len(), 9);
    assert_eq!(
        text(
            &call(&store, "good/echo", json!({"message": "fine"}))
                .await
                .expect("works")
        ),
        "fine"
    );
    let states: Vec<_> = hub
        .status()
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect();
    assert!(
        states.contains(&("good".to_string(), ServerState::Ready)),
        "{states:?}"
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_paged_list_imports_whole() {
    let store = Store::new();
    let hub = McpHub::connect(&store, &config(vec![fault("big", "huge")]), options()).await;
    let report = hub.startup()[0].result.as_ref().expect("imports");
    assert_eq!(report.added.len(), 5009);
    assert_eq!(store.snapshot().count(&TOOLS).expect("count"), 5009);
    assert_eq!(store.snapshot().count(&HANDLERS).expect("count"), 5009);
    assert_eq!(selected(&store, "echo this message back")[0], "big/echo");
    hub.shutdown().await;
}

/// An MCP tool runs as a Rust one does: hooks around it, events on the bus, the
/// unselected-call policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_events_and_policy_apply_to_mcp_tools() {
    use capstore::exec::register_hook;
    use capstore::{Event, EventBus, Hook, HookEvent, HookOutcome};
    use std::sync::{Arc, Mutex};

    let store = Store::new();
    let hub = McpHub::connect(&store, &config(vec![fault("f", "ok")]), options()).await;
    hub.startup()[0].result.as_ref().expect("connects");
    store
        .write(|tx| {
            register_hook(
                tx,
                Hook::new("no-secrets", HookEvent::PreToolUse, "f/*"),
                |ctx| async move {
                    let secret = ctx.input["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("password"));
                    Ok(if secret {
                        HookOutcome::deny("no passwords")
                    } else {
                        HookOutcome::Continue
                    })
                },
            )
        })
        .expect("hook");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let bus = EventBus::new();
    let log = Arc::clone(&seen);
    let _sub = bus.subscribe(move |event| {
        let name = match event {
            Event::ToolCallStarted { tool, .. } => format!("started {tool}"),
            Event::ToolCallFinished { tool, .. } => format!("finished {tool}"),
            Event::ToolCallFailed { tool, .. } => format!("failed {tool}"),
            Event::HookDenied { .. } => "denied".to_string(),
            _ => return,
        };
        log.lock().expect("log").push(name);
    });
    let executor = Executor::new(store.clone())
        .with_policy(UnselectedCallPolicy::Deny)
        .with_events(bus);
    let offered = ["f/echo".to_string()];
    let ok = executor
        .execute(
            ToolCall::new("1", "f/echo", json!({"message": "hello"})),
            &offered,
        )
        .await
        .expect("runs");
    assert_eq!(text(&ok.output), "hello");
    let denied = executor
        .execute(
            ToolCall::new("2", "f/echo", json!({"message": "my password"})),
            &offered,
        )
        .await;
    assert!(
        matches!(denied, Err(ExecError::HookDenied { .. })),
        "{denied:?}"
    );
    let unselected = executor
        .execute(
            ToolCall::new("3", "f/admin.tools.list", json!({})),
            &offered,
        )
        .await;
    assert!(
        matches!(unselected, Err(ExecError::NotSelected { .. })),
        "{unselected:?}"
    );
    assert_eq!(
        *seen.lock().expect("log"),
        [
            "started f/echo",
            "finished f/echo",
            "started f/echo",
            "denied",
            "failed f/echo",
            "started f/admin.tools.list",
            "failed f/admin.tools.list"
        ]
    );
    hub.shutdown().await;
}

// ---- hostile servers: limits, malformed tools, quarantine ----

/// A server whose `nextCursor` never ends is stopped at the page limit, fast; one that sends
/// more tools than allowed is refused; both errors name the server and the limit, and the
/// other servers are imported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_pagination_and_floods_stop_at_their_limits() {
    let store = Store::new();
    let start = Instant::now();
    let hub = McpHub::connect(
        &store,
        &config(vec![
            fault("endless", "endless"),
            fault("flood", "flood"),
            fault("good", "ok"),
        ]),
        options(),
    )
    .await;
    // Well before the 20 s list timeout: the default limit is 1,000 pages.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    // `LiveError` holds a JSON value (an MCP error's `data`), which passes clippy's size line
    // when serde_json keeps key order (`preserve_order`, turned on by the `rig` feature).
    #[allow(clippy::result_large_err)]
    let result = |server: &str| {
        hub.startup()
            .iter()
            .find(|s| s.server == server)
            .expect("listed")
            .result
            .clone()
    };
    let endless = result("endless").expect_err("endless pagination is refused");
    assert!(
        matches!(endless, LiveError::Limit { ref server, limit: "pages per tools/list", max: 1_000, .. } if server == "endless"),
        "{endless:?}"
    );
    assert_eq!(
        endless.to_string(),
        "MCP server `endless`: sent more than the limit of 1000 pages per tools/list (raise it \
         with --max-pages if the server is trusted); this listing was not imported"
    );
    let flood = result("flood").expect_err("a flood is refused");
    assert!(
        matches!(flood, LiveError::Limit { ref server, limit: "tools per server", max: 20_000, .. } if server == "flood"),
        "{flood:?}"
    );
    assert!(result("good").is_ok());
    assert!(keys(&store).iter().all(|key| key.starts_with("good/")));
    hub.shutdown().await;

    // Lower limits, through the options.
    let store = Store::new();
    let hub = McpHub::connect(
        &store,
        &config(vec![fault("big", "huge")]),
        LiveOptions {
            max_pages: 5,
            ..options()
        },
    )
    .await;
    let error = hub.startup()[0].result.clone().expect_err("over 5 pages");
    assert!(error.to_string().contains("limit of 5 pages"), "{error}");
    hub.shutdown().await;
}

/// Malformed or oversized tools are dropped one by one, each named with its field and why;
/// the server's valid tools are imported and run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_tool_is_dropped_alone() {
    let store = Store::new();
    let hub = McpHub::connect(&store, &config(vec![fault("bad", "malformed")]), options()).await;
    let report = hub.startup()[0]
        .result
        .as_ref()
        .expect("imports the valid tools");
    assert_eq!(report.added.len(), 9, "{report:?}");
    assert_eq!(
        text(
            &call(&store, "bad/echo", json!({"message": "ok"}))
                .await
                .expect("runs")
        ),
        "ok"
    );
    let dropped = hub.status()[0].dropped.clone();
    assert_eq!(dropped.len(), 4, "{dropped:#?}");
    let expect = [
        "tool #9 `schema_is_text`, field `inputSchema`: `inputSchema` must be a JSON Schema object, found a string",
        "tool #10, field `name`: `name` is missing",
        "tool #11, field `name`: `name` must be a string, found a number",
        "tool #12 `too_big`, field `tool`: its definition is ",
    ];
    for (line, expected) in dropped.iter().zip(expect) {
        assert!(line.starts_with("MCP server `bad`: "), "{line}");
        assert!(line.contains(expected), "{line}\nwanted: {expected}");
        assert!(
            line.ends_with("dropped, its other tools are kept"),
            "{line}"
        );
    }
    assert!(
        dropped[3].contains("over the limit of 65536 bytes per tool"),
        "{}",
        dropped[3]
    );
    assert!(
        !keys(&store)
            .iter()
            .any(|k| k.contains("schema_is_text") || k.contains("too_big"))
    );
    hub.shutdown().await;
}

/// The hub's quarantine: a rug pull takes the tool out of the store (not selected, not
/// runnable through the executor) with the reason in `held`; an approval brings it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_keeps_a_rug_pulled_tool_out_of_the_store_until_approved() {
    let dir = scratch("hub-quarantine");
    let trust = dir.join("trust.json");
    let store = Store::new();
    let hub = McpHub::connect(
        &store,
        &config(vec![fault("q", "ok")]),
        LiveOptions {
            quarantine: Some(Quarantine::open(&trust, false)),
            ..options()
        },
    )
    .await;
    hub.startup()[0].result.as_ref().expect("connects");
    assert!(hub.held().is_empty());
    assert_eq!(selected(&store, "echo a message back")[0], "q/echo");
    let mut events = hub.subscribe();
    call(&store, "q/mutate", json!({})).await.expect("mutates");
    next_event(&mut events, |e| matches!(e, LiveEvent::ToolsChanged { .. })).await;
    let held = hub.held();
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].key, "q/echo");
    assert_eq!(held[0].reason, Some(QuarantineReason::Changed));
    assert!(
        held[0].why.contains("changed since it was approved"),
        "{held:?}"
    );
    // Not in the store: no selection offers it and the executor does not run it.
    assert!(!keys(&store).contains(&"q/echo".to_string()));
    assert!(!selected(&store, "echo a message back").contains(&"q/echo".to_string()));
    assert!(matches!(
        call(&store, "q/echo", json!({"message": "x"})).await,
        Err(ExecError::UnknownTool { .. })
    ));
    // Another process approves; the hub imports the approved definition.
    assert!(
        Quarantine::open(&trust, false)
            .approve("q/echo")
            .expect("approves")
    );
    hub.recheck();
    assert!(hub.held().is_empty());
    let snap = store.snapshot();
    let echo = snap.get(&TOOLS, "q/echo").expect("read").expect("back");
    assert!(
        echo.description.contains("id_rsa"),
        "the approved definition"
    );
    drop(snap);
    hub.shutdown().await;

    // A trust file others may write holds every tool back, with why.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&trust, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let store = Store::new();
        let hub = McpHub::connect(
            &store,
            &config(vec![fault("q", "ok")]),
            LiveOptions {
                quarantine: Some(Quarantine::open(&trust, false)),
                ..options()
            },
        )
        .await;
        assert!(keys(&store).is_empty(), "{:?}", keys(&store));
        let held = hub.held();
        assert_eq!(held.len(), 9);
        assert!(
            held.iter()
                .all(|h| h.reason.is_none() && h.why.contains("chmod 600")),
            "{held:?}"
        );
        hub.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
