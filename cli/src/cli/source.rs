//! Loading the tools a command works on into a fresh store, with progress and timing on stderr.

use std::path::Path;
use std::time::{Duration, Instant};

use capstore::catalog::{Catalog, LoadReport};
use capstore::context::SelectionPolicy;
use capstore::mcp::live::oauth::TokenStores;
use capstore::mcp::live::{McpHub, Quarantine, quarantine_path};
use capstore::mcp::{McpConfig, McpToolList, import_server};
use capstore::provider::ToolExport;
use capstore::{Snapshot, Store, TOOLS};

use super::args::SourceArgs;

/// A store filled from the command's sources, and the policy they ask for (pinned tools).
pub(crate) struct Loaded {
    pub(crate) store: Store,
    pub(crate) policy: SelectionPolicy,
    /// What was loaded, for the report's first line.
    pub(crate) label: String,
    pub(crate) elapsed: Duration,
    /// The live servers of `--mcp-config`, connected until this is dropped.
    pub(crate) live: Option<Live>,
}

/// Connected MCP servers and the runtime they run on. Dropping it stops them.
pub(crate) struct Live {
    pub(crate) runtime: tokio::runtime::Runtime,
    pub(crate) hub: McpHub,
    /// The trust state the hub checks tools against: the trust file, or the state shared
    /// through PostgreSQL with `serve --state` (`None` with `--no-quarantine`).
    pub(crate) quarantine: Option<Quarantine>,
    /// How a person approves a held tool, for messages (`capstore approve ...`).
    pub(crate) approve_hint: String,
}

impl Live {
    /// The error for `tool` when the quarantine holds it back: why, and how to approve it.
    pub(crate) fn held_error(&self, command: &str, tool: &str, config: &Path) -> Option<String> {
        let held = self.hub.held().into_iter().find(|held| held.key == tool)?;
        Some(format!(
            "{command}: `{tool}` is quarantined: {}. A person can approve it with \
             `capstore approve {tool} --mcp-config {}`",
            held.why,
            config.display()
        ))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // Close every server (and what it started) before the command exits.
        self.runtime.block_on(self.hub.shutdown());
    }
}

/// What `serve --state` sets up before the live servers connect: the runtime they (and the
/// replica) run on, and the quarantine shared through PostgreSQL that replaces the trust file.
pub(crate) struct Prepared {
    pub(crate) runtime: tokio::runtime::Runtime,
    /// The shared trust state (left unused with `--no-quarantine`).
    pub(crate) quarantine: Quarantine,
    /// How a person approves a held tool, for messages (`capstore approve --state ...`).
    pub(crate) approve_hint: String,
    /// The OAuth servers' tokens shared through PostgreSQL (`capstore auth --state`).
    pub(crate) tokens: TokenStores,
}

/// The runtime live servers run on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Loads the sources of `args` in order: bundled catalog, catalog file, MCP lists, live MCP
/// servers. Each is one transaction; an error names the file and the entry. A live server
/// that cannot start or answer does not stop the command: it is named on stderr, and the
/// command goes on with the others.
pub(crate) fn load(args: &SourceArgs) -> Result<Loaded, String> {
    load_with(args, None)
}

/// [`load`], the live servers connected on `prepared`'s runtime and checked against its
/// quarantine when given.
pub(crate) fn load_with(args: &SourceArgs, prepared: Option<Prepared>) -> Result<Loaded, String> {
    let start = Instant::now();
    let store = Store::new();
    let mut policy = SelectionPolicy::default();
    let mut labels = Vec::new();
    if args.wants_bundled() {
        let catalog = Catalog::bundled().map_err(|e| format!("bundled catalog: {e}"))?;
        let report = catalog
            .move_into(&store)
            .map_err(|e| format!("bundled catalog: {e}"))?;
        pin(&mut policy, report);
        labels.push("bundled catalog".to_string());
    }
    if let Some(path) = &args.catalog {
        let shown = path.display().to_string();
        progress(&format!("loading {shown}"));
        // Errors name the file.
        let report = Catalog::load_file(path, &store).map_err(|e| e.to_string())?;
        pin(&mut policy, report);
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
    let live = match &args.mcp_config {
        Some(path) => Some(connect(&store, path, args, &mut labels, prepared)?),
        None => None,
    };
    if let Some(path) = &args.usage {
        let read = capstore::usage::load_file(&store, path).map_err(|e| e.to_string())?;
        progress(&format!(
            "usage: {} tools' rows from {} ({} of tools not loaded here skipped)",
            read.rows,
            path.display(),
            read.skipped
        ));
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
        live,
    })
}

/// Connects to the servers of the configuration at `path` (only the one that owns
/// `args.only_server_of`'s tool, when it names one) and imports their tools, checked against
/// the configuration's trust file (or `prepared`'s shared quarantine) unless `--no-quarantine`.
fn connect(
    store: &Store,
    path: &Path,
    args: &SourceArgs,
    labels: &mut Vec<String>,
    prepared: Option<Prepared>,
) -> Result<Live, String> {
    let mut config = McpConfig::from_path(path).map_err(|e| format!("--mcp-config: {e}"))?;
    if config.servers.is_empty() {
        return Err(format!(
            "--mcp-config: {} names no server to connect to",
            path.display()
        ));
    }
    // `capstore call server/tool`: start that server alone, not every server of the file.
    if let Some(tool) = &args.only_server_of
        && let Some((server, _)) = tool.split_once('/')
        && config.servers.iter().any(|s| s.name == server)
    {
        config.servers.retain(|s| s.name == server);
    }
    let mut options = args.live.clone();
    // Servers with "oauth": their tokens shared through PostgreSQL (with --state), or in the
    // file beside the configuration (`capstore auth`).
    let (runtime, quarantine, approve_hint, tokens) = match prepared {
        Some(prepared) => (
            prepared.runtime,
            (!args.no_quarantine).then_some(prepared.quarantine),
            prepared.approve_hint,
            prepared.tokens,
        ),
        None => (
            runtime()?,
            (!args.no_quarantine)
                .then(|| Quarantine::open(quarantine_path(path), args.hold_new_tools)),
            format!("capstore approve --mcp-config {}", path.display()),
            TokenStores::beside(path),
        ),
    };
    if let Some(quarantine) = &quarantine {
        // Fails closed either way (every live tool held back); said once here, at start.
        if let Err(error) = quarantine.verify() {
            progress(&format!("capstore: {error}"));
        }
    }
    options.quarantine = quarantine.clone();
    options.tokens = Some(tokens);
    progress(&format!(
        "connecting to {} MCP server(s) of {}",
        config.servers.len(),
        path.display()
    ));
    let hub = runtime.block_on(McpHub::connect(store, &config, options));
    for startup in hub.startup() {
        let ms = startup.elapsed.as_secs_f64() * 1e3;
        match &startup.result {
            Ok(report) => {
                let tools = report.added.len() + report.changed.len() + report.unchanged;
                progress(&format!(
                    "  {}: {tools} tools in {ms:.0} ms",
                    startup.server
                ));
                labels.push(format!("MCP {}", startup.server));
            }
            Err(error) => progress(&format!("  {error} (going on without it)")),
        }
    }
    for status in hub.status() {
        for dropped in &status.dropped {
            progress(&format!("  {dropped}"));
        }
    }
    let held = hub.held();
    if !held.is_empty() {
        let names: Vec<&str> = held.iter().map(|h| h.key.as_str()).collect();
        progress(&format!(
            "  quarantined, not offered or run until approved ({approve_hint}): {}",
            names.join(", ")
        ));
    }
    Ok(Live {
        runtime,
        hub,
        quarantine,
        approve_hint,
    })
}

/// The qualified name of the tool `name` names: a qualified name as it is, or an exported
/// name resolved back. The error suggests tools of that bare name.
pub(crate) fn resolve_tool(snap: &Snapshot, command: &str, name: &str) -> Result<String, String> {
    if snap.contains(&TOOLS, name).map_err(|e| e.to_string())? {
        return Ok(name.to_owned());
    }
    let export = ToolExport::for_snapshot(snap).map_err(|e| e.to_string())?;
    if let Some(key) = export.resolve(name) {
        return Ok(key.to_owned());
    }
    let same_name: Vec<String> = snap
        .by_index(&TOOLS, "name", name)
        .map_err(|e| e.to_string())?
        .map(|(key, _)| key.to_string())
        .collect();
    Err(if same_name.is_empty() {
        format!("{command}: no tool `{name}` (qualified `source/name`, or an exported name)")
    } else {
        format!(
            "{command}: no tool `{name}`; did you mean {}?",
            same_name.join(" or ")
        )
    })
}

/// Adds a loaded catalog's pinned tools to `policy`'s, each once.
fn pin(policy: &mut SelectionPolicy, report: LoadReport) {
    for pinned in report.pinned {
        if !policy.pinned_tools.contains(&pinned) {
            policy.pinned_tools.push(pinned);
        }
    }
}

/// Progress goes to stderr, so that `--json` output on stdout stays clean.
pub(crate) fn progress(line: &str) {
    eprintln!("{line}");
}
