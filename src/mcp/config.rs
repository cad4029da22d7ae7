//! The `mcpServers` configuration that Claude Desktop, Claude Code (`.mcp.json`) and Cursor
//! share: which MCP servers to start or reach, and how.
//!
//! Reading a configuration needs no feature; connecting to what it names is
//! [`McpHub`](crate::mcp::live::McpHub)'s work (feature `mcp-live`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::parse::kind;
use super::server::check_server;

/// A set of MCP servers, as an `mcpServers` configuration file names them.
///
/// ```json
/// {"mcpServers": {
///     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
///     "time":  {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
///     "docs":  {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
/// }}
/// ```
///
/// - A **stdio** server has a `command`, and optionally `args`, `env` (added to capstore's own
///   environment) and `cwd`. `"type": "stdio"` may say so; a `command` without a `type` is one.
/// - A **Streamable HTTP** server has `"type": "http"` (or `"streamable-http"`, or no `type`)
///   and a `url` (`http://` or `https://`), and optionally `headers` sent with every request.
///   The older HTTP+SSE transport (`"type": "sse"`) is refused with an error that says so.
/// - `"oauth": true`, or `"oauth": {"scopes": ["read", "write"]}`, on a Streamable HTTP server
///   says it requires OAuth 2.1 sign-in (the MCP authorization spec): `capstore auth NAME
///   --mcp-config FILE` signs in once, and the hub then sends the stored token and refreshes it
///   (feature `mcp-oauth`, [`OAuthConfig`]). `false` or absent: no OAuth, only `headers`.
/// - `"disabled": true` leaves a server out (as Cline and Windsurf write it); it is listed in
///   [`McpConfig::disabled`].
/// - `${VAR}` and `${VAR:-default}` in `command`, `args`, `env`, `cwd`, `url` and `headers` are
///   replaced by the environment variable, as Claude Code does; a variable that is not set and
///   has no default is an error naming the server and the field.
/// - Unknown fields are ignored, at the top level and in each entry, so one file serves
///   several clients. A known field of the wrong type is an error naming the server and field.
///
/// ```
/// use capstore::mcp::{McpConfig, ServerTransport};
/// let config = McpConfig::from_json(r#"{"mcpServers": {
///     "time": {"command": "uvx", "args": ["mcp-server-time"], "icon": "ignored"},
///     "docs": {"type": "http", "url": "http://127.0.0.1:8080/mcp"}
/// }}"#)?;
/// let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
/// assert_eq!(names, ["docs", "time"]);
/// assert!(matches!(&config.servers[1].transport, ServerTransport::Stdio { command, .. } if command == "uvx"));
/// # Ok::<(), capstore::mcp::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpConfig {
    /// The servers to connect to, by name (sorted).
    pub servers: Vec<ServerConfig>,
    /// The servers the file names with `"disabled": true` (sorted).
    pub disabled: Vec<String>,
}

/// One server of an [`McpConfig`].
///
/// ```
/// use capstore::mcp::{ServerConfig, ServerTransport};
/// let server = ServerConfig::stdio("time", "uvx", ["mcp-server-time"]);
/// assert_eq!(server.name, "time");
/// assert!(matches!(server.transport, ServerTransport::Stdio { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The server's name: its tools' source, and the first part of their qualified names.
    pub name: String,
    /// How to reach it.
    pub transport: ServerTransport,
}

impl ServerConfig {
    /// A stdio server: `command` run with `args`, no extra environment, capstore's working
    /// directory.
    ///
    /// ```
    /// let server = capstore::mcp::ServerConfig::stdio("fs", "npx", ["-y", "@modelcontextprotocol/server-filesystem"]);
    /// assert_eq!(server.name, "fs");
    /// ```
    pub fn stdio<S: Into<String>>(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        ServerConfig {
            name: name.into(),
            transport: ServerTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        }
    }

    /// A Streamable HTTP server at `url`, with no extra headers.
    ///
    /// ```
    /// let server = capstore::mcp::ServerConfig::http("docs", "http://127.0.0.1:8080/mcp");
    /// assert_eq!(server.name, "docs");
    /// ```
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        ServerConfig {
            name: name.into(),
            transport: ServerTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
                oauth: None,
            },
        }
    }

    /// The server's OAuth settings: `Some` for a Streamable HTTP server whose entry has
    /// `"oauth"`, `None` otherwise.
    ///
    /// ```
    /// let config = capstore::mcp::McpConfig::from_json(
    ///     r#"{"mcpServers": {"docs": {"url": "https://example.com/mcp", "oauth": {"scopes": ["read"]}}}}"#,
    /// )?;
    /// assert_eq!(config.servers[0].oauth().map(|o| o.scopes.clone()), Some(vec!["read".to_string()]));
    /// # Ok::<(), capstore::mcp::ConfigError>(())
    /// ```
    pub fn oauth(&self) -> Option<&OAuthConfig> {
        match &self.transport {
            ServerTransport::Http { oauth, .. } => oauth.as_ref(),
            ServerTransport::Stdio { .. } => None,
        }
    }
}

/// A Streamable HTTP server's OAuth 2.1 settings (`"oauth"` in its entry): it requires sign-in,
/// done once with `capstore auth NAME --mcp-config FILE`, after which the token is kept beside
/// the configuration and refreshed by the hub (feature `mcp-oauth`).
///
/// ```
/// let oauth = capstore::mcp::OAuthConfig::default();
/// assert!(oauth.scopes.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthConfig {
    /// The scopes to ask for at sign-in. Empty (`"oauth": true`): those the server names in its
    /// challenge or its protected-resource metadata.
    pub scopes: Vec<String>,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTransport {
    /// A child process spoken to over its stdin and stdout; its stderr is kept for diagnostics.
    Stdio {
        /// The program (looked up on `PATH` when it has no `/`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the environment capstore runs in.
        env: BTreeMap<String, String>,
        /// Its working directory (capstore's when `None`).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint (`http://` or `https://`).
        url: String,
        /// Headers sent with every request (`Authorization`, ...).
        headers: BTreeMap<String, String>,
        /// OAuth 2.1 sign-in (`"oauth"`); `None` when the entry has none or `false`.
        oauth: Option<OAuthConfig>,
    },
}

/// Why a configuration could not be read. Each variant names what is at fault.
///
/// ```
/// use capstore::mcp::{ConfigError, McpConfig};
/// let err = McpConfig::from_json(r#"{"mcpServers": {"time": {"command": 7}}}"#).unwrap_err();
/// assert_eq!(err, ConfigError::InvalidServer {
///     server: "time".into(), field: "command", reason: "must be a string, not a number".into() });
/// assert_eq!(err.to_string(), "MCP server `time`: field `command` must be a string, not a number");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// The text is not JSON.
    NotJson {
        /// The parser's message, with line and column.
        reason: String,
    },
    /// The JSON is not an object with an `mcpServers` object.
    Shape {
        /// What was expected and what was found.
        reason: String,
    },
    /// One server's entry is unusable.
    InvalidServer {
        /// The server's name, as the file gives it.
        server: String,
        /// The field at fault (`command`, `args`, `env`, `cwd`, `type`, `url`, `headers`, `oauth`, or
        /// `name` for the server's name itself).
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, reason } => {
                write!(f, "cannot read {}: {reason}", path.display())
            }
            ConfigError::NotJson { reason } => write!(f, "MCP configuration is not JSON: {reason}"),
            ConfigError::Shape { reason } => write!(f, "not an mcpServers configuration: {reason}"),
            ConfigError::InvalidServer {
                server,
                field,
                reason,
            } => write!(f, "MCP server `{server}`: field `{field}` {reason}"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl McpConfig {
    /// Reads a configuration from JSON text (see [`McpConfig`] for the format).
    ///
    /// ```
    /// use capstore::mcp::{ConfigError, McpConfig};
    /// let err = McpConfig::from_json(r#"{"servers": {}}"#).unwrap_err();
    /// assert!(matches!(err, ConfigError::Shape { .. }));
    /// ```
    pub fn from_json(text: &str) -> Result<McpConfig, ConfigError> {
        Self::from_json_with_env(text, |name| std::env::var(name).ok())
    }

    /// Reads a configuration file.
    ///
    /// ```
    /// use capstore::mcp::{ConfigError, McpConfig};
    /// let err = McpConfig::from_path("no/such/file.json").unwrap_err();
    /// assert!(matches!(err, ConfigError::Read { .. }));
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Result<McpConfig, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Self::from_json(&text)
    }

    /// [`from_json`](Self::from_json) with `${VAR}` looked up by `env` instead of in the
    /// process's environment (for tests, or a configuration of your own).
    ///
    /// ```
    /// use capstore::mcp::{McpConfig, ServerTransport};
    /// let config = McpConfig::from_json_with_env(
    ///     r#"{"mcpServers": {"docs": {"url": "https://${HOST}/mcp", "headers": {"X-Team": "${TEAM:-core}"}}}}"#,
    ///     |name| (name == "HOST").then(|| "example.com".to_string()),
    /// )?;
    /// let ServerTransport::Http { url, headers, .. } = &config.servers[0].transport else { unreachable!() };
    /// assert_eq!((url.as_str(), headers["X-Team"].as_str()), ("https://example.com/mcp", "core"));
    /// # Ok::<(), capstore::mcp::ConfigError>(())
    /// ```
    pub fn from_json_with_env(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<McpConfig, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::NotJson {
            reason: e.to_string(),
        })?;
        let Value::Object(mut top) = value else {
            return Err(ConfigError::Shape {
                reason: format!("expected a JSON object, found {}", kind(&value)),
            });
        };
        let servers = match top.remove("mcpServers") {
            Some(Value::Object(mut servers)) => {
                // In name order, also where a crate in the build turned on serde_json's
                // `preserve_order` (rig does), which keeps the file's order.
                servers.sort_keys();
                servers
            }
            Some(other) => {
                return Err(ConfigError::Shape {
                    reason: format!("`mcpServers` must be an object, not {}", kind(&other)),
                });
            }
            None => {
                return Err(ConfigError::Shape {
                    reason: "no `mcpServers` object".into(),
                });
            }
        };
        let mut config = McpConfig::default();
        for (name, value) in servers {
            let entry = Entry {
                server: &name,
                env: &env,
            };
            if let Some(server) = entry.parse(entry_object(&name, value)?)? {
                config.servers.push(server);
            } else {
                config.disabled.push(name);
            }
        }
        Ok(config)
    }

    /// The configured server called `name`, if any.
    ///
    /// ```
    /// let config = capstore::mcp::McpConfig::from_json(r#"{"mcpServers": {"t": {"command": "x"}}}"#)?;
    /// assert!(config.server("t").is_some() && config.server("u").is_none());
    /// # Ok::<(), capstore::mcp::ConfigError>(())
    /// ```
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|server| server.name == name)
    }
}

fn entry_object(server: &str, entry: Value) -> Result<Map<String, Value>, ConfigError> {
    match entry {
        Value::Object(object) => Ok(object),
        other => Err(ConfigError::InvalidServer {
            server: server.to_string(),
            field: "name",
            reason: format!("must map to an object, not {}", kind(&other)),
        }),
    }
}

/// One entry being read: its server's name (for errors) and the environment for `${VAR}`.
struct Entry<'a, E> {
    server: &'a str,
    env: &'a E,
}

impl<E: Fn(&str) -> Option<String>> Entry<'_, E> {
    /// The server, or `None` when the entry is disabled.
    fn parse(&self, mut object: Map<String, Value>) -> Result<Option<ServerConfig>, ConfigError> {
        if object
            .remove("disabled")
            .is_some_and(|d| d == Value::Bool(true))
        {
            return Ok(None);
        }
        check_server(self.server).map_err(|e| self.fail("name", e.to_string()))?;
        let declared = self.optional_string(&mut object, "type")?;
        let transport = match declared.as_deref() {
            Some("stdio") => self.stdio(object)?,
            Some("http" | "streamable-http" | "streamableHttp") => self.http(object)?,
            Some("sse") => {
                return Err(self.fail(
                    "type",
                    "\"sse\" (the HTTP+SSE transport of 2024-11-05) is not supported; \
                     use the server's Streamable HTTP endpoint with \"type\": \"http\""
                        .into(),
                ));
            }
            Some(other) => {
                return Err(self.fail(
                    "type",
                    format!("{other:?} is not a transport (expected \"stdio\" or \"http\")"),
                ));
            }
            None if object.contains_key("command") => self.stdio(object)?,
            None if object.contains_key("url") => self.http(object)?,
            None => {
                return Err(self.fail(
                    "command",
                    "is missing (a stdio server needs `command`, an HTTP server `url`)".into(),
                ));
            }
        };
        Ok(Some(ServerConfig {
            name: self.server.to_string(),
            transport,
        }))
    }

    fn stdio(&self, mut object: Map<String, Value>) -> Result<ServerTransport, ConfigError> {
        let command = self
            .optional_string(&mut object, "command")?
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| self.fail("command", "is missing or empty".into()))?;
        let args = match object.remove("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(arg) => self.expand("args", &arg),
                    other => Err(self.fail(
                        "args",
                        format!("must hold strings only, not {}", kind(&other)),
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(self.fail(
                    "args",
                    format!("must be an array of strings, not {}", kind(&other)),
                ));
            }
        };
        let env = self.string_map(&mut object, "env")?;
        let cwd = self.optional_string(&mut object, "cwd")?.map(PathBuf::from);
        Ok(ServerTransport::Stdio {
            command,
            args,
            env,
            cwd,
        })
    }

    fn http(&self, mut object: Map<String, Value>) -> Result<ServerTransport, ConfigError> {
        let url = self
            .optional_string(&mut object, "url")?
            .ok_or_else(|| self.fail("url", "is missing".into()))?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(self.fail("url", format!("{url:?} is not an http:// or https:// URL")));
        }
        let headers = self.string_map(&mut object, "headers")?;
        let oauth = self.oauth(&mut object)?;
        Ok(ServerTransport::Http {
            url,
            headers,
            oauth,
        })
    }

    /// `"oauth"`: `true`, `false`, or an object with optional `scopes` (strings).
    fn oauth(&self, object: &mut Map<String, Value>) -> Result<Option<OAuthConfig>, ConfigError> {
        match object.remove("oauth") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(None),
            Some(Value::Bool(true)) => Ok(Some(OAuthConfig::default())),
            Some(Value::Object(mut map)) => {
                let scopes = match map.remove("scopes") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => items
                        .into_iter()
                        .map(|item| match item {
                            Value::String(scope) => self.expand("oauth", &scope),
                            other => Err(self.fail(
                                "oauth",
                                format!("`scopes` must hold strings, not {}", kind(&other)),
                            )),
                        })
                        .collect::<Result<_, _>>()?,
                    Some(other) => {
                        return Err(self.fail(
                            "oauth",
                            format!("`scopes` must be an array of strings, not {}", kind(&other)),
                        ));
                    }
                };
                Ok(Some(OAuthConfig { scopes }))
            }
            Some(other) => Err(self.fail(
                "oauth",
                format!(
                    "must be true, false or an object with `scopes`, not {}",
                    kind(&other)
                ),
            )),
        }
    }

    /// A string field, `${VAR}` expanded; `None` when absent or `null`.
    fn optional_string(
        &self,
        object: &mut Map<String, Value>,
        field: &'static str,
    ) -> Result<Option<String>, ConfigError> {
        match object.remove(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => self.expand(field, &text).map(Some),
            Some(other) => Err(self.fail(field, format!("must be a string, not {}", kind(&other)))),
        }
    }

    /// An object of strings (`env`, `headers`), values `${VAR}` expanded.
    fn string_map(
        &self,
        object: &mut Map<String, Value>,
        field: &'static str,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        match object.remove(field) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .into_iter()
                .map(|(key, value)| match value {
                    Value::String(text) => Ok((key, self.expand(field, &text)?)),
                    other => Err(self.fail(
                        field,
                        format!("`{key}` must be a string, not {}", kind(&other)),
                    )),
                })
                .collect(),
            Some(other) => Err(self.fail(
                field,
                format!("must be an object of strings, not {}", kind(&other)),
            )),
        }
    }

    /// `${VAR}` and `${VAR:-default}` replaced; other text (a lone `$`) kept as it is.
    fn expand(&self, field: &'static str, text: &str) -> Result<String, ConfigError> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                return Err(self.fail(field, format!("has an unclosed `${{` in {text:?}")));
            };
            let (name, default) = match after[..end].split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (&after[..end], None),
            };
            match ((self.env)(name), default) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => {
                    return Err(self.fail(
                        field,
                        format!("uses ${{{name}}}, which is not set in the environment"),
                    ));
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn fail(&self, field: &'static str, reason: String) -> ConfigError {
        ConfigError::InvalidServer {
            server: self.server.to_string(),
            field,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpConfig, ConfigError> {
        McpConfig::from_json_with_env(text, |name| match name {
            "TOKEN" => Some("s3cret".into()),
            _ => None,
        })
    }

    fn invalid(text: &str) -> (String, &'static str, String) {
        match parse(text) {
            Err(ConfigError::InvalidServer {
                server,
                field,
                reason,
            }) => (server, field, reason),
            other => panic!("expected InvalidServer, got {other:?}"),
        }
    }

    #[test]
    fn reads_the_three_clients_shapes() {
        let config = parse(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "pkg", "/tmp"], "env": {"A": "1"}, "cwd": "/srv"},
                "claude-code-http": {"type": "http", "url": "https://x.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "cursor-url": {"url": "http://127.0.0.1:9/mcp"},
                "explicit": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
                "off": {"command": "x", "disabled": true}
            }, "globalShortcut": "ignored"}"#,
        )
        .unwrap();
        let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["claude-code-http", "cursor-url", "explicit", "fs"]);
        assert_eq!(config.disabled, ["off"]);
        assert_eq!(
            config.server("fs").unwrap().transport,
            ServerTransport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "pkg".into(), "/tmp".into()],
                env: [("A".to_string(), "1".to_string())].into(),
                cwd: Some("/srv".into()),
            }
        );
        assert_eq!(
            config.server("claude-code-http").unwrap().transport,
            ServerTransport::Http {
                url: "https://x.test/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer s3cret".to_string())].into(),
                oauth: None,
            }
        );
    }

    #[test]
    fn oauth_is_true_false_or_scopes() {
        let config = parse(
            r#"{"mcpServers": {
                "a": {"url": "https://a.test/mcp", "oauth": true},
                "b": {"url": "https://b.test/mcp", "oauth": {"scopes": ["read", "write"]}},
                "c": {"url": "https://c.test/mcp", "oauth": false},
                "d": {"command": "x", "oauth": true}
            }}"#,
        )
        .unwrap();
        let oauth = |name: &str| config.server(name).unwrap().oauth().cloned();
        assert_eq!(oauth("a"), Some(OAuthConfig::default()));
        assert_eq!(
            oauth("b").map(|o| o.scopes),
            Some(vec!["read".to_string(), "write".to_string()])
        );
        assert_eq!(oauth("c"), None);
        assert_eq!(oauth("d"), None);
        for bad in [
            r#"{"mcpServers": {"a": {"url": "http://x", "oauth": "yes"}}}"#,
            r#"{"mcpServers": {"a": {"url": "http://x", "oauth": {"scopes": "read"}}}}"#,
            r#"{"mcpServers": {"a": {"url": "http://x", "oauth": {"scopes": [1]}}}}"#,
        ] {
            let (server, field, _) = invalid(bad);
            assert_eq!((server.as_str(), field), ("a", "oauth"), "{bad}");
        }
    }

    #[test]
    fn each_bad_entry_names_the_server_and_field() {
        let cases = [
            (r#"{"mcpServers": {"a": 1}}"#, "name"),
            (r#"{"mcpServers": {"a/b": {"command": "x"}}}"#, "name"),
            (r#"{"mcpServers": {"a": {}}}"#, "command"),
            (r#"{"mcpServers": {"a": {"command": ""}}}"#, "command"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": "y"}}}"#,
                "args",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": [1]}}}"#,
                "args",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}"#,
                "env",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "cwd": []}}}"#,
                "cwd",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "sse", "url": "http://x"}}}"#,
                "type",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "ws", "url": "http://x"}}}"#,
                "type",
            ),
            (r#"{"mcpServers": {"a": {"type": "http"}}}"#, "url"),
            (r#"{"mcpServers": {"a": {"url": "ftp://x"}}}"#, "url"),
            (
                r#"{"mcpServers": {"a": {"url": "http://x", "headers": []}}}"#,
                "headers",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "${NOPE}"}}}"#,
                "command",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "${TOKEN"}}}"#,
                "command",
            ),
        ];
        for (text, field) in cases {
            let (server, got, reason) = invalid(text);
            assert_eq!(
                (server.as_str(), got),
                (if text.contains("a/b") { "a/b" } else { "a" }, field),
                "{text}: {reason}"
            );
            assert!(!reason.is_empty());
        }
    }

    #[test]
    fn shape_errors() {
        for text in ["[]", r#"{"mcpServers": []}"#, "{}"] {
            assert!(
                matches!(parse(text), Err(ConfigError::Shape { .. })),
                "{text}"
            );
        }
        assert!(matches!(parse("{"), Err(ConfigError::NotJson { .. })));
    }

    #[test]
    fn expansion_keeps_plain_dollars_and_uses_defaults() {
        let config = parse(
            r#"{"mcpServers": {"a": {"command": "x", "args": ["$HOME", "${MISSING:-d}", "${TOKEN}!"]}}}"#,
        )
        .unwrap();
        let ServerTransport::Stdio { args, .. } = &config.servers[0].transport else {
            panic!("stdio")
        };
        assert_eq!(args, &["$HOME", "d", "s3cret!"]);
    }
}
