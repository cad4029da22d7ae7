//! `capstore serve --state postgres://...` in a process of its own, and a replica in this one:
//! a tool written here is found by the gateway's `search_tools`; the gateway's catalog comes back
//! here through the log; a call through the gateway lands in the `audit` table.

mod pg;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use capstore::sync::{AuditLog, Batch, Replica};
use capstore::{Event, TOOLS, Tool};
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A gateway process spoken to in JSON-RPC lines over stdio.
struct Gateway {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    next_id: i64,
}

impl Gateway {
    fn start(config: &Path, extra: &[&str]) -> Gateway {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capstore"))
            .arg("serve")
            .arg("--mcp-config")
            .arg(config)
            .args(extra)
            .current_dir(root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("capstore serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let Ok(value) = serde_json::from_str(&line) else {
                    panic!("stdout holds only JSON-RPC: {line:?}")
                };
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let mut gateway = Gateway {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = gateway.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "capstore", "{init}");
        gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        gateway
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the gateway answers within 60 s");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn search(&mut self, query: &str) -> Vec<String> {
        let reply = self.request(
            "tools/call",
            json!({"name": "search_tools", "arguments": {"query": query, "limit": 5}}),
        );
        reply["result"]["structuredContent"]["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config(dir: &Path) -> PathBuf {
    let config = dir.join("mcp.json");
    let script = root().join("tests/fixtures/mcp/servers/fault_server.py");
    std::fs::write(
        &config,
        json!({"mcpServers": {"f": {"command": "python3", "args": [script, "ok"]}}}).to_string(),
    )
    .expect("config");
    config
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
            .search("rotate the deployment signing keys")
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
    let reply = gateway.request(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "f/echo", "arguments": {"message": "hi"}}}),
    );
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
