//! The clients of a gateway over HTTP, each with its own bearer token and scope.
//!
//! A team's gateway is reached by many processes; each should see and run only what it is for.
//! A client is a name, a [`Scope`] (which servers, which tool patterns, which tags it may not
//! touch) and a token that only its holder knows: the gateway keeps the token's SHA-256, never
//! the token, in a file beside the MCP configuration ([`clients_path`], written `0600`).
//! `capstore clients add NAME --mcp-config FILE` makes a token and prints it once;
//! `capstore clients revoke NAME` removes it, and a running gateway refuses it from its next
//! request (the file is read again when it changes).
//!
//! With at least one client, `capstore serve --http` asks every MCP request for
//! `Authorization: Bearer TOKEN` (`401` without a known one). A client's `tools/list`,
//! `search_tools` answers and calls see only its scope; a call outside it is refused with why,
//! and never forwarded. With no client, the gateway is one person's on loopback, as before.
//!
//! What it costs: a request's token is hashed once (SHA-256 of ~70 bytes) and looked up among
//! the clients; the file's modification time is read once a request. A scope check is a few
//! glob matches per tool listed, found or called.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::exec::matcher_matches;
use crate::tools::Tool;

/// What a client may see and run. Empty lists allow everything they would restrict.
///
/// ```
/// use capstore::gateway::Scope;
/// use capstore::Tool;
/// let scope = Scope { servers: vec!["github".into()], tools: vec![], deny_tags: vec!["destructive".into()] };
/// let read = Tool::new("get_issue", "").with_source("github");
/// let delete = Tool::new("delete_repo", "").with_source("github").with_tags(["destructive"]);
/// assert!(scope.allows("github/get_issue", &read).is_ok());
/// assert!(scope.allows("github/delete_repo", &delete).is_err());
/// assert!(scope.allows("fs/read_file", &Tool::new("read_file", "").with_source("fs")).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// The servers (tool sources) whose tools it may use; empty: every server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// Tool patterns it may use (`*`/`?` globs on the qualified or the bare name, as hooks'
    /// matchers); empty: every tool of its servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Tags it may not touch (`destructive`, `write`): a tool carrying one is out of scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_tags: Vec<String>,
}

impl Scope {
    /// Whether the tool under `key` is in scope; `Err` says why not.
    ///
    /// See the [type's example](Self).
    pub fn allows(&self, key: &str, tool: &Tool) -> Result<(), String> {
        let server = tool.source.as_deref().unwrap_or_default();
        if !self.servers.is_empty() && !self.servers.iter().any(|s| s == server) {
            return Err(format!(
                "its server `{server}` is not among the client's ({})",
                self.servers.join(", ")
            ));
        }
        if !self.tools.is_empty() && !self.tools.iter().any(|p| matcher_matches(p, key)) {
            return Err(format!(
                "it matches none of the client's tool patterns ({})",
                self.tools.join(", ")
            ));
        }
        if let Some(tag) = tool.tags.iter().find(|t| self.deny_tags.contains(t)) {
            return Err(format!(
                "it is tagged `{tag}`, which the client may not use"
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for Scope {
    /// `servers github, fs; tools *_issue; not destructive`, or `everything`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if !self.servers.is_empty() {
            parts.push(format!("servers {}", self.servers.join(", ")));
        }
        if !self.tools.is_empty() {
            parts.push(format!("tools {}", self.tools.join(", ")));
        }
        if !self.deny_tags.is_empty() {
            parts.push(format!("not {}", self.deny_tags.join(", ")));
        }
        if parts.is_empty() {
            f.write_str("everything")
        } else {
            f.write_str(&parts.join("; "))
        }
    }
}

/// A client as the file keeps it: no token, its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientRecord {
    /// The client's name (what the audit and the metrics say).
    pub name: String,
    /// The SHA-256 of its token, in hex.
    pub token_sha256: String,
    /// What it may use.
    pub scope: Scope,
}

/// The file's shape.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientsFile {
    format: String,
    clients: Vec<ClientRecord>,
}

const FORMAT: &str = "capstore.clients/v1";

/// An authenticated client, as a request carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Its name.
    pub name: Arc<str>,
    /// What it may use.
    pub scope: Arc<Scope>,
}

/// Why the clients file could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientsError(pub String);

impl std::fmt::Display for ClientsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClientsError {}

/// Where the clients of the gateway serving `config` are kept: `CONFIG.clients.json` beside it.
///
/// ```
/// let path = capstore::gateway::clients_path(std::path::Path::new("/etc/capstore/mcp.json"));
/// assert_eq!(path, std::path::Path::new("/etc/capstore/mcp.json.clients.json"));
/// ```
pub fn clients_path(config: &Path) -> PathBuf {
    let mut name = config.as_os_str().to_owned();
    name.push(".clients.json");
    PathBuf::from(name)
}

/// The clients of a gateway, kept in a file ([`clients_path`]). Cheap to clone (shared); every
/// method is safe from any thread. Read again when the file changes, so a revocation reaches a
/// running gateway at its next request.
///
/// ```
/// use capstore::gateway::{Clients, Scope};
/// let dir = std::env::temp_dir().join(format!("capstore-clients-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let clients = Clients::open(dir.join("mcp.json.clients.json"))?;
/// let token = clients.add("ci", Scope { servers: vec!["github".into()], ..Scope::default() })?;
/// assert_eq!(clients.authenticate(&token).map(|c| c.name.to_string()), Some("ci".into()));
/// assert!(clients.authenticate("not-a-token").is_none());
/// clients.revoke("ci")?;
/// assert!(clients.authenticate(&token).is_none());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Clients {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    state: RwLock<State>,
}

#[derive(Debug, Default)]
struct State {
    records: Vec<ClientRecord>,
    /// The file's modification time when read (`None`: no file).
    seen: Option<SystemTime>,
}

impl Clients {
    /// The clients kept at `path` (none if there is no file yet). Errors: the file cannot be
    /// read or is not a clients file.
    ///
    /// See the [type's example](Self).
    pub fn open(path: impl Into<PathBuf>) -> Result<Clients, ClientsError> {
        let path = path.into();
        let (records, seen) = read(&path)?;
        Ok(Clients {
            inner: Arc::new(Inner {
                path,
                state: RwLock::new(State { records, seen }),
            }),
        })
    }

    /// Adds a client named `name` with `scope`, and returns its token: 256 random bits, shown
    /// this once (the file keeps its hash). Errors: the name is empty, taken, or has other
    /// characters than letters, digits, `-`, `_` and `.`; the file cannot be written.
    ///
    /// See the [type's example](Self).
    pub fn add(&self, name: &str, scope: Scope) -> Result<String, ClientsError> {
        let fits = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if name.is_empty() || name.len() > 64 || !name.chars().all(fits) {
            return Err(ClientsError(format!(
                "a client's name is 1 to 64 letters, digits, `-`, `_` or `.`, not `{name}`"
            )));
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| ClientsError(format!("no random token: {e}")))?;
        let token = format!(
            "cst_{}",
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        let mut state = self.inner.state.write();
        self.refresh(&mut state)?;
        if state.records.iter().any(|r| r.name == name) {
            return Err(ClientsError(format!(
                "a client named `{name}` exists: revoke it first"
            )));
        }
        let mut records = state.records.clone();
        records.push(ClientRecord {
            name: name.to_string(),
            token_sha256: sha256_hex(&token),
            scope,
        });
        state.seen = write(&self.inner.path, &records)?;
        state.records = records;
        Ok(token)
    }

    /// Removes the client `name`: its token is refused from the next request on. Errors: no
    /// such client; the file cannot be written.
    ///
    /// See the [type's example](Self).
    pub fn revoke(&self, name: &str) -> Result<(), ClientsError> {
        let mut state = self.inner.state.write();
        self.refresh(&mut state)?;
        let mut records = state.records.clone();
        let before = records.len();
        records.retain(|r| r.name != name);
        if records.len() == before {
            return Err(ClientsError(format!("no client named `{name}`")));
        }
        state.seen = write(&self.inner.path, &records)?;
        state.records = records;
        Ok(())
    }

    /// The clients, in the order they were added.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("capstore-clients-list-{}", std::process::id()));
    /// let clients = capstore::gateway::Clients::open(dir.join("none.json"))?;
    /// assert!(clients.list().is_empty());
    /// # Ok::<(), capstore::gateway::ClientsError>(())
    /// ```
    pub fn list(&self) -> Vec<ClientRecord> {
        self.current().records.clone()
    }

    /// Whether there is no client (then the gateway asks no token).
    ///
    /// See [`list`](Self::list).
    pub fn is_empty(&self) -> bool {
        self.current().records.is_empty()
    }

    /// The client whose token is `token`, if any (the file read again if it changed).
    ///
    /// See the [type's example](Self).
    pub fn authenticate(&self, token: &str) -> Option<Client> {
        let hash = sha256_hex(token);
        let state = self.current();
        // Hashes compared in full whatever their first difference (they are of secrets).
        state
            .records
            .iter()
            .find(|r| same(&r.token_sha256, &hash))
            .map(|r| Client {
                name: Arc::from(r.name.as_str()),
                scope: Arc::new(r.scope.clone()),
            })
    }

    /// The state, read again first if the file changed since (or appeared, or went).
    fn current(&self) -> parking_lot::RwLockReadGuard<'_, State> {
        let changed = modified(&self.inner.path) != self.inner.state.read().seen;
        if changed {
            let mut state = self.inner.state.write();
            // A file that cannot be read keeps the clients last read: none gains access.
            let _ = self.refresh(&mut state);
        }
        self.inner.state.read()
    }

    fn refresh(&self, state: &mut State) -> Result<(), ClientsError> {
        if modified(&self.inner.path) != state.seen {
            let (records, seen) = read(&self.inner.path)?;
            state.records = records;
            state.seen = seen;
        }
        Ok(())
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn read(path: &Path) -> Result<(Vec<ClientRecord>, Option<SystemTime>), ClientsError> {
    let seen = modified(path);
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), None)),
        Err(e) => return Err(ClientsError(format!("{}: {e}", path.display()))),
    };
    let file: ClientsFile = serde_json::from_str(&text)
        .map_err(|e| ClientsError(format!("{}: not a clients file: {e}", path.display())))?;
    if file.format != FORMAT {
        return Err(ClientsError(format!(
            "{}: format `{}`, expected `{FORMAT}`",
            path.display(),
            file.format
        )));
    }
    Ok((file.clients, seen))
}

/// Writes the file whole (a temporary file renamed over it, readable by its owner only).
fn write(path: &Path, records: &[ClientRecord]) -> Result<Option<SystemTime>, ClientsError> {
    let file = ClientsFile {
        format: FORMAT.to_string(),
        clients: records.to_vec(),
    };
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| ClientsError(format!("cannot write the clients: {e}")))?;
    let tmp = path.with_extension("tmp");
    let fail = |e: std::io::Error| ClientsError(format!("{}: {e}", path.display()));
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut out = options.open(&tmp).map_err(fail)?;
        out.write_all(text.as_bytes()).map_err(fail)?;
        out.sync_all().map_err(fail)?;
    }
    std::fs::rename(&tmp, path).map_err(fail)?;
    Ok(modified(path))
}

fn sha256_hex(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Equal, compared in time that does not depend on where the first difference is.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("capstore-clients-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        dir.join("mcp.json.clients.json")
    }

    #[test]
    fn the_file_keeps_hashes_not_tokens_readable_by_its_owner_only() {
        let path = scratch("file");
        let clients = Clients::open(&path).expect("open");
        let token = clients.add("ci", Scope::default()).expect("add");
        let text = std::fs::read_to_string(&path).expect("written");
        assert!(!text.contains(&token), "{text}");
        assert!(text.contains(&sha256_hex(&token)), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(clients.add("ci", Scope::default()).is_err(), "a name once");
        assert!(clients.add("bad name", Scope::default()).is_err());
    }

    #[test]
    fn a_revocation_by_another_handle_reaches_a_running_one() {
        let path = scratch("revoke");
        let serving = Clients::open(&path).expect("open");
        let token = serving.add("ci", Scope::default()).expect("add");
        assert!(serving.authenticate(&token).is_some());
        // The command line's own handle on the same file.
        std::thread::sleep(std::time::Duration::from_millis(20));
        Clients::open(&path)
            .expect("open")
            .revoke("ci")
            .expect("revoke");
        assert!(serving.authenticate(&token).is_none());
        assert!(serving.is_empty());
    }

    #[test]
    fn a_broken_file_is_an_error_naming_it() {
        let path = scratch("broken");
        std::fs::write(&path, "{").expect("write");
        let err = Clients::open(&path).expect_err("broken");
        assert!(err.0.contains("not a clients file"), "{err}");
    }
}
