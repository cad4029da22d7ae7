//! `capstore auth SERVER --mcp-config FILE [--state URL]`: signs in to an MCP server that
//! requires OAuth 2.1 (`"oauth"` in its entry), once; `capstore serve` then uses and refreshes
//! the token (`capstore::mcp::live::oauth`: the token file beside the configuration, or with
//! `--state` the tokens every gateway of `serve --state URL` shares, `capstore::sync::shared_tokens`).

use std::time::Duration;

use capstore::mcp::McpConfig;
use capstore::mcp::live::oauth::{SignIn, TokenStores, tokens_path};

use capstore::sync::{SyncOptions, shared_tokens};

use super::args::{Args, unknown};

/// How long the sign-in waits for the redirect by default: time for a person to log in.
const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// An `auth` command line, parsed.
pub(crate) struct AuthArgs {
    server: String,
    config: std::path::PathBuf,
    port: u16,
    wait: Duration,
    /// `--state URL [--namespace NS]`: the tokens shared through PostgreSQL.
    state: Option<(String, SyncOptions)>,
}

/// `auth SERVER --mcp-config FILE [--port N] [--wait SECONDS] [--state URL [--namespace NS]]`.
pub(crate) fn parse(args: &[String]) -> Result<AuthArgs, String> {
    let (mut server, mut config, mut port, mut wait) = (None, None, 0u16, DEFAULT_WAIT);
    let (mut state_url, mut namespace) = (None, None);
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        match arg {
            "--mcp-config" => config = Some(std::path::PathBuf::from(it.value(arg)?)),
            "--port" => {
                port = it
                    .value(arg)?
                    .parse()
                    .map_err(|_| "--port: expected a port number (0 to 65535)".to_string())?;
            }
            "--wait" => {
                let seconds: u64 = it
                    .value(arg)?
                    .parse()
                    .ok()
                    .filter(|s| (1..=86_400).contains(s))
                    .ok_or("--wait: expected whole seconds, 1 to 86400")?;
                wait = Duration::from_secs(seconds);
            }
            "--state" => state_url = Some(it.value(arg)?.to_string()),
            "--namespace" => namespace = Some(it.value(arg)?.to_string()),
            flag if flag.starts_with("--") => return Err(unknown("auth", flag)),
            word if server.is_none() => server = Some(word.to_string()),
            word => return Err(format!("auth: one server at a time, not also `{word}`")),
        }
    }
    let state = match (state_url, namespace) {
        (Some(url), namespace) => {
            let mut options = SyncOptions::default();
            if let Some(namespace) = namespace {
                options = options
                    .with_namespace(&namespace)
                    .map_err(|e| format!("--namespace: {e}"))?;
            }
            Some((url, options))
        }
        (None, Some(_)) => return Err("--namespace: only with --state URL".into()),
        (None, None) => None,
    };
    Ok(AuthArgs {
        state,
        server: server
            .ok_or("auth: name the server to sign in to: auth SERVER --mcp-config FILE")?,
        config: config.ok_or("auth: give the configuration with --mcp-config FILE")?,
        port,
        wait,
    })
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let AuthArgs {
        server,
        config,
        port,
        wait,
        state,
    } = parse(args)?;
    let parsed = McpConfig::from_path(&config).map_err(|e| e.to_string())?;
    let entry = parsed
        .server(&server)
        .ok_or_else(|| format!("auth: {} names no server `{server}`", config.display()))?;
    let (stores, kept) = match &state {
        Some((url, options)) => (
            shared_tokens(url, options, Some(config.clone()))
                .map_err(|e| format!("--state: {e}"))?,
            format!(
                "in the shared state at {} (namespace {}), for every gateway of `serve --state`",
                super::state::shown_url(url),
                options.namespace
            ),
        ),
        None => (
            TokenStores::beside(&config),
            format!("in {} (mode 0600)", tokens_path(&config).display()),
        ),
    };
    let runtime = super::source::runtime()?;
    runtime.block_on(async {
        let sign_in = SignIn::start(entry, &stores, port)
            .await
            .map_err(|e| e.to_string())?;
        // The address is for the person signing in: on stdout, alone on its line, and said
        // on stderr too so that it is seen when stdout is piped.
        eprintln!(
            "open this address in a browser to sign in to `{server}` (waiting up to {} s for the redirect to {}):",
            wait.as_secs(),
            sign_in.redirect_uri()
        );
        println!("{}", sign_in.url());
        let _ = std::io::Write::flush(&mut std::io::stdout());
        sign_in.finish(wait).await.map_err(|e| e.to_string())
    })?;
    eprintln!(
        "signed in to `{server}`; the token is kept {kept}, and `capstore serve` uses and refreshes it"
    );
    Ok(())
}
