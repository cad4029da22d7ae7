//! Loading the tools a command works on into a fresh store, with progress and timing on stderr.

use std::time::{Duration, Instant};

use capstore::Store;
use capstore::catalog::Catalog;
use capstore::context::SelectionPolicy;
use capstore::mcp::{McpToolList, import_server};

use super::args::SourceArgs;

/// A store filled from the command's sources, and the policy they ask for (pinned tools).
pub(crate) struct Loaded {
    pub(crate) store: Store,
    pub(crate) policy: SelectionPolicy,
    /// What was loaded, for the report's first line.
    pub(crate) label: String,
    pub(crate) elapsed: Duration,
}

/// Loads the sources of `args` in order: bundled catalog, catalog file, MCP lists. Each is one
/// transaction; an error names the file and the entry.
pub(crate) fn load(args: &SourceArgs) -> Result<Loaded, String> {
    let start = Instant::now();
    let store = Store::new();
    let mut policy = SelectionPolicy::default();
    let mut labels = Vec::new();
    if args.wants_bundled() {
        let catalog = Catalog::bundled().map_err(|e| format!("bundled catalog: {e}"))?;
        add_catalog(&store, &catalog, &mut policy, "bundled catalog")?;
        labels.push("bundled catalog".to_string());
    }
    if let Some(path) = &args.catalog {
        let shown = path.display().to_string();
        progress(&format!("loading {shown}"));
        let catalog = Catalog::from_path(path).map_err(|e| e.to_string())?;
        add_catalog(&store, &catalog, &mut policy, &shown)?;
        labels.push(shown);
    }
    for (server, path) in &args.mcp {
        let shown = path.display().to_string();
        progress(&format!("loading MCP server {server} from {shown}"));
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        let list = McpToolList::from_json(&text).map_err(|e| format!("{shown}: {e}"))?;
        let report = import_server(&store, server, &list).map_err(|e| format!("{shown}: {e}"))?;
        progress(&format!(
            "  {server}: {} tools imported",
            report.added.len() + report.changed.len() + report.unchanged
        ));
        labels.push(format!("MCP {server}"));
    }
    let elapsed = start.elapsed();
    let snap = store.snapshot();
    let tools = snap.count(&capstore::TOOLS).map_err(|e| e.to_string())?;
    let skills = snap.count(&capstore::SKILLS).map_err(|e| e.to_string())?;
    progress(&format!(
        "loaded {tools} tools, {skills} skills in {:.1} ms",
        elapsed.as_secs_f64() * 1e3
    ));
    Ok(Loaded {
        store,
        policy,
        label: labels.join(" + "),
        elapsed,
    })
}

fn add_catalog(
    store: &Store,
    catalog: &Catalog,
    policy: &mut SelectionPolicy,
    shown: &str,
) -> Result<(), String> {
    let report = catalog
        .load_into(store)
        .map_err(|e| format!("{shown}: {e}"))?;
    for pinned in report.pinned {
        if !policy.pinned_tools.contains(&pinned) {
            policy.pinned_tools.push(pinned);
        }
    }
    Ok(())
}

/// Progress goes to stderr, so that `--json` output on stdout stays clean.
pub(crate) fn progress(line: &str) {
    eprintln!("{line}");
}
