//! One OAuth server's sign-in as its session sees it (feature `mcp-oauth`): the rmcp
//! `AuthClient` its connection sends every request through (which asks the store for the
//! token, refreshing it before expiry), the check a call makes before it is sent, and the wait
//! for a new sign-in. What the protocol does is rmcp's; see [`oauth`](super::oauth) for the
//! whole picture and what it costs.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager, CredentialStore};
use sha2::{Digest, Sha256};
use tokio::sync::{Notify, watch};

use super::error::LiveError;
use super::oauth::{TokenStores, Tracked, Tracking, has_token};
use super::status::{AuthStatus, RefreshCounts};

/// How often a server that needs sign-in looks at its store for a new token.
const SIGN_IN_POLL: Duration = Duration::from_secs(1);
/// Tries of a refresh that fails for a passing reason, before a call gives up (with the waits
/// between them: 250 ms, then 500 ms).
const REFRESH_TRIES: u32 = 3;

/// The HTTP client of an OAuth server's connection.
pub(crate) type Client = AuthClient<reqwest::Client>;

/// What checking the token before a call found.
pub(crate) enum TokenCheck {
    /// A token that is not about to expire (refreshed if it was).
    Ready,
    /// No usable token: sign-in is needed. Why, in words.
    SignIn(String),
    /// The refresh failed for a passing reason, every try; the token is kept. Why.
    Failed(String),
}

/// An OAuth server's sign-in state, kept by its session across connections.
pub(crate) struct OAuthSession {
    server: String,
    stores: Option<TokenStores>,
    tracking: Arc<Tracking>,
    client: RwLock<Option<Client>>,
    signed_in: Mutex<bool>,
    last_refresh_error: Mutex<Option<String>>,
    /// Told by a call that found sign-in needed, so the task drops the connection.
    pub(crate) sign_in_needed: Notify,
}

impl OAuthSession {
    pub(crate) fn new(server: &str, stores: Option<TokenStores>) -> Self {
        OAuthSession {
            server: server.to_string(),
            stores,
            tracking: Arc::default(),
            client: RwLock::new(None),
            signed_in: Mutex::new(false),
            last_refresh_error: Mutex::new(None),
            sign_in_needed: Notify::new(),
        }
    }

    /// The command that signs in to this server.
    pub(crate) fn command(&self) -> String {
        match &self.stores {
            Some(stores) => stores.sign_in_command(&self.server),
            None => super::oauth::sign_in_command(&self.server, None),
        }
    }

    pub(crate) fn status(&self) -> AuthStatus {
        AuthStatus {
            signed_in: *self.signed_in.lock(),
            sign_in_command: self.command(),
            refreshes: {
                let counts = self.tracking.counts();
                RefreshCounts {
                    ok: counts.ok,
                    error: counts.error,
                    rejected: counts.rejected,
                }
            },
            last_refresh_error: self.last_refresh_error.lock().clone(),
        }
    }

    /// `text` without any token the store handed out.
    pub(crate) fn scrub(&self, text: impl Into<String>) -> String {
        self.tracking.scrub(text)
    }

    pub(crate) fn sign_in_error(&self, reason: impl Into<String>) -> LiveError {
        LiveError::SignInRequired {
            server: self.server.clone(),
            reason: reason.into(),
            command: self.command(),
        }
    }

    /// The client of the connection in use, if any.
    pub(crate) fn current(&self) -> Option<Client> {
        self.client.read().clone()
    }

    /// Marks the server as needing sign-in, and forgets the connection's client.
    pub(crate) fn signed_out(&self) {
        *self.signed_in.lock() = false;
        *self.client.write() = None;
    }

    /// A client for a new connection to `url`: the stored token looked for first (no token: sign
    /// in, without a round trip), then the authorization server's metadata discovered (within
    /// `within`), and the token checked (refreshed if due).
    pub(crate) async fn connect(&self, url: &str, within: Duration) -> Result<Client, LiveError> {
        let Some(stores) = &self.stores else {
            return Err(self.sign_in_error(
                "no token store is configured (LiveOptions::tokens); capstore serve uses the \
                 file beside the configuration",
            ));
        };
        let store = stores.store(&self.server);
        match store.load().await {
            Ok(Some(credentials)) if has_token(&credentials) => {}
            Ok(_) => return Err(self.sign_in_error("no token is stored")),
            Err(error) => return Err(self.handshake(format!("token store: {error}"))),
        }
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| self.handshake(format!("OAuth: {e}")))?;
        manager.set_credential_store(Tracked {
            inner: store,
            tracking: Arc::clone(&self.tracking),
        });
        let restored = tokio::time::timeout(within, manager.initialize_from_store())
            .await
            .map_err(|_| LiveError::Timeout {
                server: self.server.clone(),
                phase: "OAuth discovery",
                after: within,
                stderr: None,
            })?
            .map_err(|e| self.handshake(format!("OAuth discovery failed: {e}")))?;
        if !restored {
            return Err(
                self.sign_in_error("the stored token was issued by another authorization server")
            );
        }
        let http = reqwest::Client::builder()
            // No redirects: the bearer token never follows a response to another place.
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| self.handshake(format!("HTTP client: {e}")))?;
        let client = AuthClient::new(http, manager);
        match self.check(&client).await {
            TokenCheck::Ready => {}
            TokenCheck::SignIn(reason) => return Err(self.sign_in_error(reason)),
            TokenCheck::Failed(reason) => {
                return Err(LiveError::TokenRefresh {
                    server: self.server.clone(),
                    reason,
                });
            }
        }
        *self.client.write() = Some(client.clone());
        Ok(client)
    }

    fn handshake(&self, reason: String) -> LiveError {
        LiveError::Handshake {
            server: self.server.clone(),
            reason: self.scrub(reason),
            stderr: None,
        }
    }

    /// Asks rmcp for the token (refreshed when it is due), retrying a refresh that fails for
    /// a passing reason; the token stays stored whatever happens.
    pub(crate) async fn check(&self, client: &Client) -> TokenCheck {
        let mut wait = Duration::from_millis(250);
        let mut reason = String::new();
        for attempt in 1..=REFRESH_TRIES {
            match client.get_access_token().await {
                Ok(_token) => {
                    *self.signed_in.lock() = true;
                    *self.last_refresh_error.lock() = None;
                    return TokenCheck::Ready;
                }
                Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
                    *self.signed_in.lock() = false;
                    return TokenCheck::SignIn(
                        "the stored token expired and cannot be refreshed: the authorization \
                         server refused the refresh token, or there is none"
                            .to_string(),
                    );
                }
                Err(error) => {
                    reason = self.scrub(error.to_string());
                    *self.last_refresh_error.lock() = Some(reason.clone());
                    if attempt < REFRESH_TRIES {
                        tokio::time::sleep(wait).await;
                        wait *= 2;
                    }
                }
            }
        }
        TokenCheck::Failed(reason)
    }

    /// Waits until the store holds a token other than the one it holds now (a new sign-in):
    /// `true`, or `false` when told to shut down.
    pub(crate) async fn wait_for_sign_in(&self, shutdown: &mut watch::Receiver<bool>) -> bool {
        let Some(stores) = &self.stores else {
            let _ = shutdown.changed().await;
            return false;
        };
        let store = stores.store(&self.server);
        let stale = fingerprint(store.as_ref()).await;
        loop {
            tokio::select! {
                () = tokio::time::sleep(SIGN_IN_POLL) => {}
                _ = shutdown.changed() => return false,
            }
            let now = fingerprint(store.as_ref()).await;
            if now.is_some() && now != stale {
                return true;
            }
        }
    }
}

/// A hash of the stored credentials with a token (`None` without), to notice a new sign-in
/// without keeping the token.
async fn fingerprint(store: &dyn CredentialStore) -> Option<Vec<u8>> {
    let credentials = store.load().await.ok()??;
    if !has_token(&credentials) {
        return None;
    }
    let bytes = serde_json::to_vec(&credentials).ok()?;
    Some(Sha256::digest(bytes).to_vec())
}
