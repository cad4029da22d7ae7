//! `capstore serve --mcp-config FILE`: the MCP gateway, over stdio (or Streamable HTTP on a
//! loopback address with `--http ADDR`).

use std::net::SocketAddr;

use capstore::gateway::{
    Clients, Gateway, GatewayOptions, HttpGuard, Mode, UsageSink, clients_path,
};
use capstore::sync::SyncOptions;
use capstore::trace::Tracing;

use super::args::{Args, SourceArgs, count, unknown};
use super::source::{self, progress};
use super::state;

/// A `serve` command line, parsed.
pub(crate) struct ServeArgs {
    sources: SourceArgs,
    options: GatewayOptions,
    http: Option<SocketAddr>,
    /// `--state`: the PostgreSQL whose change log shares the catalog and the audit.
    state_url: Option<String>,
    sync_options: SyncOptions,
    /// `--otlp-endpoint`: the OTLP/HTTP collector the calls' spans go to.
    otlp_endpoint: Option<String>,
}

/// Reads the flags; checks nothing outside the command line.
pub(crate) fn parse(args: &[String]) -> Result<ServeArgs, String> {
    let mut sources = SourceArgs::default();
    let mut options = GatewayOptions::default();
    let mut http: Option<SocketAddr> = None;
    let mut state_url: Option<String> = None;
    let mut sync_options = SyncOptions::default();
    let mut otlp_endpoint = None;
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
            "--allow-origin" => {
                let origin = it.value(arg)?;
                // Checked here, so that a typo stops the command before anything starts.
                HttpGuard::loopback(0)
                    .allow_origin(origin)
                    .map_err(|e| format!("--allow-origin: {e}"))?;
                options.allowed_origins.push(origin.to_string());
            }
            "--admin-token-file" => {
                let path = it.value(arg)?;
                let token = std::fs::read_to_string(path)
                    .map_err(|e| format!("--admin-token-file {path}: {e}"))?;
                // Checked when the listener starts (`GatewayOptions::admin_token`).
                options.admin_token = Some(token.trim().to_string());
            }
            "--audit-arguments" => options.audit_arguments = true,
            "--otlp-endpoint" => {
                let url = it.value(arg)?;
                // Checked here, so that a typo stops the command before anything starts.
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "--otlp-endpoint: `{url}` is not an http:// or https:// address \
                         (the collector's OTLP/HTTP base, like http://127.0.0.1:4318)"
                    ));
                }
                otlp_endpoint = Some(url.to_string());
            }
            "--pin" => options.pinned.push(it.value(arg)?.to_string()),
            "--max-results" => options.max_results = count(arg, it.value(arg)?, 1, 1_000)?,
            "--state" => state_url = Some(it.value(arg)?.to_string()),
            "--namespace" => {
                sync_options = sync_options
                    .with_namespace(it.value(arg)?)
                    .map_err(|e| format!("--namespace: {e}"))?;
            }
            other => return Err(unknown("serve", other)),
        }
    }
    if sources.mcp_config.is_none() {
        return Err("serve: give the servers to front with --mcp-config FILE".into());
    }
    if let Some(addr) = http
        && !addr.ip().is_loopback()
    {
        return Err(format!(
            "--http {addr}: the gateway binds to loopback addresses only (127.0.0.1, ::1)"
        ));
    }
    Ok(ServeArgs {
        sources,
        options,
        http,
        state_url,
        sync_options,
        otlp_endpoint,
    })
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let ServeArgs {
        sources,
        mut options,
        http,
        state_url,
        sync_options,
        otlp_endpoint,
    } = parse(args)?;
    // The calls' spans, to the collector given or the one OTEL_EXPORTER_OTLP_ENDPOINT names;
    // sent in batches from a thread of their own, and what is queued sent when serving ends.
    let tracing = match &otlp_endpoint {
        Some(url) => Some(Tracing::start(url)),
        None => Tracing::from_env().transpose(),
    }
    .transpose()
    .map_err(|e| format!("traces: {e}"))?;
    if let Some(tracing) = &tracing {
        progress(&format!("traces: spans exported to {}", tracing.endpoint()));
    }
    // With --state, the replica opens first: the live servers' tools are judged against the
    // trust state it shares, not the configuration's trust file.
    let mut replica = None;
    let prepared = match &state_url {
        Some(url) => {
            let runtime = source::runtime()?;
            let opened = state::open(url, sync_options.clone(), &runtime)?;
            let quarantine = opened
                .quarantine(sources.hold_new_tools)
                .map_err(|e| format!("--state: {e}"))?;
            replica = Some(opened);
            let state_args = format!(
                "--state {} --namespace {}",
                state::shown_url(url),
                sync_options.namespace
            );
            let mut tokens = capstore::sync::shared_tokens(url, &sync_options, None)
                .map_err(|e| format!("--state: {e}"))?
                .with_sign_in_args(state_args.clone());
            if let Some(config) = &sources.mcp_config {
                tokens = tokens.with_config(config);
            }
            Some(source::Prepared {
                runtime,
                quarantine,
                approve_hint: format!("capstore approve {state_args}"),
                tokens,
            })
        }
        None => None,
    };
    let loaded = source::load_with(&sources, prepared)?;
    let Some(live) = &loaded.live else {
        return Err("serve: no live servers".into());
    };
    options.approve_hint = live.approve_hint.clone();
    options.policy = loaded.policy.clone();
    // With --state, the clients the gateways share (`capstore clients --state`).
    let shared_clients = replica.as_ref().map(capstore::sync::Replica::clients);
    // Kept alive while the gateway serves: the replica, its mirror and the audit.
    let shared = match (replica, &state_url) {
        (Some(replica), Some(url)) => Some(state::share(
            replica,
            url,
            sync_options,
            &loaded.store,
            &live.runtime,
        )?),
        _ => None,
    };
    options.events = shared.as_ref().map(|s| s.events.clone());
    options.replica = shared.as_ref().map(state::SharedState::replica_probe);
    // Usage, learned from each session's turns: in the shared log with --state, else in a
    // file beside the configuration.
    options.usage_sink = match (&shared, &sources.mcp_config) {
        (Some(shared), _) => Some(shared.usage_sink()),
        (None, Some(config)) => Some(usage_file(&loaded.store, config, sources.usage.as_deref())?),
        (None, None) => None,
    };
    // Over HTTP, the clients (`capstore clients`): shared through PostgreSQL with --state, else
    // beside the configuration. With any, every MCP request must carry one's token.
    if http.is_some() {
        options.clients = clients_of(shared_clients, sources.mcp_config.as_deref())?;
        if let Some(clients) = &options.clients
            && !clients.is_empty()
        {
            progress(&format!(
                "{} client(s) in {}: MCP requests need a client's token",
                clients.list().len(),
                clients.place()
            ));
        }
    }
    // The hub's trust state (the file, or the shared one): the hub keeps held tools out of the
    // store, the gateway answers for them.
    let quarantine = live.quarantine.clone();
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
    // The sessions have ended (their last turns queued): what the queue holds goes now.
    if let Some(shared) = &shared {
        shared.flush_usage(&live.runtime);
    }
    if let Some(Err(e)) = tracing.map(Tracing::shutdown) {
        progress(&format!("traces: {e}"));
    }
    served.map_err(|e| format!("serve: {e}"))
}

/// The clients of a gateway over HTTP: `shared` (with --state), or those beside `config`. A
/// clients file that holds clients while the state is shared is an error rather than ignored:
/// its clients would silently lose their access.
fn clients_of(
    shared: Option<Clients>,
    config: Option<&std::path::Path>,
) -> Result<Option<Clients>, String> {
    let file = match config {
        Some(config) => {
            Some(Clients::open(clients_path(config)).map_err(|e| format!("serve: {e}"))?)
        }
        None => None,
    };
    match (shared, file) {
        (Some(_), Some(file)) if !file.is_empty() => Err(format!(
            "serve: with --state the gateways' clients are kept in PostgreSQL, but {} holds \
             some: add them again with `capstore clients add NAME --state URL`, then remove the \
             file",
            file.place()
        )),
        (Some(shared), _) => Ok(Some(shared)),
        (None, file) => Ok(file),
    }
}

/// The usage kept in a file (`--usage FILE`, already read with the tools, or `config`'s usage
/// file, read into `store` now when it is there), and a sink that counts each finished turn
/// into `store` and writes the file again.
fn usage_file(
    store: &capstore::Store,
    config: &std::path::Path,
    given: Option<&std::path::Path>,
) -> Result<UsageSink, String> {
    let path = given.map_or_else(|| capstore::usage::usage_path(config), ToOwned::to_owned);
    if given.is_none() && path.exists() {
        let read = capstore::usage::load_file(store, &path).map_err(|e| e.to_string())?;
        progress(&format!(
            "usage: {} tools' rows from {} ({} of tools not here now)",
            read.rows,
            path.display(),
            read.skipped
        ));
    }
    let store = store.clone();
    Ok(UsageSink::new(move |turn| {
        let learned = store.write(|tx| capstore::usage::learn(tx, &turn));
        let saved = learned.map_err(|e| e.to_string()).and_then(|_| {
            capstore::usage::save_file(&store.snapshot(), &path).map_err(|e| e.to_string())
        });
        // The gateway goes on serving; the next turn writes the file again.
        if let Err(e) = saved {
            progress(&format!("usage: not saved: {e}"));
        }
    }))
}
