//! `capstore serve --state postgres://...` in a process of its own, and a replica in this one:
//! a tool written here is found by the gateway's `search_tools`; the gateway's catalog comes back
//! here through the log; a call through the gateway lands in the `audit` table. Two gateway
//! processes share one trust state: a rug pull held on both is approved once, and runs on both.
//! Two gateways over HTTP share their clients: one added once is known by both with its scope,
//! and one revoked once is refused by both.

#[path = "common/gateway.rs"]
mod gateway;
#[path = "../../tests/pg/mod.rs"]
mod pg;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use capstore::sync::{AuditLog, Batch, Replica};
use capstore::{Event, TOOLS, Tool};
use gateway::{GatewayProcess as Gateway, HttpGateway};
use serde_json::json;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn config(dir: &Path) -> PathBuf {
    config_of(dir, "f", "ok")
}

/// An `mcpServers` file in `dir` with one fault server `server` in `mode`.
fn config_of(dir: &Path, server: &str, mode: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("dir");
    let config = dir.join("mcp.json");
    let script = root().join("tests/fixtures/mcp/servers/fault_server.py");
    std::fs::write(
        &config,
        json!({"mcpServers": {server: {"command": "python3", "args": [script, mode]}}}).to_string(),
    )
    .expect("config");
    config
}

fn capstore(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(args)
        .current_dir(root())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("capstore runs")
}

/// Calls `tool` through `gateway` until `done` says the answer is the one waited for (an
/// approval reaches a gateway through the log); that answer, or a failure after `pg::SEE`.
fn call_until(
    gateway: &mut Gateway,
    tool: &str,
    arguments: serde_json::Value,
    what: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let reply = gateway.call(tool, arguments.clone());
        if done(&reply) {
            return reply;
        }
        assert!(
            started.elapsed() < pg::SEE,
            "{what}: still {reply} after {:?}; stderr:\n{}",
            pg::SEE,
            gateway.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn is_error(reply: &serde_json::Value) -> bool {
    reply["result"]["isError"] == true || reply.get("error").is_some()
}

#[test]
fn one_approval_trusts_a_rug_pulled_tool_on_every_gateway() {
    let (url, options) = (pg::url(), pg::options("trust"));
    let ns = options.namespace.clone();
    let dir = std::env::temp_dir().join(format!("capstore-sync-trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let honest = config_of(&dir.join("a"), "cards", "ok");
    let poisoned = config_of(&dir.join("b"), "cards", "poisoned");
    let state = ["--state", url.as_str(), "--namespace", ns.as_str()];

    // Gateway A sees `cards` first, honest: its tools are trusted, in the shared state.
    let mut a = Gateway::start(&honest, &state);
    let reply = a.call("cards/echo", json!({"message": "first"}));
    assert!(!is_error(&reply), "{reply}\n{}", a.stderr());
    assert!(gateway::text_of(&reply).contains("first"), "{reply}");

    // Gateway B never saw the honest `echo`, only the rug-pulled one: the shared state holds
    // it back there.
    let mut b = Gateway::start(&poisoned, &state);
    let reply = b.call("cards/echo", json!({"message": "second"}));
    let text = gateway::text_of(&reply);
    assert!(is_error(&reply), "{reply}");
    assert!(
        text.contains("`cards/echo` is quarantined: its description or schema changed"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "capstore approve --state {url} --namespace {ns} cards/echo"
        )),
        "the hint names the shared state: {text}"
    );
    // Its other tools, unchanged, run.
    let reply = b.call("cards/fail", json!({}));
    assert!(
        gateway::text_of(&reply).contains("MCP server `cards` reported an error"),
        "{reply}"
    );

    // A's server pulls the rug too (`mutate`): A holds `echo` as well.
    let reply = a.call("cards/mutate", json!({}));
    assert!(!is_error(&reply), "{reply}");
    call_until(
        &mut a,
        "cards/echo",
        json!({"message": "third"}),
        "A holds the changed echo",
        |reply| gateway::text_of(reply).contains("is quarantined"),
    );

    // No trust file: the state is PostgreSQL's.
    for config in [&honest, &poisoned] {
        let trust_file = capstore::mcp::live::quarantine_path(config);
        assert!(!trust_file.exists(), "{} was written", trust_file.display());
    }

    // `capstore approve --state` lists it, then approves it: once, for every gateway.
    let listed = capstore(&["approve", "--state", &url, "--namespace", &ns]);
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(
        out.contains("cards/echo") && out.contains("definition changed since approved"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1, "only echo is held: {out}");
    let approved = capstore(&["approve", "cards/echo", "--state", &url, "--namespace", &ns]);
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    assert!(String::from_utf8_lossy(&approved.stdout).contains("approved cards/echo"));

    // B runs it now, and so does A.
    let ran = |reply: &serde_json::Value| !is_error(reply);
    let reply = call_until(
        &mut b,
        "cards/echo",
        json!({"message": "approved on B"}),
        "B runs the approved echo",
        ran,
    );
    assert!(
        gateway::text_of(&reply).contains("approved on B"),
        "{reply}"
    );
    let reply = call_until(
        &mut a,
        "cards/echo",
        json!({"message": "approved on A"}),
        "A runs the approved echo",
        ran,
    );
    assert!(
        gateway::text_of(&reply).contains("approved on A"),
        "{reply}"
    );

    // Nothing is pending any more, and approving again says so.
    let listed = capstore(&["approve", "--state", &url, "--namespace", &ns]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("nothing is quarantined"));
    let again = capstore(&["approve", "cards/echo", "--state", &url, "--namespace", &ns]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("`cards/echo` is not quarantined"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_process_shares_its_catalog_and_audit_through_postgres() {
    let (url, options) = (pg::url(), pg::options("gateway"));
    let dir = std::env::temp_dir().join(format!("capstore-sync-gw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let cfg = config(&dir);
    let mut gateway = Gateway::start(
        &cfg,
        &[
            "--bundled",
            "--state",
            &url,
            "--namespace",
            &options.namespace,
        ],
    );

    // The gateway published the bundled catalog (not its live server's tools): it is here now.
    let here = Replica::open(&url, options.clone()).await.expect("open");
    let snap = here.snapshot();
    assert!(
        snap.count(&TOOLS).expect("tools") > 100,
        "the bundled catalog"
    );
    assert!(
        snap.by_index(&TOOLS, "source", "f")
            .expect("index")
            .next()
            .is_none()
    );

    // A tool written here is found by the gateway's search.
    let mut batch = Batch::new();
    batch
        .put(
            &TOOLS,
            Tool::new("rotate_keys", "Rotate the team's deployment signing keys")
                .with_source("team"),
        )
        .expect("encodes");
    here.write(batch).await.expect("write");
    let started = Instant::now();
    loop {
        if gateway
            .search_names("rotate the deployment signing keys", 5)
            .iter()
            .any(|n| n == "team/rotate_keys")
        {
            break;
        }
        assert!(
            started.elapsed() < pg::SEE,
            "the gateway never found team/rotate_keys"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A call through the gateway is audited in PostgreSQL.
    let reply = gateway.call("f/echo", json!({"message": "hi"}));
    assert_ne!(reply["result"]["isError"], true, "{reply}");
    let started = Instant::now();
    loop {
        let audited = AuditLog::read(&url, &options).await.expect("read audit");
        let finished = audited.iter().any(
            |(_, event)| matches!(event, Event::ToolCallFinished { tool, .. } if tool == "f/echo"),
        );
        if finished {
            break;
        }
        assert!(
            started.elapsed() < pg::SEE,
            "no audit of f/echo: {audited:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--state`, a gateway's sessions teach every gateway: A's turns go to the log in
/// batches, and B's `search_tools` says what A's calls taught; no usage file is written.
#[test]
fn what_one_gateway_learns_every_gateway_knows() {
    let (url, options) = (pg::url(), pg::options("usage"));
    let ns = options.namespace.clone();
    let dir = std::env::temp_dir().join(format!("capstore-sync-usage-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let state = [
        "--state",
        url.as_str(),
        "--namespace",
        ns.as_str(),
        "--no-quarantine",
    ];
    let config_a = config_of(&dir.join("a"), "f", "ok");
    let config_b = config_of(&dir.join("b"), "f", "ok");
    let mut a = Gateway::start(&config_a, &state);
    let mut b = Gateway::start(&config_b, &state);
    for _ in 0..2 {
        a.search("update the user profile");
        for (tool, arguments) in [
            ("f/echo", json!({"message": "hello"})),
            ("f/user-profile/update", json!({})),
        ] {
            let reply = a.call(tool, arguments);
            assert!(!is_error(&reply), "{reply}\n{}", a.stderr());
        }
    }
    // A's search ends its second turn; both reach B through the log.
    a.search("anything");
    let started = Instant::now();
    loop {
        let answer = b.search("update the user profile");
        if answer
            .to_string()
            .contains("f/echo (before it, in 2 of its 2 turns)")
        {
            break;
        }
        assert!(
            started.elapsed() < pg::SEE,
            "B never learned A's turns: {answer}\n{}",
            a.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for config in [&config_a, &config_b] {
        assert!(!capstore::usage::usage_path(config).exists());
    }
    // The turns went in batches: no entry of one turn (`learn`), and the batches (`turns`)
    // carry A's two turns, each once.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let entries = runtime.block_on(pg::log_entries(&url, &ns));
    assert!(
        entries.iter().all(|e| e.get("learn").is_none()),
        "{entries:?}"
    );
    let turns: usize = entries
        .iter()
        .filter_map(|e| e.get("turns").and_then(|t| t.as_array()))
        .map(Vec::len)
        .sum();
    assert_eq!(turns, 2, "{entries:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `capstore clients add --state` once: both gateways of the shared state know the client and
/// hold it to its scope, and its calls are audited under its name; `clients revoke --state`
/// once: both refuse its token, each as soon as its replica applies the change. `/metrics`
/// says where each replica is in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_added_or_revoked_once_is_known_or_refused_by_every_gateway() {
    let (url, options) = (pg::url(), pg::options("clients"));
    let ns = options.namespace.clone();
    let state = ["--state", url.as_str(), "--namespace", ns.as_str()];
    let clients = |args: &[&str]| {
        let out = capstore(&[&["clients"], args, &state].concat());
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let token = clients(&["add", "ci", "--tool", "f/echo"]);
    assert!(token.starts_with("cst_") && token.len() == 68, "{token}");
    let listed = clients(&["list"]);
    assert!(
        listed.contains("ci") && listed.contains("tools f/echo"),
        "{listed}"
    );
    // A name once, across the shared state too.
    let again = capstore(&[&["clients", "add", "ci"][..], &state].concat());
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("a client named `ci` exists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    let base = std::env::temp_dir().join(format!("capstore-sync-clients-{}", std::process::id()));
    // B audits its clients' calls with their arguments; A, by default, without.
    let gateways: Vec<HttpGateway> = [("a", None), ("b", Some("--audit-arguments"))]
        .iter()
        .map(|(name, audit)| {
            let extra = [&["--no-quarantine"][..], &state, audit.as_slice()].concat();
            HttpGateway::start(&config(&base.join(name)), "127.0.0.1:0", &extra)
        })
        .collect();
    for gateway in &gateways {
        assert_eq!(initialize(gateway, None), 401, "no token, no session");
        assert_eq!(
            initialize(gateway, Some(&token)),
            200,
            "the shared client's token"
        );
        // Its scope came with it: its echo runs, the rest of its server is refused.
        let out = std::process::Command::new(root().join(".test-deps/venv/bin/python"))
            .arg(root().join("tests/gateway/scoped_client.py"))
            .args([&gateway.mcp, "echoer", &token])
            .current_dir(root())
            .output()
            .expect("the client runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("gateway-scopes: 3 passed, 0 failed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Who called what: both gateways' calls, in the shared audit, under the client's name.
    let started = Instant::now();
    loop {
        let audited = AuditLog::read(&url, &options).await.expect("read audit");
        let by_ci = |outcome: &str| {
            audited
                .iter()
                .filter(|(_, event)| {
                    matches!(event, Event::GatewayCall { client, outcome: o, .. }
                        if client == "ci" && o == outcome)
                })
                .count()
        };
        // Per gateway: two echoes ran, one call was refused.
        if by_ci("ok") >= 4 && by_ci("refused") >= 2 {
            // The echoes' messages, "scoped" and "still", each once: B's, not A's.
            let told: Vec<String> = audited
                .iter()
                .filter_map(|(_, event)| match event {
                    Event::GatewayCall {
                        arguments: Some(arguments),
                        ..
                    } => Some(arguments.to_string()),
                    _ => None,
                })
                .collect();
            assert_eq!(told.len(), 3, "B's three calls, with arguments: {told:?}");
            assert_eq!(
                told.iter().filter(|a| a.contains("scoped")).count(),
                1,
                "{told:?}"
            );
            break;
        }
        assert!(
            started.elapsed() < pg::SEE,
            "the audit lacks ci's calls: {audited:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let revoked = clients(&["revoke", "ci"]);
    assert!(revoked.contains("revoked ci"), "{revoked}");
    let here = Replica::open(&url, options.clone()).await.expect("open");
    let version = here.version();
    for gateway in &gateways {
        let started = Instant::now();
        loop {
            let status = initialize(gateway, Some(&token));
            if status == 401 {
                break;
            }
            assert!(
                started.elapsed() < pg::SEE,
                "gateway {} still takes the revoked token: {status}; clients {}",
                gateway.mcp,
                clients(&["list"])
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        eprintln!(
            "{} refused the revoked token after {:?}",
            gateway.mcp,
            started.elapsed()
        );
        // Revoking the last client closed the gateway; it did not open it to everyone.
        assert_eq!(
            initialize(gateway, None),
            401,
            "no client left, still closed"
        );
        // Where its replica is: at the revocation's version or past it, following the log.
        let metrics = metrics_of(gateway);
        let gauge = |name: &str| -> f64 {
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
        };
        assert!(gauge("capstore_gateway_replica_version") >= version as f64);
        assert_eq!(gauge("capstore_gateway_replica_connected"), 1.0);
        assert!(gauge("capstore_gateway_replica_behind") >= 0.0);
    }
    drop(gateways);
    let _ = std::fs::remove_dir_all(&base);
}

/// The status of an MCP `initialize` posted to `gateway`, with `token` as the bearer.
fn initialize(gateway: &HttpGateway, token: Option<&str>) -> u16 {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "sync-clients", "version": "0"}},
    })
    .to_string();
    let bearer = token.map(|token| format!("Bearer {token}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer));
    }
    let (head, _) = gateway::http_request(gateway.port, "POST", "/mcp", &headers, &body);
    head.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head}"))
}

/// `/metrics` of `gateway`, with the page's token as the bearer.
fn metrics_of(gateway: &HttpGateway) -> String {
    let token = gateway
        .page
        .split_once("token=")
        .map(|(_, t)| t)
        .expect("token");
    let bearer = format!("Bearer {token}");
    let (head, body) = gateway::http_request(
        gateway.port,
        "GET",
        "/metrics",
        &[("Authorization", &bearer)],
        "",
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    body
}
