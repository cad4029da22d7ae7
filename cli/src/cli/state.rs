//! `capstore serve --state postgres://...`: the gateway's catalog shared with every other
//! gateway on the same PostgreSQL, and its tool calls audited there (`capstore::sync`).
//!
//! The catalog this gateway was started with (`--catalog`, `--mcp` lists, the bundled one; not
//! the live servers' tools, which only the gateway that connected them can call) is written to
//! the shared log where it differs from what the log holds; then the log's catalog is kept
//! in the gateway's store (`Replica::mirror_into`), beside the live servers' tools. Every tool
//! call's events go to the `audit` table. The quarantine's trust state is the shared one
//! (`Replica::quarantine`) instead of the configuration's trust file: one approval
//! (`capstore approve --state URL`), every gateway. So is usage: each session's turns go to the
//! log (`Replica::learn`), and every gateway learns from every gateway's calls.

use std::sync::Arc;

use capstore::events::EventSubscription;
use capstore::gateway::UsageSink;
use capstore::sync::{AuditLog, Batch, Replica, SyncOptions};
use capstore::{EventBus, HANDLERS, HOOKS, SKILLS, Snapshot, Store, Subscription, TOOLS};

use super::source::progress;

/// How long the gateway waits for its own catalog write to come back through the log.
const PUBLISH_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What keeps the sharing going: dropped when the gateway stops.
pub(crate) struct SharedState {
    replica: Arc<Replica>,
    _mirror: Subscription,
    _audit: AuditLog,
    _recording: EventSubscription,
    /// The bus the gateway reports its calls on.
    pub(crate) events: EventBus,
}

/// Opens the gateway's replica on `runtime` (before the live servers connect: their tools are
/// judged against its trust state).
pub(crate) fn open(
    url: &str,
    options: SyncOptions,
    runtime: &tokio::runtime::Runtime,
) -> Result<Replica, String> {
    runtime
        .block_on(Replica::open(url, options))
        .map_err(|e| format!("--state: {e}"))
}

/// How to name `url` in a message a client may read: as it is, unless it may hold a password.
pub(crate) fn shown_url(url: &str) -> &str {
    let userinfo = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .map(|(userinfo, _)| userinfo);
    if url.to_ascii_lowercase().contains("password") || userinfo.is_some_and(|u| u.contains(':')) {
        "URL"
    } else {
        url
    }
}

impl SharedState {
    /// Where the gateway's finished turns go: the shared log (`Replica::learn`, on `runtime`),
    /// so that every gateway learns from every gateway's calls; the log's usage comes back
    /// into the gateway's store through the mirror. A turn the log does not take (PostgreSQL
    /// away) is lost, and said on stderr; the gateway goes on serving.
    pub(crate) fn usage_sink(&self, runtime: &tokio::runtime::Handle) -> UsageSink {
        let (replica, runtime) = (Arc::clone(&self.replica), runtime.clone());
        UsageSink::new(move |turn| {
            let replica = Arc::clone(&replica);
            runtime.spawn(async move {
                if let Err(e) = replica.learn(turn).await {
                    progress(&format!("usage: a turn not shared: {e}"));
                }
            });
        })
    }
}

/// Publishes `store`'s catalog through `replica`, and mirrors the shared one into it.
pub(crate) fn share(
    replica: Replica,
    url: &str,
    options: SyncOptions,
    store: &Store,
    runtime: &tokio::runtime::Runtime,
) -> Result<SharedState, String> {
    let ns = options.namespace.clone();
    runtime.block_on(async {
        let batch = differences(&store.snapshot(), &replica.snapshot())
            .map_err(|e| format!("--state: {e}"))?;
        if !batch.is_empty() {
            let n = batch.len();
            let version = replica
                .write(batch)
                .await
                .map_err(|e| format!("--state: publishing the catalog: {e}"))?;
            replica
                .wait_for(version, PUBLISH_WAIT)
                .await
                .map_err(|e| format!("--state: {e}"))?;
            progress(&format!(
                "published {n} catalog records as version {version}"
            ));
        }
        let mirror = replica
            .mirror_into(store)
            .map_err(|e| format!("--state: {e}"))?;
        let audit = AuditLog::open(url, options)
            .await
            .map_err(|e| format!("--state: {e}"))?;
        let events = EventBus::new();
        let recording = audit.record(&events);
        progress(&format!(
            "sharing the catalog through PostgreSQL (namespace {ns}) at version {}",
            replica.version()
        ));
        Ok::<SharedState, String>(SharedState {
            replica: Arc::new(replica),
            _mirror: mirror,
            _audit: audit,
            _recording: recording,
            events,
        })
    })
}

/// The writes that make the log's catalog hold `local`'s: every skill and hook, and every tool
/// without a handler (a live server's tool has one, and stays local), that the log lacks or
/// holds otherwise. Nothing is deleted: other gateways' records stay.
fn differences(local: &Snapshot, shared: &Snapshot) -> Result<Batch, Box<dyn std::error::Error>> {
    let mut batch = Batch::new();
    for (key, tool) in local.iter(&TOOLS)? {
        if !local.contains(&HANDLERS, key)? && shared.get(&TOOLS, key)? != Some(tool) {
            batch.put(&TOOLS, tool.clone())?;
        }
    }
    for (key, skill) in local.iter(&SKILLS)? {
        if shared.get(&SKILLS, key)? != Some(skill) {
            batch.put(&SKILLS, skill.clone())?;
        }
    }
    for (key, hook) in local.iter(&HOOKS)? {
        if shared.get(&HOOKS, key)? != Some(hook) {
            batch.put(&HOOKS, hook.clone())?;
        }
    }
    Ok(batch)
}
