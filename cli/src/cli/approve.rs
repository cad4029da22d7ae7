//! `capstore approve`: trust quarantined tool definitions of a gateway's configuration (its
//! trust file), or of every gateway sharing a catalog through PostgreSQL (`--state URL`).

use capstore::gateway::{Quarantine, QuarantineReason, quarantine_path};
use capstore::sync::SyncOptions;

use super::args::{Args, SourceArgs, unknown};

/// An `approve` command line, parsed.
pub(crate) struct ApproveArgs {
    /// The gateway's configuration, whose trust file is edited (without `--state`).
    config: Option<std::path::PathBuf>,
    /// `--state`: the PostgreSQL whose shared trust state is edited instead.
    state_url: Option<String>,
    sync_options: SyncOptions,
    tools: Vec<String>,
    all: bool,
}

/// The trust state, the tools and `--all` of an `approve` command line.
pub(crate) fn parse(args: &[String]) -> Result<ApproveArgs, String> {
    let mut sources = SourceArgs::default();
    let mut tools = Vec::new();
    let mut all = false;
    let mut state_url = None;
    let mut namespace = None;
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        if sources.accept(arg, &mut it)? {
            continue;
        }
        match arg {
            "--all" => all = true,
            "--state" => state_url = Some(it.value(arg)?.to_string()),
            "--namespace" => namespace = Some(it.value(arg)?.to_string()),
            flag if flag.starts_with("--") => return Err(unknown("approve", flag)),
            tool => tools.push(tool.to_string()),
        }
    }
    let mut sync_options = SyncOptions::default();
    if let Some(namespace) = &namespace {
        if state_url.is_none() {
            return Err("--namespace: only with --state URL".into());
        }
        sync_options = sync_options
            .with_namespace(namespace)
            .map_err(|e| format!("--namespace: {e}"))?;
    }
    if sources.mcp_config.is_none() && state_url.is_none() {
        return Err(
            "approve: give the gateway's configuration with --mcp-config FILE, or the shared \
             state of `serve --state` with --state URL"
                .into(),
        );
    }
    Ok(ApproveArgs {
        config: sources.mcp_config,
        state_url,
        sync_options,
        tools,
        all,
    })
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let ApproveArgs {
        config,
        state_url,
        sync_options,
        mut tools,
        all,
    } = parse(args)?;
    // With --state the shared trust state, as the gateways of `serve --state` keep it; the
    // same quarantine API either way.
    let quarantine = match (&state_url, &config) {
        (Some(url), _) => capstore::sync::shared_quarantine(url, &sync_options, false)
            .map_err(|e| format!("--state: {e}"))?,
        (None, Some(config)) => Quarantine::open(quarantine_path(config), false),
        (None, None) => return Err("approve: no trust state given".into()),
    };
    let pending = quarantine.pending().map_err(|e| e.to_string())?;
    if all {
        tools = pending.iter().map(|(key, _)| key.clone()).collect();
    }
    if tools.is_empty() {
        if pending.is_empty() {
            say!("nothing is quarantined");
        }
        for (key, reason) in &pending {
            let why = match reason {
                QuarantineReason::Changed => "definition changed since approved",
                QuarantineReason::New => "new tool of a known server",
            };
            say!("{key:<40} {why}");
        }
        return Ok(());
    }
    for tool in &tools {
        if quarantine.approve(tool).map_err(|e| e.to_string())? {
            say!("approved {tool}");
        } else {
            return Err(format!("approve: `{tool}` is not quarantined"));
        }
    }
    Ok(())
}
