//! `capstore clients`: the clients of a gateway served over HTTP, each with its own token and
//! scope (`capstore::gateway::Clients`, kept hashed beside the configuration).

use capstore::gateway::{Clients, Scope, clients_path};

use super::args::{Args, SourceArgs, unknown};

/// A `clients` command line, parsed.
pub(crate) struct ClientsArgs {
    config: std::path::PathBuf,
    action: Action,
}

enum Action {
    List,
    Add { name: String, scope: Scope },
    Revoke { name: String },
}

/// `clients [list] | add NAME [--server S]... [--tool PATTERN]... [--deny-tag TAG]... |
/// revoke NAME`, each with `--mcp-config FILE`.
pub(crate) fn parse(args: &[String]) -> Result<ClientsArgs, String> {
    let mut sources = SourceArgs::default();
    let mut words: Vec<String> = Vec::new();
    let mut scope = Scope::default();
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        if sources.accept(arg, &mut it)? {
            continue;
        }
        match arg {
            "--server" => scope.servers.push(it.value(arg)?.to_string()),
            "--tool" => scope.tools.push(it.value(arg)?.to_string()),
            "--deny-tag" => scope.deny_tags.push(it.value(arg)?.to_string()),
            flag if flag.starts_with("--") => return Err(unknown("clients", flag)),
            word => words.push(word.to_string()),
        }
    }
    let config = sources
        .mcp_config
        .ok_or("clients: give the gateway's configuration with --mcp-config FILE")?;
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
    Ok(ClientsArgs { config, action })
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let ClientsArgs { config, action } = parse(args)?;
    let path = clients_path(&config);
    let clients = Clients::open(&path).map_err(|e| e.to_string())?;
    match action {
        Action::List => {
            let list = clients.list();
            if list.is_empty() {
                say!("no clients: `capstore serve --http` asks no token");
            }
            for client in list {
                say!("{:<24} {}", client.name, client.scope);
            }
        }
        Action::Add { name, scope } => {
            let token = clients
                .add(&name, scope.clone())
                .map_err(|e| e.to_string())?;
            // The token on stdout alone (for a pipe into a secret store); what it is, on stderr.
            eprintln!(
                "client `{name}` ({scope}) added to {}; its token, shown this once:",
                path.display()
            );
            say!("{token}");
        }
        Action::Revoke { name } => {
            clients.revoke(&name).map_err(|e| e.to_string())?;
            say!("revoked {name}: its token is refused from the gateway's next request");
        }
    }
    Ok(())
}
