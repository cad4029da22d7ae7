//! The gateway's numbers for an operator: `GET /metrics` on the HTTP listener, in the
//! OpenMetrics text format that Prometheus scrapes, behind the same checks as the admin page
//! (the listener's [`HttpGuard`](super::HttpGuard), then the page's token, here as
//! `Authorization: Bearer TOKEN`).
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `capstore_gateway_calls_total` | counter: calls the executor finished | `server`, `tool`, `outcome` (`ok`, `error`) |
//! | `capstore_gateway_call_duration_seconds` | histogram: a call's time, hooks included | `server`, `tool` |
//! | `capstore_gateway_refused_calls_total` | counter: calls answered without running (held tool, unknown tool, outside a client's scope) | `reason` |
//! | `capstore_gateway_client_calls_total` | counter: calls by a client over HTTP ([`Clients`](super::Clients)) | `client`, `outcome` (`ok`, `error`, `refused`) |
//! | `capstore_gateway_searches_total` | counter: `search_tools` answers | |
//! | `capstore_gateway_search_results` | histogram: tools in a `search_tools` answer | |
//! | `capstore_gateway_tools` | gauge: tools in the store | |
//! | `capstore_gateway_held_tools` | gauge: upstream tools the quarantine holds back | |
//! | `capstore_gateway_upstream_state` | gauge: 1 for each server's current state | `server`, `state` (`connecting`, `ready`, `reconnecting`, `stopped`, `needs_sign_in`) |
//! | `capstore_gateway_upstream_signed_in` | gauge: 1 when an OAuth server holds a usable token, 0 when it needs sign-in | `server` |
//! | `capstore_gateway_token_refreshes_total` | counter: an OAuth server's token refreshes | `server`, `outcome` (`ok`, `error`: failed for a passing reason, token kept; `rejected`: sign-in needed) |
//! | `capstore_gateway_upstream_tools` | gauge: tools a server offered at its last `tools/list` | `server` |
//! | `capstore_gateway_replica_version` | gauge: the log version the gateway's replica holds (`serve --state`; absent without) | |
//! | `capstore_gateway_replica_behind` | gauge: log entries the replica knows of and has not applied yet (its lag) | |
//! | `capstore_gateway_replica_connected` | gauge: 1 while the replica follows the log, 0 while cut off (then it cannot know its lag) | |
//!
//! Built on `prometheus-client`, the Prometheus project's Rust client. What it costs: the
//! calls are counted from the executor's events on the gateway's bus (a hash-map insert at a
//! call's start, one counter and one histogram update at its end), a search one counter and
//! one histogram update; the gauges are read when a scrape asks (the hub's states and held
//! tools, the store's tool count). Label sets grow with the tools called, one per tool and
//! outcome.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::events::{Event, EventBus, EventSubscription};
use crate::mcp::live::{McpHub, ServerState};
use crate::store::Snapshot;
use crate::tools::TOOLS;

type Labels = Vec<(&'static str, String)>;

/// The route the metrics answer on.
pub(super) const PATH: &str = "/metrics";

/// What a scrape reads besides the counters: the hub followed, if any, the store's current
/// snapshot, and the replica's state when the gateway shares a catalog.
pub(super) struct Now<'a> {
    pub(super) hub: Option<&'a McpHub>,
    pub(super) snapshot: &'a Snapshot,
    pub(super) replica: Option<ReplicaLag>,
}

/// Where a gateway that shares its catalog through PostgreSQL (`serve --state`) is in the log,
/// for `/metrics` ([`GatewayOptions::replica`](super::GatewayOptions::replica)).
///
/// ```
/// let lag = capstore::gateway::ReplicaLag { version: 41, behind: 2, connected: true };
/// assert_eq!(lag.version + lag.behind, 43); // the latest version the replica knows of
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaLag {
    /// The log version the replica holds.
    pub version: u64,
    /// Entries the replica knows the log has and has not applied yet.
    pub behind: u64,
    /// Whether it follows the log now (when not, it cannot know how far behind it is).
    pub connected: bool,
}

/// Reads a replica's [`ReplicaLag`] when `/metrics` is scraped (`sync::Replica::status`, for
/// `capstore serve --state`). Cheap to clone.
///
/// ```
/// use capstore::gateway::{ReplicaLag, ReplicaProbe};
/// let probe = ReplicaProbe::new(|| ReplicaLag { version: 7, behind: 0, connected: true });
/// assert_eq!(probe.read().version, 7);
/// ```
#[derive(Clone)]
pub struct ReplicaProbe(Arc<dyn Fn() -> ReplicaLag + Send + Sync>);

impl ReplicaProbe {
    /// A probe calling `read` at each scrape (it must answer from memory).
    ///
    /// See the [type's example](Self).
    pub fn new(read: impl Fn() -> ReplicaLag + Send + Sync + 'static) -> ReplicaProbe {
        ReplicaProbe(Arc::new(read))
    }

    /// The replica's lag now.
    ///
    /// See the [type's example](Self).
    pub fn read(&self) -> ReplicaLag {
        (self.0)()
    }
}

impl std::fmt::Debug for ReplicaProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplicaProbe")
    }
}

/// The gateway's metrics: counted as calls and searches happen, the gauges read at a scrape.
pub(super) struct Metrics {
    registry: Registry,
    calls: Family<Labels, Counter>,
    durations: Family<Labels, Histogram>,
    refused: Family<Labels, Counter>,
    clients: Family<Labels, Counter>,
    searches: Counter,
    results: Histogram,
    tools: Gauge,
    held: Gauge,
    upstream: Family<Labels, Gauge>,
    upstream_tools: Family<Labels, Gauge>,
    /// The replica's gauges: one unlabelled series each, present only when there is a replica.
    replica: [Family<Labels, Gauge>; 3],
    signed_in: Family<Labels, Gauge>,
    refreshes: Family<Labels, Counter>,
    /// When each running call started, by call id and tool.
    running: Arc<Mutex<HashMap<(String, String), Instant>>>,
    _subscription: Option<EventSubscription>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// The upstream server of a tool key (`server/name`); a catalog tool without a source has none.
fn server_of(tool: &str) -> String {
    tool.split_once('/')
        .map_or_else(String::new, |(server, _)| server.to_string())
}

fn duration_histogram() -> Histogram {
    // 1 ms to ~33 s: a local tool to a slow upstream call.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

impl Metrics {
    /// Metrics that count the calls `bus` reports from now on.
    pub(super) fn follow(bus: &EventBus) -> Arc<Metrics> {
        let mut registry = Registry::with_prefix("capstore_gateway");
        let calls = Family::<Labels, Counter>::default();
        registry.register("calls", "Tool calls the executor finished", calls.clone());
        let durations =
            Family::<Labels, Histogram>::new_with_constructor(duration_histogram as fn() -> _);
        registry.register(
            "call_duration_seconds",
            "Time of a tool call, hooks included",
            durations.clone(),
        );
        let refused = Family::<Labels, Counter>::default();
        registry.register(
            "refused_calls",
            "Calls answered without running: a held tool, an unknown one",
            refused.clone(),
        );
        let clients = Family::<Labels, Counter>::default();
        registry.register(
            "client_calls",
            "Calls by a client over HTTP, by how they ended",
            clients.clone(),
        );
        let searches = Counter::default();
        registry.register("searches", "search_tools answers", searches.clone());
        let results = Histogram::new([0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
        registry.register(
            "search_results",
            "Tools in a search_tools answer",
            results.clone(),
        );
        let tools = Gauge::default();
        registry.register("tools", "Tools in the store", tools.clone());
        let held = Gauge::default();
        registry.register(
            "held_tools",
            "Upstream tools the quarantine holds back",
            held.clone(),
        );
        let upstream = Family::<Labels, Gauge>::default();
        registry.register(
            "upstream_state",
            "1 for each upstream server's current state",
            upstream.clone(),
        );
        let upstream_tools = Family::<Labels, Gauge>::default();
        registry.register(
            "upstream_tools",
            "Tools an upstream server offered at its last tools/list",
            upstream_tools.clone(),
        );
        let replica: [Family<Labels, Gauge>; 3] = Default::default();
        for (family, (name, help)) in replica.iter().zip([
            (
                "replica_version",
                "The log version the gateway's replica holds",
            ),
            (
                "replica_behind",
                "Log entries the replica knows of and has not applied yet",
            ),
            (
                "replica_connected",
                "1 while the replica follows the log, 0 while cut off from it",
            ),
        ]) {
            registry.register(name, help, family.clone());
        }
        let signed_in = Family::<Labels, Gauge>::default();
        registry.register(
            "upstream_signed_in",
            "1 when an OAuth upstream server holds a usable token, 0 when it needs sign-in",
            signed_in.clone(),
        );
        let refreshes = Family::<Labels, Counter>::default();
        registry.register(
            "token_refreshes",
            "An OAuth upstream server's token refreshes, by outcome",
            refreshes.clone(),
        );
        let running: Arc<Mutex<HashMap<(String, String), Instant>>> = Arc::default();
        let mut metrics = Metrics {
            registry,
            calls,
            durations,
            refused,
            clients,
            searches,
            results,
            tools,
            held,
            upstream,
            upstream_tools,
            replica,
            signed_in,
            refreshes,
            running,
            _subscription: None,
        };
        let (calls, durations, running, clients) = (
            metrics.calls.clone(),
            metrics.durations.clone(),
            Arc::clone(&metrics.running),
            metrics.clients.clone(),
        );
        metrics._subscription = Some(bus.subscribe(move |event| match event {
            Event::ToolCallStarted { call_id, tool } => {
                running
                    .lock()
                    .insert((call_id.clone(), tool.clone()), Instant::now());
            }
            Event::ToolCallFinished { call_id, tool, .. } => {
                end(&calls, &durations, &running, call_id, tool, "ok");
            }
            Event::ToolCallFailed { call_id, tool, .. } => {
                end(&calls, &durations, &running, call_id, tool, "error");
            }
            Event::GatewayCall {
                client, outcome, ..
            } => {
                clients
                    .get_or_create(&vec![
                        ("client", client.clone()),
                        ("outcome", outcome.clone()),
                    ])
                    .inc();
            }
            _ => {}
        }));
        Arc::new(metrics)
    }

    /// A `search_tools` answer of `tools` tools.
    pub(super) fn searched(&self, tools: usize) {
        self.searches.inc();
        self.results.observe(tools as f64);
    }

    /// A call answered without running, for `reason` (`held`, `unknown_tool`).
    pub(super) fn refused(&self, reason: &'static str) {
        self.refused
            .get_or_create(&vec![("reason", reason.to_string())])
            .inc();
    }

    /// The metrics as a scrape reads them: the gauges set from `now`, then every metric in
    /// the OpenMetrics text format.
    pub(super) fn render(&self, now: &Now<'_>) -> String {
        let tools = now.snapshot.count(&TOOLS).unwrap_or(0);
        self.tools.set(i64::try_from(tools).unwrap_or(i64::MAX));
        self.upstream.clear();
        self.upstream_tools.clear();
        let mut held = 0;
        if let Some(hub) = now.hub {
            held = hub.held().len();
            for server in hub.status() {
                let state = match server.state {
                    ServerState::Connecting => "connecting",
                    ServerState::Ready => "ready",
                    ServerState::Reconnecting => "reconnecting",
                    ServerState::Stopped => "stopped",
                    ServerState::SignInRequired => "needs_sign_in",
                };
                self.upstream
                    .get_or_create(&vec![
                        ("server", server.name.clone()),
                        ("state", state.to_string()),
                    ])
                    .set(1);
                self.upstream_tools
                    .get_or_create(&vec![("server", server.name.clone())])
                    .set(i64::try_from(server.tools).unwrap_or(i64::MAX));
                if let Some(auth) = &server.auth {
                    let signed_in = auth.signed_in && server.state != ServerState::SignInRequired;
                    self.signed_in
                        .get_or_create(&vec![("server", server.name.clone())])
                        .set(i64::from(signed_in));
                    let counts = auth.refreshes;
                    for (outcome, total) in [
                        ("ok", counts.ok),
                        ("error", counts.error),
                        ("rejected", counts.rejected),
                    ] {
                        // The hub counts; the counter catches up with its total at a scrape.
                        let counter = self.refreshes.get_or_create(&vec![
                            ("server", server.name.clone()),
                            ("outcome", outcome.to_string()),
                        ]);
                        counter.inc_by(total.saturating_sub(counter.get()));
                    }
                }
            }
        }
        self.held.set(i64::try_from(held).unwrap_or(i64::MAX));
        if let Some(lag) = now.replica {
            let at = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            let [version, behind, connected] = &self.replica;
            version.get_or_create(&Vec::new()).set(at(lag.version));
            behind.get_or_create(&Vec::new()).set(at(lag.behind));
            connected
                .get_or_create(&Vec::new())
                .set(i64::from(lag.connected));
        }
        let mut text = String::new();
        // Writing into a String cannot fail; an encoder error would leave what it wrote.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// A call's end: counted by outcome, timed from its start when the start was seen.
fn end(
    calls: &Family<Labels, Counter>,
    durations: &Family<Labels, Histogram>,
    running: &Mutex<HashMap<(String, String), Instant>>,
    call_id: &str,
    tool: &str,
    outcome: &'static str,
) {
    let server = server_of(tool);
    calls
        .get_or_create(&vec![
            ("server", server.clone()),
            ("tool", tool.to_string()),
            ("outcome", outcome.to_string()),
        ])
        .inc();
    let started = running
        .lock()
        .remove(&(call_id.to_string(), tool.to_string()));
    if let Some(started) = started {
        durations
            .get_or_create(&vec![("server", server), ("tool", tool.to_string())])
            .observe(started.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn calls_are_counted_by_server_tool_and_outcome_and_timed() {
        let bus = EventBus::new();
        let metrics = Metrics::follow(&bus);
        for (id, tool, ok) in [
            ("1", "fs/read", true),
            ("2", "fs/read", false),
            ("3", "t/now", true),
        ] {
            bus.emit(&Event::ToolCallStarted {
                call_id: id.into(),
                tool: tool.into(),
            });
            bus.emit(&if ok {
                Event::ToolCallFinished {
                    call_id: id.into(),
                    tool: tool.into(),
                    elapsed: std::time::Duration::from_millis(3),
                }
            } else {
                Event::ToolCallFailed {
                    call_id: id.into(),
                    tool: tool.into(),
                    error: "no such file".into(),
                }
            });
        }
        metrics.searched(5);
        metrics.refused("held");
        bus.emit(&Event::GatewayCall {
            client: "ci".into(),
            call_id: "4".into(),
            tool: "fs/write".into(),
            outcome: "refused".into(),
            arguments: None,
        });
        let store = Store::new();
        let text = metrics.render(&Now {
            hub: None,
            snapshot: &store.snapshot(),
            replica: None,
        });
        assert!(
            !text.contains("capstore_gateway_replica_version "),
            "{text}"
        );
        let text = metrics.render(&Now {
            hub: None,
            snapshot: &store.snapshot(),
            replica: Some(ReplicaLag {
                version: 12,
                behind: 3,
                connected: false,
            }),
        });
        for line in [
            "capstore_gateway_replica_version 12",
            "capstore_gateway_replica_behind 3",
            "capstore_gateway_replica_connected 0",
            r#"capstore_gateway_calls_total{server="fs",tool="fs/read",outcome="ok"} 1"#,
            r#"capstore_gateway_calls_total{server="fs",tool="fs/read",outcome="error"} 1"#,
            r#"capstore_gateway_calls_total{server="t",tool="t/now",outcome="ok"} 1"#,
            r#"capstore_gateway_call_duration_seconds_count{server="fs",tool="fs/read"} 2"#,
            r#"capstore_gateway_refused_calls_total{reason="held"} 1"#,
            r#"capstore_gateway_client_calls_total{client="ci",outcome="refused"} 1"#,
            "capstore_gateway_searches_total 1",
            "capstore_gateway_search_results_sum 5.0",
            "capstore_gateway_tools 0",
            "capstore_gateway_held_tools 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(metrics.running.lock().is_empty());
    }
}
