//! Import two MCP servers' tool lists, re-import one after it changed, and select tools for a
//! message: `cargo run --example mcp_import`.

use std::error::Error;
use std::path::PathBuf;

use capstore::Store;
use capstore::context::{ContextBuilder, Turn};
use capstore::mcp::{ImportReport, McpToolList, import_server};
use capstore::provider::ToolExport;

/// One of the fixture lists the tests use: `tools/list` results as servers send them.
fn fixture(name: &str) -> Result<McpToolList, Box<dyn Error>> {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", "mcp", name]
        .iter()
        .collect();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(McpToolList::from_json(&text)?)
}

fn print_report(report: &ImportReport) {
    let version = report
        .version
        .map_or_else(|| "no commit".to_string(), |v| format!("version {v}"));
    println!(
        "{}: {} added, {} removed, {} changed, {} unchanged ({version})",
        report.server,
        report.added.len(),
        report.removed.len(),
        report.changed.len(),
        report.unchanged
    );
    for (label, keys) in [
        ("added", &report.added),
        ("removed", &report.removed),
        ("changed", &report.changed),
    ] {
        for key in keys {
            println!("  {label:<8} {key}");
        }
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let store = Store::new();

    println!("== first import");
    print_report(&import_server(&store, "github", &fixture("github.json")?)?);
    print_report(&import_server(&store, "web", &fixture("web.json")?)?);

    println!("\n== github sent notifications/tools/list_changed; re-import");
    print_report(&import_server(
        &store,
        "github",
        &fixture("github_changed.json")?,
    )?);

    let message = "search the web for the latest news about Rust, then open an issue";
    let snapshot = store.snapshot();
    let selection = ContextBuilder::new().select(&snapshot, &Turn::new(message))?;
    let export = ToolExport::for_snapshot(&snapshot)?;
    println!(
        "\n== selection for {message:?} (version {})",
        selection.version
    );
    for tool in selection.ranked() {
        let name = export.export_name(&tool.key).unwrap_or("?");
        println!(
            "  {:<28} sent as {name:<20} score {:.2}",
            tool.key, tool.score
        );
    }
    Ok(())
}
