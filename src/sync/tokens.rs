//! Upstream OAuth tokens shared through PostgreSQL (features `postgres` and `mcp-oauth`): one
//! sign-in (`capstore auth SERVER --state URL`), and every gateway of the catalog uses the same
//! token and refreshes it, one refresh at a time.
//!
//! A server's credentials (rmcp's `StoredCredentials`: the access and refresh tokens, the
//! client registration's id, when they were received) are one row of the table `oauth_tokens`
//! in the log's namespace. They do not travel through the log: a secret has no place in a log
//! that every replica keeps and compaction copies, so each read goes to the row. A refresh
//! holds a PostgreSQL advisory lock (per namespace and server) from the moment rmcp decides to
//! refresh until it has saved the new token, on a connection of its own: a replica that wants
//! to refresh meanwhile waits, then loads the refreshed token. A refresh that is rotated by the
//! authorization server (a new refresh token each time) therefore never races another replica
//! using the old one.
//!
//! What it costs: a request to an OAuth server reads one row (one round trip on a connection
//! kept open, ~0.2 ms on loopback); a refresh opens a connection for its lock. Tokens are kept
//! as PostgreSQL keeps any row: give the role that reads the namespace to the gateways only.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_postgres::Client;

use crate::mcp::live::oauth::{
    CredentialRefreshGuard, CredentialStore, StoredCredentials, TokenStores,
};
use rmcp::transport::auth::AuthError;

use super::log::{self, timed};
use super::{SyncError, SyncOptions, check_namespace};

/// The token stores of every OAuth server, shared through PostgreSQL at `url` by every gateway
/// of the catalog (`capstore serve --state URL`): give them to the hub
/// (`LiveOptions::tokens`) and to `capstore auth`'s sign-in. Nothing is connected until first
/// use; `config` is the configuration named in sign-in messages.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use capstore::mcp::live::oauth::CredentialStore;
/// use capstore::sync::{SyncOptions, shared_tokens};
/// let url = "postgres://capstore@127.0.0.1:55432/postgres";
/// let stores = shared_tokens(url, &SyncOptions::default(), None)?;
/// let signed_in = stores.store("docs").load().await?.is_some();
/// println!("docs is signed in: {signed_in}");
/// # Ok(()) }
/// ```
pub fn shared_tokens(
    url: &str,
    options: &SyncOptions,
    config: Option<std::path::PathBuf>,
) -> Result<TokenStores, SyncError> {
    check_namespace(&options.namespace)?;
    let shared = Arc::new(Shared {
        url: url.to_string(),
        options: options.clone(),
        client: tokio::sync::Mutex::new(None),
    });
    let stores = TokenStores::new(move |server| {
        Arc::new(PgTokenStore {
            shared: Arc::clone(&shared),
            server: server.to_string(),
        }) as Arc<dyn CredentialStore>
    });
    Ok(match config {
        Some(config) => stores.with_config(config),
        None => stores,
    })
}

/// What the stores of one [`shared_tokens`] share: where PostgreSQL is, and one connection for
/// reads and writes (opened at first use, again after it breaks).
struct Shared {
    url: String,
    options: SyncOptions,
    client: tokio::sync::Mutex<Option<Client>>,
}

/// One server's credentials in PostgreSQL.
struct PgTokenStore {
    shared: Arc<Shared>,
    server: String,
}

impl PgTokenStore {
    /// Runs one statement, made by `statement` with the namespace, on the shared connection
    /// (opened, with the log's tables, when there is none or it closed). A failure drops the
    /// connection, so the next use opens a new one.
    async fn run<T>(
        &self,
        statement: impl AsyncFnOnce(&Client, &str) -> Result<T, SyncError>,
    ) -> Result<T, SyncError> {
        let Shared {
            url,
            options,
            client,
        } = &*self.shared;
        let mut client = client.lock().await;
        let connected = match client.take() {
            Some(open) if !open.is_closed() => open,
            _ => {
                let mut fresh = log::connect_writer(url, options).await?;
                log::ensure_schema(&mut fresh, options).await?;
                fresh
            }
        };
        let answer = statement(&connected, &options.namespace).await;
        if answer.is_ok() {
            *client = Some(connected);
        }
        answer
    }
}

/// A store failure for rmcp: kept apart from "sign in again" (a store that cannot be read
/// does not mean the token is bad). The message never holds a token: it is PostgreSQL's or
/// this module's.
fn store_error(e: SyncError) -> AuthError {
    AuthError::CredentialStoreError(format!("the shared OAuth tokens: {e}"))
}

#[async_trait]
impl CredentialStore for PgTokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let t = self.shared.options.query_timeout;
        let row = self
            .run(async |c, ns| {
                let sql = format!("SELECT credentials FROM {ns}.oauth_tokens WHERE server = $1");
                timed(
                    t,
                    "reading a shared OAuth token",
                    c.query_opt(&sql, &[&self.server]),
                )
                .await
            })
            .await
            .map_err(store_error)?;
        let Some(row) = row else { return Ok(None) };
        let text: String = row.get(0);
        // Where it is wrong only: serde's message can quote the value it met, a token.
        serde_json::from_str(&text).map(Some).map_err(|e| {
            AuthError::CredentialStoreError(format!(
                "the shared OAuth token of `{}` is unreadable (line {}, column {}); sign in again",
                self.server,
                e.line(),
                e.column()
            ))
        })
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let text = serde_json::to_string(&credentials).map_err(|_| {
            AuthError::CredentialStoreError(format!(
                "the OAuth token of `{}` could not be encoded",
                self.server
            ))
        })?;
        let t = self.shared.options.query_timeout;
        self.run(async |c, ns| {
            let sql = format!(
                "INSERT INTO {ns}.oauth_tokens (server, credentials) VALUES ($1, $2)
                 ON CONFLICT (server) DO UPDATE
                 SET credentials = EXCLUDED.credentials, saved_at = now()"
            );
            timed(
                t,
                "saving a shared OAuth token",
                c.execute(&sql, &[&self.server, &text]),
            )
            .await
            .map(drop)
        })
        .await
        .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let t = self.shared.options.query_timeout;
        self.run(async |c, ns| {
            let sql = format!("DELETE FROM {ns}.oauth_tokens WHERE server = $1");
            timed(
                t,
                "clearing a shared OAuth token",
                c.execute(&sql, &[&self.server]),
            )
            .await
            .map(drop)
        })
        .await
        .map_err(store_error)
    }

    /// An advisory lock on a connection of the refresh's own, held until the guard drops (the
    /// connection closes with it, and PostgreSQL releases the lock with the session). Waiting
    /// for another replica's refresh is bounded by the query timeout.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let options = &self.shared.options;
        let client = log::connect_writer(&self.shared.url, options)
            .await
            .map_err(store_error)?;
        let key = format!("{}/oauth/{}", options.namespace, self.server);
        timed(
            options.query_timeout,
            "waiting for another gateway's token refresh",
            client.execute("SELECT pg_advisory_lock(hashtext($1))", &[&key]),
        )
        .await
        .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new(client)))
    }
}
