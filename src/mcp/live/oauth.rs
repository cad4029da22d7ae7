//! Upstream OAuth 2.1 (feature `mcp-oauth`): Streamable HTTP servers that require sign-in, as
//! the MCP authorization spec describes it, signed in to once and then kept signed in.
//!
//! A server opts in with `"oauth": true` (or `{"scopes": [...]}`) in its configuration entry
//! ([`OAuthConfig`]). Then:
//! - **Sign-in, once** ([`SignIn`], `capstore auth NAME --mcp-config FILE`): discovery of the
//!   server's protected-resource metadata and its authorization server's metadata, dynamic
//!   client registration (asking for the `authorization_code` and `refresh_token` grants), an
//!   authorization URL with PKCE (S256) for a person to open, a loopback listener for the
//!   redirect, and the code exchanged for tokens, saved in the token store. All of the protocol
//!   is rmcp's (`rmcp::transport::auth`); this module chooses where tokens are kept and how the
//!   hub reacts.
//! - **Every request** of the hub's connection asks rmcp's `AuthClient` for the access token,
//!   which refreshes it when it is within 30 s of expiry (half its lifetime for short tokens),
//!   one refresh at a time per store (the store's refresh guard).
//! - **A refresh that fails for a passing reason** (a 5xx, the network) keeps the stored token:
//!   the server stays signed in, the call fails with
//!   [`CallError::TokenRefresh`](super::CallError::TokenRefresh) after a few quick retries, and
//!   the next call tries again.
//! - **A refresh that is refused** (`invalid_grant`, or no token at all) puts the server in
//!   [`ServerState::SignInRequired`](super::ServerState::SignInRequired): its tools stay listed
//!   and fail at once with [`CallError::SignInRequired`](super::CallError::SignInRequired),
//!   which names the command to run. The hub watches the store and reconnects by itself once a
//!   new sign-in has saved a token.
//!
//! # Where tokens are kept
//! [`TokenStores`] gives each server its rmcp [`CredentialStore`]. The default
//! ([`TokenStores::beside`]) is one file beside the configuration, [`tokens_path`]
//! (`CONFIG.tokens.json`), written `0600` like the trust file, one entry per server, read at
//! each request (so a `capstore auth` run while the gateway serves takes effect at once) and
//! written atomically. Another backend (shared by replicas) plugs in with [`TokenStores::new`]:
//! a function from a server's name to its store. Such a store should implement
//! `acquire_refresh_guard` so that replicas refresh once; the file store's guard is per process.
//!
//! No token is ever written to a log, an error, the page or stderr: rmcp's `StoredCredentials`
//! prints `[REDACTED]` for its tokens, and every message that quotes an rmcp error is first
//! scrubbed of the tokens the store holds.
//!
//! # What it costs
//! The oauth2 and url crates in the build (rmcp's `auth` feature). At run time, for an OAuth
//! server only: the token file read once per HTTP request (a few hundred bytes), a refresh
//! round trip to the authorization server once per token lifetime, and discovery once per
//! connection.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use capstore::mcp::McpConfig;
//! use capstore::mcp::live::oauth::{SignIn, TokenStores};
//! use std::time::Duration;
//!
//! let path = std::path::Path::new(".mcp.json");
//! let config = McpConfig::from_path(path)?;
//! let stores = TokenStores::beside(path);
//! let server = config.server("docs").ok_or("no server `docs`")?;
//! let sign_in = SignIn::start(server, &stores, 0).await?;
//! println!("open {}", sign_in.url());
//! sign_in.finish(Duration::from_secs(300)).await?;
//! # Ok(()) }
//! ```
//!
//! [`OAuthConfig`]: crate::mcp::OAuthConfig

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::mcp::config::{ServerConfig, ServerTransport};

use super::quarantine::write_private;

// rmcp's store interface, for a caller that plugs in its own backend ([`TokenStores::new`]).
pub use rmcp::transport::auth::{CredentialRefreshGuard, CredentialStore, StoredCredentials};

/// The token file of the configuration at `config`: `CONFIG.tokens.json` beside it.
///
/// ```
/// use std::path::Path;
/// use capstore::mcp::live::oauth::tokens_path;
/// assert_eq!(tokens_path(Path::new("/srv/mcp.json")), Path::new("/srv/mcp.json.tokens.json"));
/// ```
pub fn tokens_path(config: &Path) -> PathBuf {
    let mut name = config.as_os_str().to_owned();
    name.push(".tokens.json");
    PathBuf::from(name)
}

/// The command that signs in to `server`, for messages: `capstore auth SERVER --mcp-config
/// CONFIG` (`FILE` when the configuration's path is not known).
///
/// ```
/// use capstore::mcp::live::oauth::sign_in_command;
/// assert_eq!(sign_in_command("docs", None), "capstore auth docs --mcp-config FILE");
/// ```
pub fn sign_in_command(server: &str, config: Option<&Path>) -> String {
    let config = config.map_or_else(|| "FILE".to_string(), |p| p.display().to_string());
    format!("capstore auth {server} --mcp-config {config}")
}

/// What went wrong signing in, or with the token file. Never holds a token.
///
/// ```
/// use capstore::mcp::live::oauth::OAuthError;
/// let error = OAuthError::NotOAuth { server: "time".into() };
/// assert!(error.to_string().contains("\"oauth\": true"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthError {
    /// The server is not a Streamable HTTP server with `"oauth"` in its entry.
    NotOAuth {
        /// The server.
        server: String,
    },
    /// The token file cannot be read (unreadable, not JSON of the expected shape) or written.
    Store {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A step of the sign-in failed: discovery, registration, the redirect listener, the
    /// authorization server's answer, the code exchange.
    SignIn {
        /// The server.
        server: String,
        /// Which step: `discovery`, `registration`, `redirect`, `exchange`.
        step: &'static str,
        /// Why.
        reason: String,
    },
    /// No redirect arrived in time.
    Timeout {
        /// The server.
        server: String,
        /// How long it waited.
        after: Duration,
    },
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthError::NotOAuth { server } => write!(
                f,
                "MCP server `{server}` does not use OAuth: give its entry a `url` and \
                 `\"oauth\": true` to sign in to it"
            ),
            OAuthError::Store { path, reason } => {
                write!(f, "token file {}: {reason}", path.display())
            }
            OAuthError::SignIn {
                server,
                step,
                reason,
            } => write!(
                f,
                "signing in to MCP server `{server}`: {step} failed: {reason}"
            ),
            OAuthError::Timeout { server, after } => write!(
                f,
                "signing in to MCP server `{server}`: no redirect came back within {} s",
                after.as_secs()
            ),
        }
    }
}

impl std::error::Error for OAuthError {}

/// The token file: every server's credentials, one JSON object by server name, `0600`.
/// Cheap to clone (shared); [`store`](Self::store) hands out a server's rmcp
/// [`CredentialStore`] over it.
///
/// ```
/// use capstore::mcp::live::oauth::TokenFile;
/// let dir = std::env::temp_dir().join(format!("capstore-tokenfile-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let file = TokenFile::new(dir.join("mcp.json.tokens.json"));
/// assert!(file.servers()?.is_empty());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TokenFile {
    inner: Arc<FileInner>,
}

struct FileInner {
    path: PathBuf,
    /// Held for a read-modify-write of the file, within this process.
    io: Mutex<()>,
    /// One refresh at a time per server, within this process.
    refresh: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenFile")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct FileContents {
    servers: BTreeMap<String, StoredCredentials>,
}

impl TokenFile {
    /// The token file at `path` (created at the first save).
    ///
    /// ```
    /// let file = capstore::mcp::live::oauth::TokenFile::new("/srv/mcp.json.tokens.json");
    /// assert_eq!(file.path(), std::path::Path::new("/srv/mcp.json.tokens.json"));
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TokenFile {
            inner: Arc::new(FileInner {
                path: path.into(),
                io: Mutex::new(()),
                refresh: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Where it is.
    ///
    /// ```
    /// let file = capstore::mcp::live::oauth::TokenFile::new("t.json");
    /// assert_eq!(file.path().to_str(), Some("t.json"));
    /// ```
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The servers it holds credentials for, sorted.
    ///
    /// ```no_run
    /// let file = capstore::mcp::live::oauth::TokenFile::new("mcp.json.tokens.json");
    /// for server in file.servers()? { println!("{server}"); }
    /// # Ok::<(), capstore::mcp::live::oauth::OAuthError>(())
    /// ```
    pub fn servers(&self) -> Result<Vec<String>, OAuthError> {
        Ok(self.read()?.servers.into_keys().collect())
    }

    /// `server`'s store over this file.
    ///
    /// ```
    /// let file = capstore::mcp::live::oauth::TokenFile::new("mcp.json.tokens.json");
    /// let store = file.store("docs");
    /// ```
    pub fn store(&self, server: &str) -> FileTokenStore {
        FileTokenStore {
            file: self.clone(),
            server: server.to_string(),
        }
    }

    fn fail(&self, reason: impl fmt::Display) -> OAuthError {
        OAuthError::Store {
            path: self.inner.path.clone(),
            reason: reason.to_string(),
        }
    }

    fn read(&self) -> Result<FileContents, OAuthError> {
        match std::fs::read(&self.inner.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileContents::default()),
            Err(e) => Err(self.fail(e)),
            // Only where it is wrong: serde_json's message can quote the value it met, and
            // that value may be a token.
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                self.fail(format!(
                    "not a token file (unreadable at line {}, column {}); sign in again",
                    e.line(),
                    e.column()
                ))
            }),
        }
    }

    fn change(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, StoredCredentials>),
    ) -> Result<(), OAuthError> {
        let _io = self.inner.io.lock();
        let mut contents = self.read()?;
        change(&mut contents.servers);
        let bytes = serde_json::to_vec_pretty(&contents).map_err(|e| self.fail(e))?;
        write_private(&self.inner.path, &bytes).map_err(|e| self.fail(e))
    }

    fn refresh_lock(&self, server: &str) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(
            self.inner
                .refresh
                .lock()
                .entry(server.to_string())
                .or_default(),
        )
    }
}

/// One server's credentials in a [`TokenFile`]: rmcp's [`CredentialStore`].
///
/// ```
/// use capstore::mcp::live::oauth::{CredentialStore, TokenFile};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("capstore-tokenstore-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let store = TokenFile::new(dir.join("mcp.json.tokens.json")).store("docs");
/// assert!(store.load().await?.is_none());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FileTokenStore {
    file: TokenFile,
    server: String,
}

fn store_error(error: OAuthError) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait]
impl CredentialStore for FileTokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let mut contents = self.file.read().map_err(store_error)?;
        Ok(contents.servers.remove(&self.server))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.file
            .change(|servers| {
                servers.insert(self.server.clone(), credentials);
            })
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.file
            .change(|servers| {
                servers.remove(&self.server);
            })
            .map_err(store_error)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let guard = self.file.refresh_lock(&self.server).lock_owned().await;
        Ok(Some(CredentialRefreshGuard::new(guard)))
    }
}

/// Where each server's tokens are kept: a function from a server's name to its rmcp
/// [`CredentialStore`], and the configuration's path for the sign-in command messages name.
/// Given to the hub in [`LiveOptions::tokens`](super::LiveOptions::tokens).
///
/// The seam for another backend: a store shared by replicas implements [`CredentialStore`]
/// (`load`, `save`, `clear`, and `acquire_refresh_guard` held across a refresh, so that one
/// replica refreshes and the others then load its token) and is handed in with
/// [`TokenStores::new`].
///
/// ```
/// use std::sync::Arc;
/// use capstore::mcp::live::oauth::{TokenFile, TokenStores};
/// let file = TokenFile::new("/srv/mcp.json.tokens.json");
/// let stores = TokenStores::new(move |server| Arc::new(file.store(server)) as _)
///     .with_config("/srv/mcp.json");
/// assert_eq!(stores.sign_in_command("docs"), "capstore auth docs --mcp-config /srv/mcp.json");
/// ```
#[derive(Clone)]
pub struct TokenStores {
    factory: Factory,
    config: Option<PathBuf>,
    /// Said after the sign-in command's configuration (`--state URL`), when the stores are
    /// not the file's.
    sign_in_args: Option<String>,
}

/// What [`TokenStores`] calls: a server's name to its store.
type Factory = Arc<dyn Fn(&str) -> Arc<dyn CredentialStore> + Send + Sync>;

impl fmt::Debug for TokenStores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenStores")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PartialEq for TokenStores {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.factory, &other.factory)
            && self.config == other.config
            && self.sign_in_args == other.sign_in_args
    }
}

impl Eq for TokenStores {}

impl TokenStores {
    /// Stores made by `factory`, called once per server and connection.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use capstore::mcp::live::oauth::TokenStores;
    /// use rmcp::transport::auth::InMemoryCredentialStore;
    /// let stores = TokenStores::new(|_server| Arc::new(InMemoryCredentialStore::new()) as _);
    /// ```
    pub fn new(factory: impl Fn(&str) -> Arc<dyn CredentialStore> + Send + Sync + 'static) -> Self {
        TokenStores {
            factory: Arc::new(factory),
            config: None,
            sign_in_args: None,
        }
    }

    /// The default: the [`TokenFile`] beside the configuration at `config`
    /// ([`tokens_path`]).
    ///
    /// ```
    /// let stores = capstore::mcp::live::oauth::TokenStores::beside("/srv/mcp.json");
    /// assert!(stores.sign_in_command("docs").ends_with("--mcp-config /srv/mcp.json"));
    /// ```
    pub fn beside(config: impl Into<PathBuf>) -> Self {
        let config = config.into();
        let file = TokenFile::new(tokens_path(&config));
        TokenStores::new(move |server| Arc::new(file.store(server))).with_config(config)
    }

    /// The configuration's path, named in the sign-in command of messages.
    ///
    /// ```
    /// use capstore::mcp::live::oauth::TokenStores;
    /// let stores = TokenStores::beside("a.json").with_config("b.json");
    /// assert!(stores.sign_in_command("x").ends_with("b.json"));
    /// ```
    pub fn with_config(mut self, config: impl Into<PathBuf>) -> Self {
        self.config = Some(config.into());
        self
    }

    /// Arguments the sign-in command of messages ends with, for stores other than the file
    /// (`--state URL --namespace NS` for the tokens shared through PostgreSQL).
    ///
    /// ```
    /// use capstore::mcp::live::oauth::TokenStores;
    /// let stores = TokenStores::beside("mcp.json").with_sign_in_args("--state URL");
    /// assert_eq!(stores.sign_in_command("docs"), "capstore auth docs --mcp-config mcp.json --state URL");
    /// ```
    pub fn with_sign_in_args(mut self, args: impl Into<String>) -> Self {
        self.sign_in_args = Some(args.into());
        self
    }

    /// `server`'s store.
    ///
    /// ```
    /// let store = capstore::mcp::live::oauth::TokenStores::beside("mcp.json").store("docs");
    /// ```
    pub fn store(&self, server: &str) -> Arc<dyn CredentialStore> {
        (self.factory)(server)
    }

    /// The command that signs in to `server` ([`sign_in_command`]).
    ///
    /// ```
    /// let stores = capstore::mcp::live::oauth::TokenStores::beside("mcp.json");
    /// assert_eq!(stores.sign_in_command("docs"), "capstore auth docs --mcp-config mcp.json");
    /// ```
    pub fn sign_in_command(&self, server: &str) -> String {
        let command = sign_in_command(server, self.config.as_deref());
        match &self.sign_in_args {
            Some(args) => format!("{command} {args}"),
            None => command,
        }
    }
}

/// How many token refreshes ended each way, as [`Tracking`] counts them (the hub shows them as
/// [`RefreshCounts`](super::RefreshCounts)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) ok: u64,
    pub(crate) error: u64,
    pub(crate) rejected: u64,
}

/// How a refresh ended, as counted per server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pending,
    Ok,
    Rejected,
}

/// What the hub learns from a server's store while rmcp uses it: the refreshes and how they
/// ended, and the secrets to scrub from messages. Shared by a session's connections.
#[derive(Default)]
pub(crate) struct Tracking {
    current: Mutex<Option<Arc<Mutex<Outcome>>>>,
    counts: Mutex<Counts>,
    secrets: Mutex<Vec<String>>,
}

impl Tracking {
    pub(crate) fn counts(&self) -> Counts {
        *self.counts.lock()
    }

    /// `text` with every token this store has handed out replaced by `[token]`.
    pub(crate) fn scrub(&self, text: impl Into<String>) -> String {
        let mut text = text.into();
        for secret in self.secrets.lock().iter() {
            if !secret.is_empty() && text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[token]");
            }
        }
        text
    }

    fn remember(&self, credentials: &StoredCredentials) {
        let value = serde_json::to_value(&credentials.token_response).unwrap_or(Value::Null);
        let mut secrets = self.secrets.lock();
        for field in ["access_token", "refresh_token"] {
            if let Some(secret) = value[field].as_str()
                && !secrets.iter().any(|s| s == secret)
            {
                secrets.push(secret.to_string());
            }
        }
        // Tokens rotate; the last few are enough to scrub what a message could quote.
        let excess = secrets.len().saturating_sub(8);
        secrets.drain(..excess);
    }

    fn mark(&self, outcome: Outcome) {
        if let Some(current) = self.current.lock().as_ref() {
            *current.lock() = outcome;
        }
    }
}

/// Whether `credentials` hold a token response with a refresh token.
pub(crate) fn has_refresh_token(credentials: &StoredCredentials) -> bool {
    serde_json::to_value(&credentials.token_response).is_ok_and(|v| v["refresh_token"].is_string())
}

/// Whether `credentials` hold a token response at all.
pub(crate) fn has_token(credentials: &StoredCredentials) -> bool {
    credentials.token_response.is_some()
}

/// A server's store as rmcp is given it: the caller's store, watched for refreshes.
pub(crate) struct Tracked {
    pub(crate) inner: Arc<dyn CredentialStore>,
    pub(crate) tracking: Arc<Tracking>,
}

/// Counts one refresh when dropped (rmcp drops the guard as the refresh ends, either way).
struct Attempt {
    outcome: Arc<Mutex<Outcome>>,
    tracking: Arc<Tracking>,
}

impl Drop for Attempt {
    fn drop(&mut self) {
        let outcome = *self.outcome.lock();
        let mut counts = self.tracking.counts.lock();
        match outcome {
            Outcome::Ok => counts.ok += 1,
            Outcome::Rejected => counts.rejected += 1,
            Outcome::Pending => counts.error += 1,
        }
        drop(counts);
        *self.tracking.current.lock() = None;
    }
}

#[async_trait]
impl CredentialStore for Tracked {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let loaded = self.inner.load().await?;
        match &loaded {
            Some(credentials) => {
                self.tracking.remember(credentials);
                if !has_refresh_token(credentials) {
                    self.tracking.mark(Outcome::Rejected);
                }
            }
            None => self.tracking.mark(Outcome::Rejected),
        }
        Ok(loaded)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.tracking.remember(&credentials);
        self.inner.save(credentials).await?;
        self.tracking.mark(Outcome::Ok);
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.inner.clear().await
    }

    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        self.tracking.mark(Outcome::Rejected);
        self.inner.on_refresh_token_rejected(credentials).await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let inner = self.inner.acquire_refresh_guard().await?;
        let outcome = Arc::new(Mutex::new(Outcome::Pending));
        *self.tracking.current.lock() = Some(Arc::clone(&outcome));
        let attempt = Attempt {
            outcome,
            tracking: Arc::clone(&self.tracking),
        };
        // Dropped together: the attempt is counted as the caller's guard is released.
        Ok(Some(CredentialRefreshGuard::new((attempt, inner))))
    }
}

/// The OAuth settings of `server`, with its URL; `Err(NotOAuth)` for any other server.
fn oauth_url(server: &ServerConfig) -> Result<(&str, &crate::mcp::OAuthConfig), OAuthError> {
    match &server.transport {
        ServerTransport::Http {
            url,
            oauth: Some(oauth),
            ..
        } => Ok((url.as_str(), oauth)),
        _ => Err(OAuthError::NotOAuth {
            server: server.name.clone(),
        }),
    }
}

/// A sign-in under way: the authorization URL for a person to open, and a loopback listener
/// waiting for the authorization server's redirect. See the [module docs](self).
///
/// ```no_run
/// # async fn f(server: &capstore::mcp::ServerConfig) -> Result<(), capstore::mcp::live::oauth::OAuthError> {
/// use capstore::mcp::live::oauth::{SignIn, TokenStores};
/// let sign_in = SignIn::start(server, &TokenStores::beside("mcp.json"), 0).await?;
/// eprintln!("open this address to sign in: {}", sign_in.url());
/// sign_in.finish(std::time::Duration::from_secs(300)).await?;
/// # Ok(()) }
/// ```
pub struct SignIn {
    server: String,
    session: AuthorizationSession,
    listener: tokio::net::TcpListener,
    tracking: Arc<Tracking>,
}

impl fmt::Debug for SignIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignIn")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl SignIn {
    /// Discovers `server`'s authorization server, registers capstore with it (dynamic client
    /// registration, public client, `refresh_token` grant), and listens on
    /// `http://127.0.0.1:PORT/callback` for the redirect (`port` 0: any free port). The
    /// tokens will be saved in `stores`' store for the server.
    ///
    /// ```no_run
    /// # async fn f(server: &capstore::mcp::ServerConfig) -> Result<(), capstore::mcp::live::oauth::OAuthError> {
    /// let sign_in = capstore::mcp::live::oauth::SignIn::start(
    ///     server, &capstore::mcp::live::oauth::TokenStores::beside("mcp.json"), 8765).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(
        server: &ServerConfig,
        stores: &TokenStores,
        port: u16,
    ) -> Result<SignIn, OAuthError> {
        let (url, oauth) = oauth_url(server)?;
        let name = server.name.clone();
        let fail = |step: &'static str, reason: String| OAuthError::SignIn {
            server: name.clone(),
            step,
            reason,
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| {
                fail(
                    "redirect",
                    format!("cannot listen on 127.0.0.1:{port}: {e}"),
                )
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| fail("redirect", e.to_string()))?
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}/callback");
        let tracking = Arc::new(Tracking::default());
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| fail("discovery", e.to_string()))?;
        manager.set_credential_store(Tracked {
            inner: stores.store(&name),
            tracking: Arc::clone(&tracking),
        });
        let resolution = manager
            .resolve_metadata()
            .await
            .map_err(|e| fail("discovery", e.to_string()))?;
        manager.set_metadata(resolution.metadata);
        let mut request = AuthorizationRequest::new(redirect_uri).with_client_name("capstore");
        if !oauth.scopes.is_empty() {
            request = request.with_scopes(oauth.scopes.iter().cloned());
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| fail("registration", tracking.scrub(e.to_string())))?;
        Ok(SignIn {
            server: name,
            session,
            listener,
            tracking,
        })
    }

    /// The address a person opens to sign in (it holds no secret: PKCE's challenge and a
    /// state value, not the verifier).
    ///
    /// ```no_run
    /// # fn f(sign_in: capstore::mcp::live::oauth::SignIn) { println!("{}", sign_in.url()); }
    /// ```
    pub fn url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// The redirect address capstore listens on.
    ///
    /// ```no_run
    /// # fn f(sign_in: capstore::mcp::live::oauth::SignIn) { assert!(sign_in.redirect_uri().starts_with("http://127.0.0.1:")); }
    /// ```
    pub fn redirect_uri(&self) -> &str {
        &self.session.redirect_uri
    }

    /// Waits (at most `timeout`) for the redirect, exchanges its code for tokens (PKCE's
    /// verifier and the state checked by rmcp) and saves them in the store. A redirect with
    /// an `error` (the person refused) ends the sign-in with that error.
    ///
    /// ```no_run
    /// # async fn f(sign_in: capstore::mcp::live::oauth::SignIn) -> Result<(), capstore::mcp::live::oauth::OAuthError> {
    /// sign_in.finish(std::time::Duration::from_secs(300)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn finish(self, timeout: Duration) -> Result<(), OAuthError> {
        let server = self.server.clone();
        match tokio::time::timeout(timeout, self.serve_redirect()).await {
            Ok(result) => result,
            Err(_) => Err(OAuthError::Timeout {
                server,
                after: timeout,
            }),
        }
    }

    async fn serve_redirect(self) -> Result<(), OAuthError> {
        let fail = |step: &'static str, reason: String| OAuthError::SignIn {
            server: self.server.clone(),
            step,
            reason,
        };
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| fail("redirect", e.to_string()))?;
            let Some(target) = read_request_target(&mut stream).await else {
                continue;
            };
            if !target.starts_with("/callback") {
                let _ = respond(&mut stream, "404 Not Found", "not the sign-in redirect").await;
                continue;
            }
            let full = format!("http://127.0.0.1{target}");
            let query = url_query(&full);
            if let Some(error) = query.get("error") {
                let description = query.get("error_description").cloned().unwrap_or_default();
                let _ = respond(&mut stream, "400 Bad Request", "sign-in refused").await;
                return Err(fail(
                    "redirect",
                    format!("the authorization server answered `{error}` {description}")
                        .trim_end()
                        .to_string(),
                ));
            }
            let result = self.session.handle_callback_url(&full).await;
            return match result {
                Ok(_) => {
                    let body = format!("Signed in to {}. You can close this page.", self.server);
                    let _ = respond(&mut stream, "200 OK", &body).await;
                    Ok(())
                }
                Err(e) => {
                    let _ = respond(&mut stream, "400 Bad Request", "sign-in failed").await;
                    Err(fail("exchange", self.tracking.scrub(e.to_string())))
                }
            };
        }
    }
}

/// The query of `url` as a map (the last value of a repeated key).
fn url_query(url: &str) -> HashMap<String, String> {
    url::Url::parse(url)
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

/// The target of an HTTP request's first line, read within 5 s (at most 16 KiB).
async fn read_request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    let read = async {
        while !buffer.windows(4).any(|w| w == b"\r\n\r\n") && buffer.len() < 16 * 1024 {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            buffer.extend_from_slice(&chunk[..n]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .ok()??;
    let text = String::from_utf8_lossy(&buffer);
    let line = text.lines().next()?;
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_string)
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: &str,
    body: &str,
) -> std::io::Result<()> {
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("capstore-oauth-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn credentials(access: &str, refresh: &str) -> StoredCredentials {
        let response: rmcp::transport::auth::OAuthTokenResponse =
            serde_json::from_value(serde_json::json!({
                "access_token": access, "token_type": "bearer", "expires_in": 60,
                "refresh_token": refresh
            }))
            .unwrap();
        StoredCredentials::new(
            "client-1".into(),
            Some(response),
            vec!["mcp".into()],
            Some(1),
        )
    }

    #[tokio::test]
    async fn the_file_round_trips_each_server_and_is_private() {
        let dir = scratch("roundtrip");
        let file = TokenFile::new(dir.join("mcp.json.tokens.json"));
        let docs = file.store("docs");
        let issues = file.store("issues");
        assert!(docs.load().await.unwrap().is_none());
        docs.save(credentials("at-docs", "rt-docs")).await.unwrap();
        issues
            .save(credentials("at-issues", "rt-issues"))
            .await
            .unwrap();
        let loaded = docs.load().await.unwrap().expect("saved");
        assert_eq!(loaded.client_id, "client-1");
        let value = serde_json::to_value(&loaded.token_response).unwrap();
        assert_eq!(value["access_token"], "at-docs");
        assert_eq!(value["refresh_token"], "rt-docs");
        assert_eq!(file.servers().unwrap(), ["docs", "issues"]);
        // Another handle on the same path (another process) reads the same.
        let again = TokenFile::new(file.path()).store("issues");
        let value =
            serde_json::to_value(again.load().await.unwrap().unwrap().token_response).unwrap();
        assert_eq!(value["access_token"], "at-issues");
        docs.clear().await.unwrap();
        assert!(docs.load().await.unwrap().is_none());
        assert_eq!(file.servers().unwrap(), ["issues"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        // Debug output of what rmcp and capstore print never shows a token.
        let printed = format!("{loaded:?} {file:?} {docs:?}");
        assert!(
            !printed.contains("at-docs") && !printed.contains("rt-docs"),
            "{printed}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_corrupt_file_is_an_error_that_names_it_and_quotes_nothing() {
        let dir = scratch("corrupt");
        let path = dir.join("mcp.json.tokens.json");
        std::fs::write(&path, "{\"servers\": {\"docs\": \"at-secret-value\"").unwrap();
        let store = TokenFile::new(&path).store("docs");
        let error = store.load().await.expect_err("corrupt");
        let text = error.to_string();
        assert!(
            matches!(error, AuthError::CredentialStoreError(_)),
            "{text}"
        );
        assert!(text.contains(path.to_str().unwrap()), "{text}");
        assert!(!text.contains("at-secret-value"), "{text}");
        // A save does not overwrite what it cannot read.
        assert!(store.save(credentials("a", "b")).await.is_err());
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("at-secret-value")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn refreshes_are_counted_by_outcome_and_tokens_scrubbed() {
        let dir = scratch("tracked");
        let file = TokenFile::new(dir.join("t.json"));
        let tracking = Arc::new(Tracking::default());
        let store = Tracked {
            inner: Arc::new(file.store("docs")),
            tracking: Arc::clone(&tracking),
        };
        store.save(credentials("at-1", "rt-1")).await.unwrap();
        // A refresh that saves: ok.
        let guard = store.acquire_refresh_guard().await.unwrap();
        store.load().await.unwrap();
        store.save(credentials("at-2", "rt-2")).await.unwrap();
        drop(guard);
        // One that ends without saving: a passing error, the token kept.
        let guard = store.acquire_refresh_guard().await.unwrap();
        store.load().await.unwrap();
        drop(guard);
        // One refused by the server.
        let guard = store.acquire_refresh_guard().await.unwrap();
        let loaded = store.load().await.unwrap().unwrap();
        store.on_refresh_token_rejected(&loaded).await.unwrap();
        drop(guard);
        assert_eq!(
            tracking.counts(),
            Counts {
                ok: 1,
                error: 1,
                rejected: 1
            }
        );
        assert!(store.load().await.unwrap().is_some(), "the token is kept");
        assert_eq!(
            tracking.scrub("bad token at-2 and rt-1"),
            "bad token [token] and [token]"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
