//! `capstore approve`: trust quarantined tool definitions of a gateway's configuration.

use capstore::gateway::{Quarantine, QuarantineReason, quarantine_path};

use super::args::{Args, SourceArgs, unknown};

/// The configuration, the tools and `--all` of an `approve` command line.
pub(crate) fn parse(args: &[String]) -> Result<(std::path::PathBuf, Vec<String>, bool), String> {
    let mut sources = SourceArgs::default();
    let mut tools = Vec::new();
    let mut all = false;
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        if sources.accept(arg, &mut it)? {
            continue;
        }
        match arg {
            "--all" => all = true,
            flag if flag.starts_with("--") => return Err(unknown("approve", flag)),
            tool => tools.push(tool.to_string()),
        }
    }
    let Some(config) = sources.mcp_config else {
        return Err("approve: give the gateway's configuration with --mcp-config FILE".into());
    };
    Ok((config, tools, all))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let (config, mut tools, all) = parse(args)?;
    let quarantine = Quarantine::open(quarantine_path(&config), false);
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
