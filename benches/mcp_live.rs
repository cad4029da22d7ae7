//! Live MCP costs, against real servers (installed by `scripts/test-deps.sh`):
//! - spawn to tools selectable, per server (filesystem, everything, time);
//! - `tools/call` round trip through capstore (`Executor::execute` → forwarding handler → rmcp)
//!   against the same call made with a bare `rmcp` client on its own connection to the same
//!   server, interleaved, medians and the ratio;
//! - `notifications/tools/list_changed` to the new snapshot.
//!
//! `cargo bench --bench mcp_live` (results in BENCHMARKS.md).

use std::path::Path;
use std::time::{Duration, Instant};

use capstore::mcp::live::{LiveEvent, LiveOptions, McpHub};
use capstore::mcp::{McpConfig, ServerConfig};
use capstore::{Executor, Store, ToolCall, UnselectedCallPolicy};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

const STARTS: usize = 10;
const CALLS: usize = 2_000;
const CHANGES: usize = 50;

fn installed(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".test-deps")
        .join(path);
    assert!(full.exists(), "run `bash scripts/test-deps.sh` first");
    full.display().to_string()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn config(servers: Vec<ServerConfig>) -> McpConfig {
    McpConfig {
        servers,
        disabled: Vec::new(),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = std::env::temp_dir().join("capstore-bench-live");
    std::fs::create_dir_all(&dir).expect("dir");
    let servers = [
        ServerConfig::stdio(
            "files",
            installed("node/node_modules/.bin/mcp-server-filesystem"),
            [dir.display().to_string()],
        ),
        ServerConfig::stdio(
            "everything",
            installed("node/node_modules/.bin/mcp-server-everything"),
            ["stdio"],
        ),
        ServerConfig::stdio(
            "time",
            installed("venv/bin/mcp-server-time"),
            Vec::<String>::new(),
        ),
    ];

    println!("== spawn to tools selectable ({STARTS} starts each, one server at a time)");
    for server in &servers {
        let mut samples = Vec::new();
        let mut tools = 0;
        for _ in 0..STARTS {
            let store = Store::new();
            let hub = McpHub::connect(
                &store,
                &config(vec![server.clone()]),
                LiveOptions::default(),
            )
            .await;
            let startup = &hub.startup()[0];
            tools = startup.result.as_ref().expect("connects").added.len();
            samples.push(startup.elapsed);
            hub.shutdown().await;
        }
        let min = samples.iter().min().copied().unwrap_or_default();
        println!(
            "{:<11} {tools:>3} tools  median {:>7.1} ms  min {:>7.1} ms",
            server.name,
            us(median(samples)) / 1e3,
            us(min) / 1e3
        );
    }

    println!("\n== tools/call round trip, everything/echo, {CALLS} calls each, interleaved");
    let store = Store::new();
    let hub = McpHub::connect(
        &store,
        &config(vec![servers[1].clone()]),
        LiveOptions::default(),
    )
    .await;
    hub.startup()[0].result.as_ref().expect("connects");
    let executor = Executor::new(store.clone()).with_policy(UnselectedCallPolicy::Allow);
    let offered = ["everything/echo".to_string()];
    let mut command =
        tokio::process::Command::new(installed("node/node_modules/.bin/mcp-server-everything"));
    command.arg("stdio");
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawns");
    let bare = ().serve(transport).await.expect("bare rmcp client connects");
    let args = json!({"message": "hello from the benchmark"});
    let (mut through, mut direct) = (Vec::new(), Vec::new());
    for i in 0..CALLS + 100 {
        let start = Instant::now();
        let out = executor
            .execute(
                ToolCall::new("b", "everything/echo", args.clone()),
                &offered,
            )
            .await
            .expect("echo through capstore");
        let a = start.elapsed();
        assert!(out.output["content"][0]["text"].is_string());
        let start = Instant::now();
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = args.as_object().cloned();
        let out = bare.call_tool(params).await.expect("echo, bare");
        let b = start.elapsed();
        assert!(!out.content.is_empty());
        if i >= 100 {
            // The first 100 of each warm up both connections.
            through.push(a);
            direct.push(b);
        }
    }
    let (t, d) = (median(through), median(direct));
    println!(
        "through capstore median {:>7.1} µs   bare rmcp median {:>7.1} µs   ratio {:.3}   difference {:+.1} µs",
        us(t),
        us(d),
        t.as_secs_f64() / d.as_secs_f64(),
        us(t) - us(d)
    );
    let _ = bare.cancel().await;
    hub.shutdown().await;

    println!("\n== tools/list_changed to new snapshot ({CHANGES} changes, a 9-tool server)");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/servers/fault_server.py");
    let store = Store::new();
    let grow = ServerConfig::stdio("f", "python3", [script.display().to_string(), "ok".into()]);
    let hub = McpHub::connect(&store, &config(vec![grow]), LiveOptions::default()).await;
    hub.startup()[0].result.as_ref().expect("connects");
    let mut events = hub.subscribe();
    let (mut inside, mut end_to_end) = (Vec::new(), Vec::new());
    for i in 0..CHANGES {
        let before = store.version();
        let start = Instant::now();
        executor_call(&store, &format!("tool_{i}")).await;
        let elapsed = loop {
            match events.recv().await.expect("events") {
                LiveEvent::ToolsChanged { elapsed, report } => {
                    assert_eq!(report.version, Some(before + 1));
                    break elapsed;
                }
                _ => continue,
            }
        };
        end_to_end.push(start.elapsed());
        inside.push(elapsed);
    }
    println!(
        "notification to snapshot median {:>7.1} µs   grow call sent to snapshot median {:>7.1} µs",
        us(median(inside)),
        us(median(end_to_end))
    );
    hub.shutdown().await;
}

async fn executor_call(store: &Store, name: &str) {
    Executor::new(store.clone())
        .execute(ToolCall::new("g", "f/grow", json!({"name": name})), &[])
        .await
        .expect("grow");
}
