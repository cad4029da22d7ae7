//! A few helpers for hand-parsed flags.

use std::path::PathBuf;

/// The arguments of one command, consumed in order.
pub(crate) struct Args<'a> {
    rest: std::slice::Iter<'a, String>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(args: &'a [String]) -> Self {
        Args { rest: args.iter() }
    }

    pub(crate) fn next(&mut self) -> Option<&'a str> {
        self.rest.next().map(String::as_str)
    }

    /// The value that must follow `flag`.
    pub(crate) fn value(&mut self, flag: &str) -> Result<&'a str, String> {
        self.next().ok_or_else(|| format!("{flag} needs a value"))
    }
}

/// `value` as a number, or an error naming the flag.
pub(crate) fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: `{value}` is not a valid number"))
}

/// Where the tools come from: the bundled catalog unless a catalog file or MCP lists are given.
#[derive(Default)]
pub(crate) struct SourceArgs {
    pub(crate) catalog: Option<PathBuf>,
    pub(crate) mcp: Vec<(String, PathBuf)>,
    /// An `mcpServers` configuration whose servers are connected to live.
    pub(crate) mcp_config: Option<PathBuf>,
    /// `--call-timeout SECS` for the live servers' calls.
    pub(crate) call_timeout: Option<std::time::Duration>,
    pub(crate) bundled: bool,
}

impl SourceArgs {
    /// Takes `flag` (and its value) if it is a source flag; `Ok(false)` if it is not one.
    pub(crate) fn accept(&mut self, flag: &str, args: &mut Args<'_>) -> Result<bool, String> {
        match flag {
            "--catalog" => {
                if self.catalog.is_some() {
                    return Err("--catalog given twice (one catalog file at a time)".into());
                }
                self.catalog = Some(args.value(flag)?.into());
            }
            "--mcp" => {
                let spec = args.value(flag)?;
                let (server, file) = spec
                    .split_once('=')
                    .filter(|(server, file)| !server.is_empty() && !file.is_empty())
                    .ok_or_else(|| format!("--mcp: expected SERVER=FILE, got `{spec}`"))?;
                // A second list for the same server would replace the first one's tools.
                if self.mcp.iter().any(|(known, _)| known == server) {
                    return Err(format!(
                        "--mcp: server `{server}` given twice (one tools/list file per server)"
                    ));
                }
                self.mcp.push((server.to_owned(), file.into()));
            }
            "--mcp-config" => {
                if self.mcp_config.is_some() {
                    return Err("--mcp-config given twice (one configuration file)".into());
                }
                self.mcp_config = Some(args.value(flag)?.into());
            }
            "--call-timeout" => {
                let seconds: f64 = number(flag, args.value(flag)?)?;
                if !(seconds > 0.0 && seconds.is_finite()) {
                    return Err("--call-timeout: give a number of seconds above 0".into());
                }
                self.call_timeout = Some(std::time::Duration::from_secs_f64(seconds));
            }
            "--bundled" => self.bundled = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether the bundled catalog is loaded.
    pub(crate) fn wants_bundled(&self) -> bool {
        self.bundled || (self.catalog.is_none() && self.mcp.is_empty() && self.mcp_config.is_none())
    }
}

/// The source flags and the plain words of a command that takes no other flag (`explain`,
/// `call`).
pub(crate) fn sources_and_words<'a>(
    command: &str,
    args: &'a [String],
) -> Result<(SourceArgs, Vec<&'a str>), String> {
    let mut sources = SourceArgs::default();
    let mut words = Vec::new();
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        if sources.accept(arg, &mut it)? {
            continue;
        }
        if arg.starts_with("--") {
            return Err(unknown(command, arg));
        }
        words.push(arg);
    }
    Ok((sources, words))
}

/// Rejects a flag no command knows.
pub(crate) fn unknown(command: &str, flag: &str) -> String {
    format!("{command}: unknown flag `{flag}` (try `capstore --help`)")
}
