//! The clients of a gateway over HTTP, each with its own bearer token and scope.
//!
//! A team's gateway is reached by many processes; each should see and run only what it is for.
//! A client is a name, a [`Scope`] (which servers, which tool patterns, which tags it may not
//! touch) and a token that only its holder knows: the gateway keeps the token's SHA-256, never
//! the token, in a file beside the MCP configuration ([`clients_path`], written `0600`).
//! `capstore clients add NAME --mcp-config FILE` makes a token and prints it once;
//! `capstore clients revoke NAME` removes it, and a running gateway refuses it from its next
//! request (the file is read again when it changes). With `serve --state URL` the clients are
//! shared by every gateway of the catalog through PostgreSQL instead (`sync::add_client`,
//! `capstore clients --state URL`).
//!
//! With at least one client, `capstore serve --http` asks every MCP request for
//! `Authorization: Bearer TOKEN` (`401` without a known one), and goes on asking after the
//! last one is revoked (revoking closes a gateway, never opens it). A client's `tools/list`,
//! `search_tools` answers and calls see only its scope; a call outside it is refused with why,
//! and never forwarded. With no client ever, the gateway is one person's on loopback, as before.
//!
//! What it costs: a request's token is hashed once (SHA-256 of ~70 bytes) and looked up among
//! the clients; the file's modification time is read once a request. A scope check is a few
//! glob matches per tool listed, found or called.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

impl ClientRecord {
    /// A new client named `name` with `scope`, and its token: `cst_` and 256 random bits in
    /// hex, which the record keeps only the SHA-256 of. Errors: the name is empty, longer than
    /// 64, or has other characters than letters, digits, `-`, `_` and `.`; no randomness.
    ///
    /// ```
    /// use capstore::gateway::{ClientRecord, Scope};
    /// let (record, token) = ClientRecord::issue("ci", Scope::default())?;
    /// assert!(token.starts_with("cst_") && token.len() == 68);
    /// assert!(!record.token_sha256.contains(&token[4..]));
    /// assert!(ClientRecord::issue("two words", Scope::default()).is_err());
    /// # Ok::<(), capstore::gateway::ClientsError>(())
    /// ```
    pub fn issue(name: &str, scope: Scope) -> Result<(ClientRecord, String), ClientsError> {
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
        let record = ClientRecord {
            name: name.to_string(),
            token_sha256: sha256_hex(&token),
            scope,
        };
        Ok((record, token))
    }
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

/// Where a gateway's clients are kept when not in a file: a source the gateway reads on every
/// request, so it must answer from memory (the replica's store, for `sync::Replica::clients`
/// with features `postgres` and `gateway`). Adding and revoking are the source's own business.
///
/// ```
/// use std::sync::Arc;
/// use capstore::gateway::{ClientRecord, ClientSource, Clients, Scope};
/// #[derive(Debug)]
/// struct Fixed(Arc<[ClientRecord]>);
/// impl ClientSource for Fixed {
///     fn current(&self) -> Arc<[ClientRecord]> { Arc::clone(&self.0) }
///     fn place(&self) -> String { "a fixed list".into() }
/// }
/// let (record, token) = ClientRecord::issue("ci", Scope::default())?;
/// let clients = Clients::from_source(Arc::new(Fixed(Arc::from(vec![record]))));
/// assert_eq!(clients.authenticate(&token).map(|c| c.name.to_string()), Some("ci".into()));
/// assert!(clients.revoke("ci").is_err()); // only its source changes it
/// # Ok::<(), capstore::gateway::ClientsError>(())
/// ```
pub trait ClientSource: Send + Sync + std::fmt::Debug {
    /// The clients now. Called once a request: answer from memory.
    fn current(&self) -> Arc<[ClientRecord]>;
    /// Where they are kept, for messages (`the clients in PostgreSQL (namespace capstore)`).
    fn place(&self) -> String;
}

/// The clients of a gateway: kept in a file ([`clients_path`], [`open`](Self::open)) or read
/// from another [`ClientSource`] ([`from_source`](Self::from_source)). Cheap to clone (shared);
/// every method is safe from any thread. A file is read again when it changes, so a
/// revocation reaches a running gateway at its next request.
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
    source: Source,
    /// Set once there has been a client: from then on a token is asked even when none is left,
    /// so that revoking the last client closes the gateway rather than opening it to everyone.
    asks_tokens: Arc<AtomicBool>,
}

#[derive(Debug, Clone)]
enum Source {
    File(Arc<ClientsFileHandle>),
    Other(Arc<dyn ClientSource>),
}

/// A clients file and what was last read from it.
#[derive(Debug)]
struct ClientsFileHandle {
    path: PathBuf,
    state: RwLock<State>,
}

#[derive(Debug, Default)]
struct State {
    records: Arc<[ClientRecord]>,
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
            source: Source::File(Arc::new(ClientsFileHandle {
                path,
                state: RwLock::new(State {
                    records: records.into(),
                    seen,
                }),
            })),
            asks_tokens: Arc::default(),
        })
    }

    /// The clients `source` holds; [`add`](Self::add) and [`revoke`](Self::revoke) refuse
    /// (the source is changed its own way).
    ///
    /// See [`ClientSource`].
    pub fn from_source(source: Arc<dyn ClientSource>) -> Clients {
        Clients {
            source: Source::Other(source),
            asks_tokens: Arc::default(),
        }
    }

    /// Adds a client named `name` with `scope` to the file, and returns its token (see
    /// [`ClientRecord::issue`]), shown this once: the file keeps its hash. Errors: the name is
    /// not a client's name or is taken; the file cannot be written; the clients are kept
    /// elsewhere than in a file.
    ///
    /// See the [type's example](Self).
    pub fn add(&self, name: &str, scope: Scope) -> Result<String, ClientsError> {
        let file = self.file()?;
        let (record, token) = ClientRecord::issue(name, scope)?;
        let mut state = file.state.write();
        file.refresh(&mut state)?;
        if state.records.iter().any(|r| r.name == name) {
            return Err(ClientsError(format!(
                "a client named `{name}` exists: revoke it first"
            )));
        }
        let mut records = state.records.to_vec();
        records.push(record);
        state.seen = write(&file.path, &records)?;
        state.records = records.into();
        Ok(token)
    }

    /// Removes the client `name` from the file: its token is refused from the next request on.
    /// Errors: no such client; the file cannot be written; the clients are kept elsewhere.
    ///
    /// See the [type's example](Self).
    pub fn revoke(&self, name: &str) -> Result<(), ClientsError> {
        let file = self.file()?;
        let mut state = file.state.write();
        file.refresh(&mut state)?;
        let mut records = state.records.to_vec();
        let before = records.len();
        records.retain(|r| r.name != name);
        if records.len() == before {
            return Err(ClientsError(format!("no client named `{name}`")));
        }
        state.seen = write(&file.path, &records)?;
        state.records = records.into();
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
        self.current().to_vec()
    }

    /// Whether there is no client (then the gateway asks no token).
    ///
    /// See [`list`](Self::list).
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }

    /// Whether requests must carry a client's token: there is a client, or there has been one
    /// (see [`check`](Self::check)).
    ///
    /// See [`check`](Self::check).
    pub fn asks_tokens(&self) -> bool {
        self.current_asking().1
    }

    /// Where the clients are kept: the file's path, or the source's [`place`](ClientSource::place).
    ///
    /// ```
    /// let clients = capstore::gateway::Clients::open("/etc/capstore/mcp.json.clients.json")?;
    /// assert_eq!(clients.place(), "/etc/capstore/mcp.json.clients.json");
    /// # Ok::<(), capstore::gateway::ClientsError>(())
    /// ```
    pub fn place(&self) -> String {
        match &self.source {
            Source::File(file) => file.path.display().to_string(),
            Source::Other(source) => source.place(),
        }
    }

    /// The client whose token is `token`, if any (the file read again if it changed).
    ///
    /// See the [type's example](Self).
    pub fn authenticate(&self, token: &str) -> Option<Client> {
        find(&self.current(), token)
    }

    /// Whether `token` names a client, for a request: `Ok(Some(client))`; `Ok(None)` when this
    /// handle has never seen a client (one person's gateway: no token is asked); `Err` why
    /// not otherwise. Once a client has been seen, a token is asked even after the last one is
    /// revoked: revoking closes the gateway, it never opens it. One read of the clients.
    ///
    /// ```
    /// use capstore::gateway::{Clients, Scope, TokenRefusal};
    /// let dir = std::env::temp_dir().join(format!("capstore-clients-check-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let clients = Clients::open(dir.join("mcp.json.clients.json"))?;
    /// assert_eq!(clients.check(None), Ok(None)); // no clients: nothing asked
    /// let token = clients.add("ci", Scope::default())?;
    /// assert!(clients.check(Some(&token))?.is_some());
    /// assert_eq!(clients.check(None), Err(TokenRefusal::NoToken));
    /// clients.revoke("ci")?;
    /// assert_eq!(clients.check(Some(&token)), Err(TokenRefusal::UnknownToken));
    /// assert_eq!(clients.check(None), Err(TokenRefusal::NoToken)); // still closed
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self, token: Option<&str>) -> Result<Option<Client>, TokenRefusal> {
        let (records, asks) = self.current_asking();
        if !asks {
            return Ok(None);
        }
        let token = token.ok_or(TokenRefusal::NoToken)?;
        find(&records, token)
            .map(Some)
            .ok_or(TokenRefusal::UnknownToken)
    }

    fn file(&self) -> Result<&ClientsFileHandle, ClientsError> {
        match &self.source {
            Source::File(file) => Ok(file),
            Source::Other(source) => Err(ClientsError(format!(
                "the clients are kept in {}: change them there (`capstore clients --state URL`)",
                source.place()
            ))),
        }
    }

    /// The clients now, and whether a token is asked: there is a client, or there has been
    /// one (the latch is set here, by whoever reads the clients first).
    fn current_asking(&self) -> (Arc<[ClientRecord]>, bool) {
        let records = self.current();
        if !records.is_empty() {
            self.asks_tokens.store(true, Ordering::Relaxed);
        }
        let asks = self.asks_tokens.load(Ordering::Relaxed);
        (records, asks)
    }

    /// The clients now (a file read again first if it changed since, appeared, or went).
    fn current(&self) -> Arc<[ClientRecord]> {
        match &self.source {
            Source::File(file) => file.current(),
            Source::Other(source) => source.current(),
        }
    }
}

/// Why a request names no client ([`Clients::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefusal {
    /// It carries no bearer token.
    NoToken,
    /// Its token is no client's (never made, or revoked).
    UnknownToken,
}

impl std::fmt::Display for TokenRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenRefusal::NoToken => {
                "this gateway serves its clients only: send `Authorization: Bearer TOKEN` \
                 (`capstore clients add NAME` makes one)"
            }
            TokenRefusal::UnknownToken => "unknown or revoked client token",
        })
    }
}

impl std::error::Error for TokenRefusal {}

/// The client of `records` whose token is `token`.
fn find(records: &[ClientRecord], token: &str) -> Option<Client> {
    let hash = sha256_hex(token);
    // Hashes compared in full whatever their first difference (they are of secrets).
    records
        .iter()
        .find(|r| same(&r.token_sha256, &hash))
        .map(|r| Client {
            name: Arc::from(r.name.as_str()),
            scope: Arc::new(r.scope.clone()),
        })
}

impl ClientsFileHandle {
    fn current(&self) -> Arc<[ClientRecord]> {
        let changed = modified(&self.path) != self.state.read().seen;
        if changed {
            let mut state = self.state.write();
            // A file that cannot be read keeps the clients last read: none gains access.
            let _ = self.refresh(&mut state);
        }
        Arc::clone(&self.state.read().records)
    }

    fn refresh(&self, state: &mut State) -> Result<(), ClientsError> {
        if modified(&self.path) != state.seen {
            let (records, seen) = read(&self.path)?;
            state.records = records.into();
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
