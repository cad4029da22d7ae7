//! `capstore serve`: the MCP gateway, driven by the official MCP Python SDK (a client nobody on
//! this project wrote), and by raw JSON-RPC lines for what a well-behaved SDK never sends.

#[path = "common/gateway.rs"]
mod gateway;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use gateway::{GatewayProcess as Gateway, HttpGateway};
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn installed(path: &str) -> PathBuf {
    let full = root().join(".test-deps").join(path);
    assert!(
        full.exists(),
        "{} is missing: run `bash scripts/test-deps.sh` (the README's test command does)",
        full.display()
    );
    full
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capstore-gw-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// The Python SDK's client against `capstore serve` over stdio, with filesystem and time from
/// the registries and a server that crashes, hangs and rewrites a tool's description.
#[test]
fn the_official_python_client_uses_the_gateway() {
    let work = scratch("python");
    let out = Command::new(installed("venv/bin/python"))
        .arg(root().join("tests/gateway/client.py"))
        .arg(env!("CARGO_BIN_EXE_capstore"))
        .arg(&work)
        .current_dir(root())
        .output()
        .expect("the client runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("gateway: 26 passed, 0 failed"),
        "{stdout}\n{stderr}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

fn fault_config(dir: &Path) -> PathBuf {
    let config = dir.join("mcp.json");
    let script = root().join("tests/fixtures/mcp/servers/fault_server.py");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "f": {"command": "python3", "args": [script, "ok"]},
            "time": {"command": installed("venv/bin/mcp-server-time")}
        }})
        .to_string(),
    )
    .expect("config");
    config
}

/// Malformed requests get JSON-RPC errors, and the gateway goes on serving.
#[test]
fn malformed_requests_are_answered_and_the_gateway_keeps_serving() {
    let dir = scratch("raw");
    let mut gateway = Gateway::start(&fault_config(&dir), &[]);
    // Not JSON at all: nothing to answer (no id), nothing breaks.
    gateway.send_line("this is not json {");
    // tools/call without a name.
    let reply = gateway.request("tools/call", json!({"arguments": {}}));
    assert!(reply["error"]["code"].is_i64(), "{reply}");
    // A method nobody serves.
    let reply = gateway.request("tools/fly", json!({}));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    // call_tool with arguments that are not an object.
    let reply = gateway.request(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "f/echo", "arguments": [1]}}),
    );
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // A tool the client may not call directly in search mode.
    let reply = gateway.request("tools/call", json!({"name": "f/echo", "arguments": {}}));
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("search_tools"),
        "{reply}"
    );
    // Still serving.
    let reply = gateway.request(
        "tools/call",
        json!({"name": "call_tool",
        "arguments": {"name": "f/echo", "arguments": {"message": "still here"}}}),
    );
    assert_eq!(
        reply["result"]["content"][0]["text"], "still here",
        "{reply}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--mode all`: every upstream tool under its exported name, and list changes passed on.
#[test]
fn all_mode_lists_every_tool_and_passes_list_changes_on() {
    let dir = scratch("all");
    let mut gateway = Gateway::start(&fault_config(&dir), &["--mode", "all", "--no-quarantine"]);
    let listed = gateway.request("tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names.len(), 11, "{names:?}");
    for name in [
        "echo",
        "user-profile_update",
        "admin_tools_list",
        "get_current_time",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert!(names.iter().all(|n| capstore::tools::is_provider_safe(n)));
    // Called by its exported name, forwarded to its server.
    let reply = gateway.request(
        "tools/call",
        json!({"name": "user-profile_update", "arguments": {}}),
    );
    assert_eq!(
        reply["result"]["content"][0]["text"], "profile updated",
        "{reply}"
    );
    // The server adds a tool: the client is told, and the new tool is listed.
    gateway.request(
        "tools/call",
        json!({"name": "grow", "arguments": {"name": "brand_new"}}),
    );
    gateway.wait(|m| m["method"] == "notifications/tools/list_changed");
    let listed = gateway.request("tools/list", json!({}));
    assert!(
        listed["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["name"] == "brand_new"),
        "{listed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A catalog served beside the live servers: its tools are found, marked not runnable, and a
/// call says why instead of failing obscurely.
#[test]
fn catalog_tools_are_searchable_and_say_they_are_not_runnable() {
    let dir = scratch("catalog");
    let mut gateway = Gateway::start(&fault_config(&dir), &["--bundled"]);
    let reply = gateway.request("tools/call",
        json!({"name": "search_tools", "arguments": {"query": "weather forecast for Oslo tomorrow", "limit": 3}}),
    );
    let found = &reply["result"]["structuredContent"]["tools"];
    let first = &found[0];
    assert!(
        first["name"].as_str().unwrap_or("").starts_with("weather/"),
        "{reply}"
    );
    assert_eq!(first["runnable"], false, "{first}");
    assert!(found.as_array().expect("tools").len() <= 3);
    let name = first["name"].as_str().expect("name");
    let reply = gateway.request(
        "tools/call",
        json!({"name": "call_tool",
        "arguments": {"name": name, "arguments": {"location": "Oslo"}}}),
    );
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("no handler here"),
        "{reply}"
    );
    // The live servers' tools are runnable beside them.
    let reply = gateway.request(
        "tools/call",
        json!({"name": "search_tools",
        "arguments": {"query": "echo a message back"}}),
    );
    let echo = reply["result"]["structuredContent"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "f/echo")
        .cloned()
        .unwrap_or_else(|| panic!("f/echo in {reply}"));
    assert_eq!(echo["runnable"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--hold-new-tools`: every tool of a server seen for the first time is trusted together; a
/// tool the server adds later waits for approval.
#[test]
fn held_new_tools_wait_for_approval() {
    let dir = scratch("hold");
    let config = fault_config(&dir);
    let mut gateway = Gateway::start(&config, &["--hold-new-tools"]);
    let call = |name: &str, arguments: Value| json!({"name": "call_tool", "arguments": {"name": name, "arguments": arguments}});
    let reply = gateway.request("tools/call", call("f/echo", json!({"message": "first"})));
    assert_eq!(reply["result"]["content"][0]["text"], "first", "{reply}");
    let reply = gateway.request(
        "tools/call",
        call("time/get_current_time", json!({"timezone": "UTC"})),
    );
    assert_ne!(reply["result"]["isError"], true, "{reply}");
    gateway.request("tools/call", call("f/grow", json!({"name": "late_tool"})));
    // The new tool is held back (kept out of the store by the hub) and a call says why.
    let mut tries = 0;
    let held = loop {
        let reply = gateway.request("tools/call", call("f/late_tool", json!({})));
        tries += 1;
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if text.contains("quarantined") {
            break text;
        }
        assert!(tries < 200, "never quarantined: {reply}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(held.contains("new on its server"), "{held}");
    let listed = Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(["approve", "--mcp-config"])
        .arg(&config)
        .output()
        .expect("approve runs");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("f/late_tool") && listed.contains("new tool"),
        "{listed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Calls run concurrently (a slow one does not hold up the next), and a client's
/// `notifications/cancelled` reaches the upstream server.
#[test]
fn calls_are_concurrent_and_cancellation_reaches_upstream() {
    let dir = scratch("cancel");
    let log = dir.join("cancelled.log");
    let config = dir.join("mcp.json");
    let script = root().join("tests/fixtures/mcp/servers/fault_server.py");
    std::fs::write(
        &config,
        json!({"mcpServers": {"f": {"command": "python3", "args": [script, "ok"],
                                     "env": {"FAULT_LOG": log}}}})
        .to_string(),
    )
    .expect("config");
    let mut gateway = Gateway::start(&config, &[]);
    let slow = gateway.send_request(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "f/slow", "arguments": {}}}),
    );
    // While the slow call runs (30 s upstream), another one is answered.
    let reply = gateway.request(
        "tools/call",
        json!({"name": "call_tool",
        "arguments": {"name": "f/echo", "arguments": {"message": "meanwhile"}}}),
    );
    assert_eq!(
        reply["result"]["content"][0]["text"], "meanwhile",
        "{reply}"
    );
    // Cancel once the slow call runs upstream: a call cancelled before it got there has
    // nothing upstream to cancel (the calls reach it in either order).
    let wait_for = |what: &str, failure: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        loop {
            let seen = std::fs::read_to_string(&log).unwrap_or_default();
            if seen.contains(what) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{failure}: {seen:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("started slow", "the slow call never reached upstream");
    gateway.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": slow, "reason": "the user pressed stop"}}),
    );
    wait_for("cancelled", "upstream saw no cancellation");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--http ADDR`: the Python SDK's Streamable HTTP client against the gateway on loopback; an
/// address off loopback is refused before anything starts.
#[test]
fn streamable_http_serves_the_python_client_on_loopback_only() {
    let work = scratch("http");
    let config = work.join("mcp.json");
    let script = root().join("tests/fixtures/mcp/servers/fault_server.py");
    std::fs::write(
        &config,
        json!({"mcpServers": {"f": {"command": "python3", "args": [script, "ok"]}}}).to_string(),
    )
    .expect("config");
    let config = config.to_str().expect("utf-8");

    let refused = Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(["serve", "--mcp-config", config, "--http", "0.0.0.0:8808"])
        .output()
        .expect("runs");
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("loopback addresses only"), "{stderr}");

    // The address asked for (a port that was free a moment ago) is the one served.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let out = {
        let gateway = HttpGateway::start(Path::new(config), &addr, &[]);
        assert_eq!(gateway.mcp, format!("http://{addr}/mcp"));
        Command::new(installed("venv/bin/python"))
            .arg(root().join("tests/gateway/http_client.py"))
            .arg(&gateway.mcp)
            .current_dir(root())
            .output()
            .expect("the client runs")
    };
    let _ = std::fs::remove_dir_all(&work);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("gateway-http: 6 passed, 0 failed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `capstore clients`: two clients with their own scopes, made and revoked by the command;
/// the Python SDK over Streamable HTTP with each token sees and runs only its scope, is
/// refused without a token or with an unknown one, and a revoked token is refused by the
/// running gateway. The file keeps hashes, not tokens.
#[test]
fn clients_see_and_run_only_their_scope_and_a_revoked_token_is_refused() {
    let dir = scratch("clients");
    let config = fault_config(&dir);
    let config_arg = config.to_str().expect("utf-8");
    let clients = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_capstore"))
            .arg("clients")
            .args(args)
            .args(["--mcp-config", config_arg])
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let timekeeper = clients(&["add", "timekeeper", "--server", "time"]);
    let echoer = clients(&["add", "echoer", "--tool", "f/echo"]);
    assert!(
        timekeeper.starts_with("cst_") && timekeeper.len() == 68,
        "{timekeeper}"
    );
    let listed = clients(&["list"]);
    assert!(
        listed.contains("timekeeper") && listed.contains("servers time"),
        "{listed}"
    );
    let kept = std::fs::read_to_string(capstore::gateway::clients_path(&config)).expect("file");
    assert!(
        !kept.contains(&timekeeper) && !kept.contains(&echoer),
        "{kept}"
    );

    let gateway = HttpGateway::start(&config, "127.0.0.1:0", &[]);
    let python = |args: &[&str]| {
        Command::new(installed("venv/bin/python"))
            .arg(root().join("tests/gateway/scoped_client.py"))
            .arg(&gateway.mcp)
            .args(args)
            .current_dir(root())
            .output()
            .expect("the client runs")
    };
    let out = python(&["scopes", &timekeeper, &echoer]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("gateway-scopes: 13 passed, 0 failed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Who called what, and how it ended: each call's audit event, counted in /metrics.
    let metrics = scrape(&gateway);
    for (series, at_least) in [
        (
            r#"capstore_gateway_client_calls_total{client="timekeeper",outcome="refused"}"#,
            1.0,
        ),
        (
            r#"capstore_gateway_client_calls_total{client="timekeeper",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"capstore_gateway_client_calls_total{client="echoer",outcome="ok"}"#,
            2.0,
        ),
        (
            r#"capstore_gateway_client_calls_total{client="echoer",outcome="refused"}"#,
            2.0,
        ),
        (
            r#"capstore_gateway_refused_calls_total{reason="out_of_scope"}"#,
            3.0,
        ),
    ] {
        let value: f64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{series} in\n{metrics}"));
        assert!(value >= at_least, "{series} {value}");
    }
    // The page lists the clients with their scopes, and each recent call with its client.
    let (head, _) = get(&gateway, &format!("/?token={}", page_token(&gateway)), &[]);
    let cookie = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("set-cookie: ")
                .map(str::to_string)
        })
        .and_then(|c| c.split(';').next().map(str::to_string))
        .expect("the page's cookie");
    let (head, live) = get(&gateway, "/admin/live", &[("Cookie", &cookie)]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let live: serde_json::Value = serde_json::from_str(
        live.trim()
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap_or(&live),
    )
    .expect("JSON");
    let shown = live["clients"].as_str().expect("clients");
    assert!(
        shown.contains("timekeeper") && shown.contains("servers time"),
        "{shown}"
    );
    let calls = live["calls"].as_str().expect("calls");
    assert!(
        calls.contains("<td>echoer</td>") && calls.contains("refused"),
        "{calls}"
    );
    assert!(clients(&["revoke", "echoer"]).contains("revoked echoer"));
    let out = python(&["revoked", &echoer]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("gateway-scopes: 2 passed, 0 failed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `GET PATH` of a gateway over HTTP with `headers`: the reply's head and body (CRLFs as LFs).
fn get(gateway: &HttpGateway, path: &str, headers: &[(&str, &str)]) -> (String, String) {
    gateway::http_request(gateway.port, "GET", path, headers, "")
}

/// The admin page's token, from the address the gateway printed.
fn page_token(gateway: &HttpGateway) -> &str {
    gateway
        .page
        .split_once("token=")
        .map(|(_, t)| t)
        .expect("token")
}

/// `GET /metrics` of a gateway over HTTP, with the page's token as the bearer.
fn scrape(gateway: &HttpGateway) -> String {
    let bearer = format!("Bearer {}", page_token(gateway));
    let (head, body) = get(gateway, "/metrics", &[("Authorization", &bearer)]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    body
}

/// The gateway learns from the calls it forwards: a session's run of calls is a turn (a search
/// after calls ends it), its usage is kept beside the configuration, read back by the next
/// gateway, and a search then says what a tool goes with and brings it along.
#[test]
fn the_gateway_learns_what_is_called_together_and_keeps_it() {
    let dir = scratch("usage");
    let config = fault_config(&dir);
    let usage = capstore::usage::usage_path(&config);
    let mut gateway = Gateway::start(&config, &["--no-quarantine"]);
    for _ in 0..2 {
        let found = gateway.search_names("update the user profile", 3);
        assert!(
            found.contains(&"f/user-profile/update".to_string()),
            "{found:?}"
        );
        for (tool, arguments) in [
            ("f/echo", json!({"message": "hello"})),
            ("f/user-profile/update", json!({})),
        ] {
            let reply = gateway.call(tool, arguments);
            assert!(reply["result"]["isError"] != true, "{reply}");
        }
    }
    // The second turn ends with this search; the first one's counts already show.
    let answer = gateway.search("update the user profile");
    let profile = answer["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "f/user-profile/update"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        profile["goes_with"],
        json!(["f/echo (before it, in 2 of its 2 turns)"]),
        "{answer}"
    );
    // Brought along by the companion channel, with the evidence as its reason.
    let echo = answer["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "f/echo"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        echo["why"][0], "called before f/user-profile/update in 2 of its 2 turns",
        "{answer}"
    );
    // Counts, not arguments: the file holds no "hello".
    let text = std::fs::read_to_string(&usage).expect("the usage file");
    assert!(
        text.contains("capstore.usage/v1") && !text.contains("hello"),
        "{text}"
    );
    drop(gateway);

    // The next gateway starts from the file, and `capstore usage` reads it.
    let mut gateway = Gateway::start(&config, &["--no-quarantine"]);
    let answer = gateway.search("update the user profile");
    assert!(
        answer
            .to_string()
            .contains("f/echo (before it, in 2 of its 2 turns)"),
        "{answer}"
    );
    let stderr = gateway.stderr_once_it_holds("usage: ", Duration::from_secs(10));
    assert!(stderr.contains("usage: "), "{stderr}");
    let listed = Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(["usage", "--mcp-config"])
        .arg(&config)
        .output()
        .expect("capstore usage runs");
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success()
            && stdout.contains("f/user-profile/update")
            && stdout.contains("f/echo (before it, 2/2)"),
        "{stdout}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
