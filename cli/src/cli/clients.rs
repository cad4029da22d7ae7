//! `capstore clients`: the clients of a gateway served over HTTP, each with its own token and
//! scope: kept hashed beside the configuration (`capstore::gateway::Clients`), or shared by
//! every gateway of `serve --state URL` through PostgreSQL (`capstore::sync::add_client`).

use capstore::gateway::{ClientRecord, Clients, Scope, clients_path};
use capstore::sync::SyncOptions;

use super::args::{Args, SourceArgs, unknown};
use super::{source, state};

/// A `clients` command line, parsed.
pub(crate) struct ClientsArgs {
    place: Place,
    action: Action,
}

/// Where the clients are kept.
enum Place {
    /// Beside the gateway's configuration.
    File(std::path::PathBuf),
    /// In the PostgreSQL of `serve --state URL`.
    State { url: String, options: SyncOptions },
}

enum Action {
    List,
    Add { name: String, scope: Scope },
    Revoke { name: String },
}

/// `clients [list] | add NAME [--server S]... [--tool PATTERN]... [--deny-tag TAG]... |
/// revoke NAME`, each with `--mcp-config FILE` or `--state URL [--namespace NS]`.
pub(crate) fn parse(args: &[String]) -> Result<ClientsArgs, String> {
    let mut sources = SourceArgs::default();
    let mut words: Vec<String> = Vec::new();
    let mut scope = Scope::default();
    let (mut state_url, mut namespace) = (None, None);
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        if sources.accept(arg, &mut it)? {
            continue;
        }
        match arg {
            "--server" => scope.servers.push(it.value(arg)?.to_string()),
            "--tool" => scope.tools.push(it.value(arg)?.to_string()),
            "--deny-tag" => scope.deny_tags.push(it.value(arg)?.to_string()),
            "--state" => state_url = Some(it.value(arg)?.to_string()),
            "--namespace" => namespace = Some(it.value(arg)?.to_string()),
            flag if flag.starts_with("--") => return Err(unknown("clients", flag)),
            word => words.push(word.to_string()),
        }
    }
    let place = match (state_url, sources.mcp_config, namespace) {
        (Some(_), Some(_), _) => {
            return Err(
                "clients: --state or --mcp-config, not both (with --state the gateways read \
                 their clients from PostgreSQL only)"
                    .into(),
            );
        }
        (Some(url), None, namespace) => {
            let mut options = SyncOptions::default();
            if let Some(namespace) = namespace {
                options = options
                    .with_namespace(&namespace)
                    .map_err(|e| format!("--namespace: {e}"))?;
            }
            Place::State { url, options }
        }
        (None, _, Some(_)) => return Err("--namespace: only with --state URL".into()),
        (None, Some(config), None) => Place::File(config),
        (None, None, None) => {
            return Err(
                "clients: give the gateway's configuration with --mcp-config FILE, or the \
                 shared state of `serve --state` with --state URL"
                    .into(),
            );
        }
    };
    let scoped = scope != Scope::default();
    let action = match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] | ["list"] => Action::List,
        ["add", name] => Action::Add {
            name: name.to_string(),
            scope,
        },
        ["revoke", name] => Action::Revoke {
            name: name.to_string(),
        },
        _ => {
            return Err(format!(
                "clients: expected `list`, `add NAME` or `revoke NAME`, not `{}`",
                words.join(" ")
            ));
        }
    };
    if scoped && !matches!(action, Action::Add { .. }) {
        return Err("clients: --server, --tool and --deny-tag go with `add NAME`".into());
    }
    Ok(ClientsArgs { place, action })
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let ClientsArgs { place, action } = parse(args)?;
    let done = match place {
        Place::File(config) => in_file(&config, action)?,
        Place::State { url, options } => {
            let runtime = source::runtime()?;
            runtime
                .block_on(in_state(&url, &options, action))
                .map_err(|e| format!("clients: --state: {e}"))?
        }
    };
    match done {
        Done::Listed(list) => {
            if list.is_empty() {
                say!("no clients: `capstore serve --http` asks no token");
            }
            for client in list {
                say!("{:<24} {}", client.name, client.scope);
            }
        }
        Done::Added {
            name,
            scope,
            token,
            place,
        } => {
            // The token on stdout alone (for a pipe into a secret store); what it is, on stderr.
            eprintln!("client `{name}` ({scope}) added to {place}; its token, shown this once:");
            say!("{token}");
        }
        Done::Revoked { name, whom } => {
            say!("revoked {name}: its token is refused from {whom}");
        }
    }
    Ok(())
}

/// What a `clients` command did, to say.
enum Done {
    Listed(Vec<ClientRecord>),
    Added {
        name: String,
        scope: Scope,
        token: String,
        place: String,
    },
    Revoked {
        name: String,
        whom: &'static str,
    },
}

/// The action on the clients file beside `config`.
fn in_file(config: &std::path::Path, action: Action) -> Result<Done, String> {
    let path = clients_path(config);
    let clients = Clients::open(&path).map_err(|e| e.to_string())?;
    Ok(match action {
        Action::List => Done::Listed(clients.list()),
        Action::Add { name, scope } => {
            let token = clients
                .add(&name, scope.clone())
                .map_err(|e| e.to_string())?;
            let place = path.display().to_string();
            Done::Added {
                name,
                scope,
                token,
                place,
            }
        }
        Action::Revoke { name } => {
            clients.revoke(&name).map_err(|e| e.to_string())?;
            Done::Revoked {
                name,
                whom: "the gateway's next request",
            }
        }
    })
}

/// The action on the clients shared through PostgreSQL at `url`.
async fn in_state(
    url: &str,
    options: &SyncOptions,
    action: Action,
) -> Result<Done, capstore::sync::SyncError> {
    Ok(match action {
        Action::List => Done::Listed(capstore::sync::list_clients(url, options).await?),
        Action::Add { name, scope } => {
            let (token, _) = capstore::sync::add_client(url, options, &name, scope.clone()).await?;
            let place = format!(
                "the shared state at {} (namespace {})",
                state::shown_url(url),
                options.namespace
            );
            Done::Added {
                name,
                scope,
                token,
                place,
            }
        }
        Action::Revoke { name } => {
            capstore::sync::revoke_client(url, options, &name).await?;
            Done::Revoked {
                name,
                whom: "every gateway of the shared state as soon as it applies the change",
            }
        }
    })
}
