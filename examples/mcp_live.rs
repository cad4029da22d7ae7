//! Live MCP servers: connect to the servers of an `mcpServers` configuration, select tools for
//! a message over all of them, run one through the executor, watch for list changes.
//!
//! ```sh
//! bash scripts/test-deps.sh      # the servers of the default configuration, pinned
//! cargo run --release --example mcp_live
//! cargo run --release --example mcp_live -- ~/.cursor/mcp.json "find open issues about the crash"
//! ```
//!
//! The default configuration, `tests/fixtures/mcp/live.mcp.json`, names the reference
//! filesystem, everything and time servers (and one that cannot start, to show what a failure
//! looks like).

use std::time::Duration;

use capstore::context::{ContextBuilder, Turn};
use capstore::mcp::McpConfig;
use capstore::mcp::live::{CallError, LiveOptions, McpHub};
use capstore::{ExecError, Executor, Store, ToolCall};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "tests/fixtures/mcp/live.mcp.json".into());
    let message = args
        .next()
        .unwrap_or_else(|| "what time is it in Tokyo right now?".into());
    let config = McpConfig::from_path(&path)?;

    // 1. Connect to every server at once; each one's failure is its own.
    let store = Store::new();
    let options = LiveOptions {
        call_timeout: Duration::from_secs(20),
        ..LiveOptions::default()
    };
    let hub = McpHub::connect(&store, &config, options).await;
    for startup in hub.startup() {
        match &startup.result {
            Ok(report) => println!(
                "{:<12} {:>3} tools, selectable after {:>5.0} ms",
                startup.server,
                report.added.len(),
                startup.elapsed.as_secs_f64() * 1e3
            ),
            Err(error) => println!("{:<12} failed: {error}", startup.server),
        }
    }
    if hub.startup().iter().all(|s| s.result.is_err()) {
        println!(
            "\nNo server could be reached. For the default configuration, run `bash scripts/test-deps.sh` first."
        );
        return Ok(());
    }

    // 2. Select over all their tools, as for any other tools in the store.
    let selection =
        ContextBuilder::new().select(&store.snapshot(), &Turn::new(message.as_str()))?;
    println!("\n{message:?} selects:");
    for tool in &selection.tools {
        println!("  {:<36} score {:.2}", tool.key, tool.score);
    }

    // 3. Run a tool: the executor forwards tools/call to the right server.
    let offered: Vec<String> = selection.keys().map(str::to_string).collect();
    let executor = Executor::new(store.clone());
    if offered.iter().any(|key| key == "time/get_current_time") {
        let call = ToolCall::new(
            "1",
            "time/get_current_time",
            json!({"timezone": "Asia/Tokyo"}),
        );
        let output = executor.execute(call, &offered).await?;
        println!(
            "\ntime/get_current_time -> {}",
            output.output["content"][0]["text"]
        );
    }
    // A server's failure is a typed error naming it.
    if store
        .snapshot()
        .contains(&capstore::TOOLS, "files/read_text_file")?
    {
        let call = ToolCall::new(
            "2",
            "files/read_text_file",
            json!({"path": "/etc/hostname"}),
        );
        match executor.execute(call, &[]).await {
            Err(ExecError::Handler { error, .. }) => match error.downcast_ref::<CallError>() {
                Some(CallError::Tool { server, text, .. }) => {
                    println!("\n{server} refused: {text}")
                }
                other => println!("\nfailed: {other:?}"),
            },
            other => println!("\n{other:?}"),
        }
    }

    // 4. Status, then close every server (and what they started).
    println!();
    for status in hub.status() {
        println!(
            "{:<12} {:?}, {} tools, {}",
            status.name,
            status.state,
            status.tools,
            status.server_info.as_deref().unwrap_or("-")
        );
    }
    hub.shutdown().await;
    Ok(())
}
