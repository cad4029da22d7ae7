//! `capstore serve --mcp-config FILE`: the MCP gateway, over stdio (or Streamable HTTP on a
//! loopback address with `--http ADDR`).

use std::net::SocketAddr;

use capstore::gateway::{Gateway, GatewayOptions, Mode, Quarantine, quarantine_path};

use super::args::{Args, SourceArgs, number, unknown};
use super::source::{self, progress};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let mut sources = SourceArgs::default();
    let mut options = GatewayOptions::default();
    let mut http: Option<SocketAddr> = None;
    let mut quarantine = true;
    let mut hold_new = false;
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        if sources.accept(arg, &mut it)? {
            continue;
        }
        match arg {
            "--mode" => {
                options.mode = match it.value(arg)? {
                    "search" => Mode::Search,
                    "all" => Mode::All,
                    other => return Err(format!("--mode: `{other}` is not search or all")),
                }
            }
            "--http" => {
                let value = it.value(arg)?;
                http = Some(value.parse().map_err(|_| {
                    format!("--http: `{value}` is not an address like 127.0.0.1:8808")
                })?);
            }
            "--pin" => options.pinned.push(it.value(arg)?.to_string()),
            "--max-results" => options.max_results = number(arg, it.value(arg)?)?,
            "--hold-new-tools" => hold_new = true,
            "--no-quarantine" => quarantine = false,
            other => return Err(unknown("serve", other)),
        }
    }
    let Some(config) = sources.mcp_config.clone() else {
        return Err("serve: give the servers to front with --mcp-config FILE".into());
    };
    if options.max_results == 0 {
        return Err("--max-results: give at least 1".into());
    }
    if let Some(addr) = http
        && !addr.ip().is_loopback()
    {
        return Err(format!(
            "--http {addr}: the gateway binds to loopback addresses only (127.0.0.1, ::1)"
        ));
    }
    let loaded = source::load(&sources)?;
    let Some(live) = &loaded.live else {
        return Err("serve: no live servers".into());
    };
    options.policy = loaded.policy.clone();
    options.approve_hint = format!("capstore approve --mcp-config {}", config.display());
    let quarantine = quarantine.then(|| Quarantine::open(quarantine_path(&config), hold_new));
    let gateway = Gateway::new(loaded.store.clone(), quarantine, options);
    let served = live.runtime.block_on(async {
        gateway.follow(&live.hub);
        match http {
            Some(addr) => {
                let http = gateway.bind_http(addr).await?;
                progress(&format!("serving MCP at {}", http.mcp_url()));
                // The page's token is in this line: stderr, never stdout or a log file.
                progress(&format!("admin page at {}", http.page_url()));
                http.serve().await
            }
            None => {
                progress("serving MCP on stdio");
                gateway.serve_stdio().await
            }
        }
    });
    served.map_err(|e| format!("serve: {e}"))
}
