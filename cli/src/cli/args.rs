//! A few helpers for hand-parsed flags.

use std::path::PathBuf;

use capstore::mcp::live::LiveOptions;

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

/// `value` as a whole number from `min` to `max`, or an error naming the flag and the range.
pub(crate) fn count(flag: &str, value: &str, min: usize, max: usize) -> Result<usize, String> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| format!("{flag}: `{value}` is not a whole number from {min} to {max}"))
}

/// `value` as a finite number from `min` to `max` (no NaN, no infinity), or an error naming
/// the flag and the range.
pub(crate) fn real(flag: &str, value: &str, min: f64, max: f64) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && (min..=max).contains(x))
        .ok_or_else(|| format!("{flag}: `{value}` is not a number from {min} to {max}"))
}

/// The longest duration a flag takes: one day. Longer waits are mistakes (and some make
/// `Duration` arithmetic overflow).
pub(crate) const MAX_SECONDS: f64 = 86_400.0;

/// `value` as a duration in seconds: a finite number above 0 and at most [`MAX_SECONDS`]
/// (fractions allowed: `0.5`), or an error naming the flag.
pub(crate) fn seconds(flag: &str, value: &str) -> Result<std::time::Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= MAX_SECONDS)
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            format!(
                "{flag}: `{value}` is not a number of seconds above 0 and at most {MAX_SECONDS}"
            )
        })
}

/// Where the tools come from: the bundled catalog unless a catalog file or MCP lists are given.
#[derive(Default)]
pub(crate) struct SourceArgs {
    pub(crate) catalog: Option<PathBuf>,
    pub(crate) mcp: Vec<(String, PathBuf)>,
    /// An `mcpServers` configuration whose servers are connected to live.
    pub(crate) mcp_config: Option<PathBuf>,
    /// Timeouts and limits for the live servers (`--call-timeout`, `--connect-timeout`,
    /// `--max-pages`, `--max-server-tools`, `--max-tool-bytes`).
    pub(crate) live: LiveOptions,
    pub(crate) bundled: bool,
    /// `--no-quarantine`: live tools are not fingerprinted (no rug-pull protection).
    pub(crate) no_quarantine: bool,
    /// `--hold-new-tools`: tools a known server adds wait for approval.
    pub(crate) hold_new_tools: bool,
    /// Set by `call`: connect only to the server of this tool (`server/name`).
    pub(crate) only_server_of: Option<String>,
    /// `--usage FILE`: what calls taught, read into the store after the tools.
    pub(crate) usage: Option<PathBuf>,
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
            "--call-timeout" => self.live.call_timeout = seconds(flag, args.value(flag)?)?,
            "--connect-timeout" => self.live.connect_timeout = seconds(flag, args.value(flag)?)?,
            "--max-pages" => self.live.max_pages = count(flag, args.value(flag)?, 1, 1_000_000)?,
            "--max-server-tools" => {
                self.live.max_tools = count(flag, args.value(flag)?, 1, 10_000_000)?;
            }
            "--max-tool-bytes" => {
                self.live.max_tool_bytes = count(flag, args.value(flag)?, 256, 1 << 30)?;
            }
            "--usage" => {
                if self.usage.is_some() {
                    return Err("--usage given twice (one usage file)".into());
                }
                self.usage = Some(args.value(flag)?.into());
            }
            "--bundled" => self.bundled = true,
            "--no-quarantine" => self.no_quarantine = true,
            "--hold-new-tools" => self.hold_new_tools = true,
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
