//! `capstore serve` costs, as an MCP client (an `rmcp` client over stdio) sees them:
//! - start-up to the first `tools/list` answer, with 3 upstream servers;
//! - `search_tools` round trip at 1,000 and 10,000 upstream tools (a server serving a
//!   synthetic tool-like catalog);
//! - a forwarded call (`call_tool` → everything's `echo`) against the same call made to the
//!   upstream server directly;
//! - the tokens the client receives from `tools/list` in search mode and in all mode.
//!
//! `cargo bench --bench gateway` after `bash scripts/test-deps.sh` (results in BENCHMARKS.md).

#[path = "../../benches/synthetic/mod.rs"]
mod synthetic;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const STARTS: usize = 5;
const SEARCHES: usize = 300;
const CALLS: usize = 1_000;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn installed(path: &str) -> String {
    let full = root().join(".test-deps").join(path);
    assert!(full.exists(), "run `bash scripts/test-deps.sh` first");
    full.display().to_string()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

type Client = RunningService<RoleClient, ()>;

async fn spawn(program: &str, args: &[&str]) -> Client {
    let mut command = tokio::process::Command::new(program);
    command.args(args).current_dir(root());
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawns");
    ().serve(transport).await.expect("initializes")
}

async fn gateway(config: &Path, mode: &str) -> Client {
    let config = config.display().to_string();
    spawn(
        env!("CARGO_BIN_EXE_capstore"),
        &[
            "serve",
            "--mcp-config",
            &config,
            "--mode",
            mode,
            "--no-quarantine",
        ],
    )
    .await
}

fn write_config(dir: &Path, name: &str, servers: Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).expect("config");
    path
}

async fn call(client: &Client, name: &str, args: Value) -> rmcp::model::CallToolResult {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = args.as_object().cloned();
    client.call_tool(params).await.expect("call")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = std::env::temp_dir().join("capstore-bench-gateway");
    std::fs::create_dir_all(dir.join("files")).expect("dir");
    let three = json!({
        "files": {"command": installed("node/node_modules/.bin/mcp-server-filesystem"),
                  "args": [dir.join("files")]},
        "everything": {"command": installed("node/node_modules/.bin/mcp-server-everything"),
                       "args": ["stdio"]},
        "time": {"command": installed("venv/bin/mcp-server-time")},
    });
    let config = write_config(&dir, "three.json", three);

    println!("== start-up to the first tools/list answer, 3 upstream servers ({STARTS} starts)");
    let mut samples = Vec::new();
    for _ in 0..STARTS {
        let start = Instant::now();
        let client = gateway(&config, "search").await;
        client.list_all_tools().await.expect("tools/list");
        samples.push(start.elapsed());
        let _ = client.cancel().await;
    }
    println!("median {:.0} ms", ms(median(samples)));

    println!("\n== tokens of tools/list (bytes / 4, capstore's estimate), same 3 servers");
    for mode in ["search", "all"] {
        let client = gateway(&config, mode).await;
        let tools = client.list_all_tools().await.expect("tools/list");
        let bytes = serde_json::to_string(&tools).expect("json").len();
        println!(
            "{mode:<6} {:>3} tools  {bytes:>6} bytes  ~{:>5} tokens",
            tools.len(),
            bytes / 4
        );
        let _ = client.cancel().await;
    }

    println!(
        "\n== forwarded call: everything/echo through the gateway vs directly ({CALLS} each, interleaved)"
    );
    let client = gateway(&config, "search").await;
    let direct = spawn(
        &installed("node/node_modules/.bin/mcp-server-everything"),
        &["stdio"],
    )
    .await;
    let (mut through, mut straight) = (Vec::new(), Vec::new());
    let args = json!({"message": "hello"});
    for i in 0..CALLS + 100 {
        let start = Instant::now();
        let out = call(
            &client,
            "call_tool",
            json!({"name": "everything/echo", "arguments": args}),
        )
        .await;
        let a = start.elapsed();
        assert_ne!(out.is_error, Some(true));
        let start = Instant::now();
        call(&direct, "echo", args.clone()).await;
        let b = start.elapsed();
        if i >= 100 {
            through.push(a);
            straight.push(b);
        }
    }
    let (t, s) = (median(through), median(straight));
    println!(
        "through the gateway {:.1} µs   direct {:.1} µs   overhead {:+.1} µs ({:.2}x)",
        ms(t) * 1e3,
        ms(s) * 1e3,
        (ms(t) - ms(s)) * 1e3,
        t.as_secs_f64() / s.as_secs_f64()
    );
    let _ = client.cancel().await;
    let _ = direct.cancel().await;

    println!("\n== search_tools round trip over stdio ({SEARCHES} queries)");
    let script = root().join("tests/fixtures/mcp/servers/fault_server.py");
    for n in [1_000, 10_000] {
        let corpus = synthetic::Corpus::generate(synthetic::CorpusSpec::tool_like(n));
        let tools: Vec<Value> = (0..n)
            .map(|i| {
                json!({"name": format!("tool_{i:05}"),
                       "description": corpus.doc_tokens(i).join(" "),
                       "inputSchema": {"type": "object"}})
            })
            .collect();
        let catalog = dir.join(format!("catalog-{n}.json"));
        std::fs::write(&catalog, json!({ "tools": tools }).to_string()).expect("catalog");
        let config = write_config(
            &dir,
            &format!("big-{n}.json"),
            json!({"big": {"command": "python3", "args": [script, "catalog"],
                            "env": {"CATALOG_FILE": catalog}}}),
        );
        let client = gateway(&config, "search").await;
        let mut samples = Vec::new();
        for (i, query) in corpus
            .queries
            .iter()
            .cycle()
            .take(SEARCHES + 20)
            .enumerate()
        {
            let start = Instant::now();
            let out = call(&client, "search_tools", json!({"query": query.join(" ")})).await;
            if i >= 20 {
                samples.push(start.elapsed());
            }
            assert_ne!(out.is_error, Some(true));
        }
        println!("{n:>6} tools  median {:.1} µs", ms(median(samples)) * 1e3);
        let _ = client.cancel().await;
    }
}
