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
//! log in batches (`Replica::usage_queue`: one entry per gateway per second at most, or per
//! 1,000 turns), and every gateway learns from every gateway's calls.

use std::sync::Arc;

use capstore::events::EventSubscription;
use capstore::gateway::{ReplicaLag, ReplicaProbe, UsageSink};
use capstore::sync::{AuditLog, Batch, LOG_BATCH_LIMITS, Replica, ReplicaUsageQueue, SyncOptions};
use capstore::{EventBus, HANDLERS, HOOKS, SKILLS, Snapshot, Store, Subscription, TOOLS};

use super::source::progress;

/// How long the gateway waits for its own catalog write to come back through the log.
const PUBLISH_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long the gateway, stopping, may take to send the usage it holds.
const USAGE_FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What keeps the sharing going: dropped when the gateway stops.
pub(crate) struct SharedState {
    /// Its follower keeps the gateway's store (through the mirror) on the log's version; shared
    /// with the gateway's `/metrics`, which reads its lag.
    replica: Arc<Replica>,
    /// The sessions' finished turns, sent through the log in batches.
    usage: ReplicaUsageQueue,
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
    /// Where the gateway's finished turns go: the replica's usage queue, which sends them
    /// through the shared log in batches, so that every gateway learns from every gateway's
    /// calls; the log's usage comes back into the gateway's store through the mirror. While
    /// PostgreSQL is away the queue holds the turns and tries again; the gateway goes on
    /// serving.
    pub(crate) fn usage_sink(&self) -> UsageSink {
        let queue = self.usage.clone();
        UsageSink::new(move |turn| {
            queue.push(turn);
        })
    }

    /// The replica's place in the log, for `/metrics`.
    pub(crate) fn replica_probe(&self) -> ReplicaProbe {
        let replica = Arc::clone(&self.replica);
        ReplicaProbe::new(move || {
            let status = replica.status();
            ReplicaLag {
                version: status.version,
                behind: status.latest_known.saturating_sub(status.version),
                connected: status.connected,
            }
        })
    }

    /// Sends the usage held, before the gateway's runtime stops (what fails is said on stderr).
    pub(crate) fn flush_usage(&self, runtime: &tokio::runtime::Runtime) {
        let flushed = runtime.block_on(tokio::time::timeout(USAGE_FLUSH_WAIT, self.usage.flush()));
        let held = self.usage.status().pending;
        match flushed {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => progress(&format!("usage: {held} turns not shared: {e}")),
            Err(_) => progress(&format!(
                "usage: {held} turns not shared within {USAGE_FLUSH_WAIT:?}"
            )),
        }
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
        let usage = replica.usage_queue(LOG_BATCH_LIMITS);
        Ok::<SharedState, String>(SharedState {
            replica: Arc::new(replica),
            usage,
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
