//! Hostile servers and hostile requests, through the `capstore` binary: flag values that once
//! panicked, a web page's requests to `serve --http`, the trust file shared by every command,
//! a hung server beside the one a `call` needs, a server that stays down, a 100 KB query.
//! The servers are `tests/fixtures/mcp/servers/fault_server.py` (standard library only).

#[path = "common/gateway.rs"]
mod gateway;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use gateway::{GatewayProcess as Gateway, HttpGateway};
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capstore-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

fn script() -> PathBuf {
    root().join("tests/fixtures/mcp/servers/fault_server.py")
}

/// Writes an `mcpServers` file of fault servers `(name, mode)` with `env`.
fn write_config(path: &Path, servers: &[(&str, &str)], env: Value) {
    let mut map = serde_json::Map::new();
    for (name, mode) in servers {
        map.insert(
            name.to_string(),
            json!({"command": "python3", "args": [script(), mode], "env": env}),
        );
    }
    std::fs::write(path, json!({ "mcpServers": map }).to_string()).expect("config");
}

fn capstore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("capstore runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---- flags ----

/// The issue's panic (`--call-timeout 1e20`, exit 101) and its kin: a clear error, exit 2,
/// before any server is started.
#[test]
fn out_of_range_flag_values_are_errors_not_panics() {
    let cases: &[&[&str]] = &[
        &[
            "call",
            "time/x",
            "{}",
            "--call-timeout",
            "1e20",
            "--mcp-config",
            "nowhere.json",
        ],
        &[
            "select",
            "hi",
            "--call-timeout",
            "NaN",
            "--mcp-config",
            "nowhere.json",
        ],
        &[
            "serve",
            "--connect-timeout",
            "-1",
            "--mcp-config",
            "nowhere.json",
        ],
        &[
            "serve",
            "--max-results",
            "99999999999999999999",
            "--mcp-config",
            "x",
        ],
        &["select", "hi", "--max-tools", "0"],
        &["select", "hi", "--lexical-weight", "inf"],
    ];
    for args in cases {
        let out = capstore(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        let flag = args
            .iter()
            .find(|a| a.starts_with("--") && **a != "--mcp-config")
            .unwrap();
        assert!(
            err.starts_with(&format!("capstore: {flag}: `")),
            "{args:?}: {err}"
        );
    }
}

// ---- serve --http: Host and Origin ----

/// The status of an `initialize` POSTed to `/mcp` with these headers.
fn post_status(port: u16, host: &str, origin: Option<&str>) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw-http", "version": "1"}}})
    .to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    if let Some(origin) = origin {
        request.push_str(&format!("Origin: {origin}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    // "serving MCP at" is printed once the listener is bound; retry for a few seconds anyway.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => break stream,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("the gateway does not accept connections: {e}"),
        }
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("sends");
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .expect("a status line");
    line.split_whitespace().nth(1).unwrap_or("").to_string()
}

#[test]
fn http_refuses_foreign_origins_and_hosts_with_403() {
    let dir = scratch("origin");
    let config = dir.join("mcp.json");
    write_config(&config, &[("f", "ok")], json!({}));
    let statuses: Vec<(String, Option<String>, String)> = {
        let gateway = HttpGateway::start(
            &config,
            "127.0.0.1:0",
            &["--allow-origin", "https://app.example.com"],
        );
        let port = gateway.port;
        let host = format!("127.0.0.1:{port}");
        [
            (host.clone(), None),
            (host.clone(), Some(format!("http://localhost:{port}"))),
            (host.clone(), Some(format!("http://127.0.0.1:{port}"))),
            (host.clone(), Some("https://app.example.com".to_string())),
            (host.clone(), Some("http://evil.example".to_string())),
            (host.clone(), Some("null".to_string())),
            (
                host.clone(),
                Some(format!("http://localhost:{}", port.wrapping_add(1))),
            ),
            (format!("evil.example:{port}"), None),
            (format!("localhost:{port}"), None),
        ]
        .into_iter()
        .map(|(host, origin)| {
            let status = post_status(port, &host, origin.as_deref());
            (host, origin, status)
        })
        .collect()
    };
    let _ = std::fs::remove_dir_all(&dir);
    let expected = [
        "200", "200", "200", "200", "403", "403", "403", "403", "200",
    ];
    for ((host, origin, status), want) in statuses.iter().zip(expected) {
        assert_eq!(status, want, "Host {host}, Origin {origin:?}");
    }

    // A malformed --allow-origin stops the command before anything starts.
    let out = capstore(&[
        "serve",
        "--mcp-config",
        "x.json",
        "--http",
        "127.0.0.1:1",
        "--allow-origin",
        "null",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--allow-origin: `null` is not a web origin"),
        "{}",
        stderr(&out)
    );
}

// ---- one trust file for every command ----

#[cfg(unix)]
#[test]
fn every_command_honours_the_trust_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("trust");
    let config = dir.join("mcp.json");
    let trust = dir.join("mcp.json.quarantine.json");
    let cfg = config.to_str().unwrap();
    write_config(&config, &[("cards", "ok")], json!({}));

    // First sight trusts the server's tools: the trust file is created 0600 even under umask 000.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 000; exec \"$0\" select 'echo a message back' --json --mcp-config '{cfg}'"
        ))
        .arg(env!("CARGO_BIN_EXE_capstore"))
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let mode = std::fs::metadata(&trust)
        .expect("trust file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    // The server changes `echo`'s description between two runs: a rug pull.
    write_config(&config, &[("cards", "poisoned")], json!({}));
    let called = capstore(&[
        "call",
        "cards/echo",
        r#"{"message": "hi"}"#,
        "--mcp-config",
        cfg,
    ]);
    assert_eq!(called.status.code(), Some(2), "{}", stdout(&called));
    assert!(
        stderr(&called).contains("`cards/echo` is quarantined: its description or schema changed"),
        "{}",
        stderr(&called)
    );
    let selected = capstore(&[
        "select",
        "echo a message back",
        "--json",
        "--mcp-config",
        cfg,
    ]);
    assert!(selected.status.success(), "{}", stderr(&selected));
    assert!(
        !stdout(&selected).contains("id_rsa"),
        "{}",
        stdout(&selected)
    );
    assert!(
        stderr(&selected).contains("quarantined"),
        "{}",
        stderr(&selected)
    );
    let explained = capstore(&[
        "explain",
        "cards/echo",
        "echo a message back",
        "--mcp-config",
        cfg,
    ]);
    assert!(
        stdout(&explained).contains("selected: no, quarantined: its description or schema changed"),
        "{}{}",
        stdout(&explained),
        stderr(&explained)
    );
    // Approved, it runs.
    let approved = capstore(&["approve", "cards/echo", "--mcp-config", cfg]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    let called = capstore(&[
        "call",
        "cards/echo",
        r#"{"message": "hi"}"#,
        "--mcp-config",
        cfg,
    ]);
    assert!(called.status.success(), "{}", stderr(&called));
    assert!(stdout(&called).contains("\"hi\""), "{}", stdout(&called));

    // A trust file others may write is refused, loudly, and holds everything back.
    std::fs::set_permissions(&trust, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let called = capstore(&[
        "call",
        "cards/echo",
        r#"{"message": "hi"}"#,
        "--mcp-config",
        cfg,
    ]);
    assert_eq!(called.status.code(), Some(2));
    assert!(
        stderr(&called).contains("writable by everyone"),
        "{}",
        stderr(&called)
    );
    assert!(stderr(&called).contains("chmod 600"), "{}", stderr(&called));
    // A corrupted one is reported at start, and fails closed.
    std::fs::write(&trust, "{ not json").expect("corrupt");
    std::fs::set_permissions(&trust, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let called = capstore(&[
        "call",
        "cards/echo",
        r#"{"message": "hi"}"#,
        "--mcp-config",
        cfg,
    ]);
    assert_eq!(called.status.code(), Some(2));
    let err = stderr(&called);
    assert!(
        err.contains("capstore: quarantine file") && err.contains("not a trust file"),
        "{err}"
    );
    assert!(err.contains("`cards/echo` is quarantined"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- call: the owning server only ----

#[test]
fn call_starts_only_the_server_it_needs() {
    let dir = scratch("call-one");
    let config = dir.join("mcp.json");
    write_config(&config, &[("hung", "silent"), ("f", "ok")], json!({}));
    let cfg = config.to_str().unwrap();
    let start = Instant::now();
    let out = capstore(&[
        "call",
        "f/echo",
        r#"{"message": "quick"}"#,
        "--mcp-config",
        cfg,
        "--no-quarantine",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("quick"));
    // The hung server's 30 s initialize timeout is not waited for: it was never started.
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert!(
        stderr(&out).contains("connecting to 1 MCP server(s)"),
        "{}",
        stderr(&out)
    );

    let start = Instant::now();
    let out = capstore(&[
        "call",
        "hung/x",
        "--mcp-config",
        cfg,
        "--connect-timeout",
        "1",
        "--no-quarantine",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert!(
        stderr(&out).contains("MCP server `hung`: no answer to initialize within 1.0 s"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- the gateway over stdio ----

/// After its server crashed for good, a tool is listed by `search_tools` as not runnable,
/// with why and since when; a 100 KB query is cut, and not echoed back whole.
#[test]
fn search_tools_says_which_servers_are_down_and_cuts_long_queries() {
    let dir = scratch("down");
    let config = dir.join("mcp.json");
    write_config(
        &config,
        &[("f", "once")],
        json!({"ONCE_FILE": dir.join("started")}),
    );
    let mut gateway = Gateway::start(&config, &["--no-quarantine"]);
    let found = gateway.search("echo a message back");
    assert_eq!(found["tools"][0]["name"], "f/echo", "{found}");
    assert_eq!(found["tools"][0]["runnable"], true, "{found}");
    gateway.call("f/crash", json!({}));
    // The tool is marked down as soon as the call fails; the reason quotes the server's own
    // last words (the crash, or its refusal to start again) once its stderr has been read to
    // the end, which may be a moment later.
    let last_words =
        |why: &str| why.contains("crashing on purpose") || why.contains("lost its license");
    let mut searches = 0;
    let echo = loop {
        let found = gateway.search("echo a message back");
        searches += 1;
        let first = &found["tools"][0];
        if first["runnable"] == false
            && first["unavailable"]["why"].as_str().is_some_and(last_words)
        {
            break first.clone();
        }
        assert!(
            searches < 200,
            "never marked down with the server's last words: {found}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(echo["name"], "f/echo");
    let since = echo["unavailable"]["since"].as_str().expect("since");
    assert!(since.len() == 20 && since.ends_with('Z'), "{since}");

    let long = "echo a message back ".repeat(5_000);
    let reply = gateway.request(
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": long}}),
    );
    let answer = &reply["result"]["structuredContent"];
    assert_eq!(answer["tools"][0]["name"], "f/echo", "{answer}");
    assert!(
        answer["query"].as_str().expect("query").chars().count() <= 100,
        "{answer}"
    );
    assert!(
        answer["query_truncated"]
            .as_str()
            .unwrap_or("")
            .contains("only the first 1000"),
        "{answer}"
    );
    assert!(
        reply.to_string().len() < 20_000,
        "{} bytes",
        reply.to_string().len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// In `--mode all` there is no `search_tools`: the unknown-tool error does not point at it.
#[test]
fn all_mode_unknown_tools_are_not_sent_to_search_tools() {
    let dir = scratch("all-unknown");
    let config = dir.join("mcp.json");
    write_config(&config, &[("f", "ok")], json!({}));
    let mut gateway = Gateway::start(&config, &["--mode", "all", "--no-quarantine"]);
    let reply = gateway.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    let message = reply["error"]["message"].as_str().expect("an error");
    assert!(message.contains("unknown tool `no_such_tool`"), "{message}");
    assert!(!message.contains("search_tools"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}
