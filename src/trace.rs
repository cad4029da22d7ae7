//! OpenTelemetry traces of the gateway's calls (feature `otel`): where a tool call's time went,
//! from the client through the gateway to the upstream server, in the trace the client started.
//!
//! [`Tracing::start`] (or [`Tracing::from_env`], which reads the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT`) exports spans over OTLP/HTTP (protobuf) to a collector
//! (the OpenTelemetry Collector, Jaeger, Tempo, ...) until it is dropped or
//! [shut down](Tracing::shutdown). Meanwhile each tool call the [gateway](crate::gateway)
//! answers gives:
//! - a **server** span, `tools/call TOOL`: it continues the client's trace when the request
//!   carries a W3C `traceparent` (the HTTP header over `--http`, or the MCP request's
//!   `_meta.traceparent`, which stdio clients can send), with the attributes
//!   `mcp.method.name`, `gen_ai.tool.name` (the tool the client asked for), `capstore.client`
//!   (the [client](crate::gateway::Client) whose token the request carried, over HTTP) and
//!   `capstore.outcome` (`ok`, `error` or `refused`); an error or a refusal sets the span's
//!   status to error, with why;
//! - a **client** span for the call forwarded upstream, a child of the server span,
//!   `tools/call TOOL` again with `capstore.upstream.server`, `gen_ai.tool.name` (the
//!   server's own name for the tool) and, when it failed, the status error and `error.type`
//!   (`tool`, `timeout`, `protocol`, `disconnected`, `unavailable`, `invalid_arguments`). Its
//!   start and end are the upstream call's duration. The trace goes on upstream: the
//!   forwarded request carries `_meta.traceparent` (MCP's own place for it, on every
//!   transport). Not as an HTTP header: rmcp's Streamable HTTP client sends the headers
//!   fixed when the connection was made, none per request.
//!
//! # What it costs
//! Without the feature, nothing: none of this is compiled, and the library pulls in no
//! OpenTelemetry crate. With it but no exporter started, each call reads one atomic flag.
//! While exporting: two spans per forwarded call (a few allocations each) handed to a batch
//! queue (2,048 spans; past that, spans are dropped rather than waited for), which a thread of
//! the SDK's own sends every 5 s (`OTEL_BSP_SCHEDULE_DELAY`, in milliseconds, changes it)
//! with reqwest's blocking client, each export given up after 5 s. A slow or unreachable
//! collector therefore never slows a call; it loses spans. The crates: `opentelemetry`,
//! `opentelemetry_sdk` and `opentelemetry-otlp` with `opentelemetry-proto` and `prost`; the
//! HTTP client is the reqwest already in the tree for rmcp.
//!
//! ```no_run
//! # fn main() -> Result<(), capstore::trace::TraceError> {
//! let tracing = capstore::trace::Tracing::start("http://127.0.0.1:4318")?;
//! // ... serve the gateway ...
//! tracing.shutdown()?; // what is queued is sent first
//! # Ok(()) }
//! ```

use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

/// Whether spans are exported now: the one thing a call reads when they are not.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The tracer of the [`Tracing`] started last, with its number, while it runs.
static TRACER: RwLock<Option<(u64, SdkTracer)>> = RwLock::new(None);
/// The number of the next [`Tracing`], so that stopping one that was replaced leaves the one
/// that replaced it running.
static STARTED: AtomicU64 = AtomicU64::new(0);

/// How long one export may take before it is given up (and its spans lost).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`Tracing::shutdown`] waits for what is queued to be sent.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// The path under a collector's base address where OTLP/HTTP takes spans.
const TRACES_PATH: &str = "/v1/traces";

/// Why traces cannot be exported: an endpoint that is no URL, or an exporter that could not
/// be built or shut down.
///
/// ```
/// let error = capstore::trace::Tracing::start("not a url").unwrap_err();
/// assert!(error.to_string().contains("not a url"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError(pub String);

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TraceError {}

/// Spans exported to an OTLP/HTTP collector, while this value lives: dropping it (or
/// [`shutdown`](Self::shutdown)) sends what is queued and stops. One at a time: starting
/// another replaces it. See the [module docs](self).
///
/// ```no_run
/// # fn main() -> Result<(), capstore::trace::TraceError> {
/// let tracing = capstore::trace::Tracing::start("http://127.0.0.1:4318")?;
/// assert_eq!(tracing.endpoint(), "http://127.0.0.1:4318/v1/traces");
/// # Ok(()) }
/// ```
pub struct Tracing {
    provider: SdkTracerProvider,
    endpoint: String,
    /// Its number in `TRACER`.
    number: u64,
    stopped: bool,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracing")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Tracing {
    /// Exports to the collector at `endpoint`, its base address as `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// gives it (`http://127.0.0.1:4318`): spans are posted to `ENDPOINT/v1/traces`. Nothing
    /// is sent yet: a collector that is down loses spans later, it does not fail this.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), capstore::trace::TraceError> {
    /// let tracing = capstore::trace::Tracing::start("http://collector.internal:4318/")?;
    /// assert_eq!(tracing.endpoint(), "http://collector.internal:4318/v1/traces");
    /// # Ok(()) }
    /// ```
    pub fn start(endpoint: &str) -> Result<Tracing, TraceError> {
        let base = endpoint.trim().trim_end_matches('/');
        Self::start_at(format!("{base}{TRACES_PATH}"))
    }

    /// Exports to the collector the standard variables name:
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the whole URL spans are posted to) or else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (a base address, as [`start`](Self::start) takes).
    /// `Ok(None)` when neither is set: nothing is exported, and a call costs one atomic read.
    ///
    /// ```
    /// # fn main() -> Result<(), capstore::trace::TraceError> {
    /// if let Some(tracing) = capstore::trace::Tracing::from_env()? {
    ///     eprintln!("traces to {}", tracing.endpoint());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn from_env() -> Result<Option<Tracing>, TraceError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(url) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            return Self::start_at(url.trim().to_string()).map(Some);
        }
        var("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(|base| Self::start(&base))
            .transpose()
    }

    /// Where spans are posted.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), capstore::trace::TraceError> {
    /// let tracing = capstore::trace::Tracing::start("http://127.0.0.1:4318")?;
    /// println!("exporting to {}", tracing.endpoint());
    /// # Ok(()) }
    /// ```
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Sends what is queued (waiting 5 s at most) and stops exporting. Blocks the calling
    /// thread meanwhile: call it outside an async task, or in `spawn_blocking`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), capstore::trace::TraceError> {
    /// let tracing = capstore::trace::Tracing::start("http://127.0.0.1:4318")?;
    /// tracing.shutdown()?;
    /// # Ok(()) }
    /// ```
    pub fn shutdown(mut self) -> Result<(), TraceError> {
        self.stop()
    }

    fn start_at(url: String) -> Result<Tracing, TraceError> {
        use opentelemetry_otlp::WithExportConfig;
        let uri: http::Uri = url
            .parse()
            .map_err(|e| TraceError(format!("the OTLP endpoint `{url}` is not a URL: {e}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(TraceError(format!(
                "the OTLP endpoint `{url}` is not an http:// or https:// URL"
            )));
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(url.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TraceError(format!("cannot export traces to {url}: {e}")))?;
        let mut resource = opentelemetry_sdk::Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("capstore");
        }
        // The batch processor's defaults, `OTEL_BSP_*` read from the environment.
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let number = STARTED.fetch_add(1, Ordering::Relaxed);
        *TRACER.write().unwrap_or_else(|e| e.into_inner()) =
            Some((number, provider.tracer("capstore")));
        ACTIVE.store(true, Ordering::Release);
        Ok(Tracing {
            provider,
            endpoint: url,
            number,
            stopped: false,
        })
    }

    fn stop(&mut self) -> Result<(), TraceError> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        {
            let mut tracer = TRACER.write().unwrap_or_else(|e| e.into_inner());
            // Replaced by a later one: that one goes on.
            if tracer
                .as_ref()
                .is_some_and(|(number, _)| *number == self.number)
            {
                ACTIVE.store(false, Ordering::Release);
                *tracer = None;
            }
        }
        self.provider
            .shutdown_with_timeout(SHUTDOWN_TIMEOUT)
            .map_err(|e| TraceError(format!("traces to {}: {e}", self.endpoint)))
    }
}

impl Drop for Tracing {
    /// Sends what is queued (see [`shutdown`](Self::shutdown), which blocks up to 5 s); an
    /// error is lost.
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The tracer, while spans are exported.
fn tracer() -> Option<SdkTracer> {
    if !ACTIVE.load(Ordering::Acquire) {
        return None;
    }
    TRACER
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|(_, tracer)| tracer.clone())
}

/// A W3C trace context read from HTTP headers.
struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// A W3C trace context read from an MCP request's `_meta`.
struct MetaIn<'a>(&'a serde_json::Map<String, serde_json::Value>);

impl Extractor for MetaIn<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(serde_json::Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// A W3C trace context written into an MCP request's `_meta`.
struct Meta<'a>(&'a mut serde_json::Map<String, serde_json::Value>);

impl Injector for Meta<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0
            .insert(key.to_string(), serde_json::Value::String(value));
    }
}

/// The gateway's span for one tool call of a client (a server span), while spans are
/// exported; nothing otherwise.
pub(crate) struct CallSpan(Option<Context>);

impl CallSpan {
    /// Starts the span of a call of `tool`, in the trace of the request's `traceparent` (its
    /// HTTP header, else its `_meta`'s) when it has one.
    pub(crate) fn start(
        headers: Option<&http::HeaderMap>,
        meta: &serde_json::Map<String, serde_json::Value>,
        tool: &str,
        client: Option<&str>,
    ) -> CallSpan {
        let Some(tracer) = tracer() else {
            return CallSpan(None);
        };
        let propagator = TraceContextPropagator::new();
        let from_header = headers
            .filter(|h| h.contains_key("traceparent"))
            .map(|h| propagator.extract_with_context(&Context::new(), &Headers(h)));
        let parent = from_header
            .unwrap_or_else(|| propagator.extract_with_context(&Context::new(), &MetaIn(meta)));
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", "tools/call"),
            KeyValue::new("gen_ai.tool.name", tool.to_string()),
        ];
        if let Some(client) = client {
            attributes.push(KeyValue::new("capstore.client", client.to_string()));
        }
        let span = tracer
            .span_builder(format!("tools/call {tool}"))
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&tracer, &parent);
        CallSpan(Some(parent.with_span(span)))
    }

    /// `future` run in the span, so that the upstream call's span is its child.
    pub(crate) async fn around<F: Future>(&self, future: F) -> F::Output {
        use opentelemetry::context::FutureExt;
        match &self.0 {
            Some(cx) => future.with_context(cx.clone()).await,
            None => future.await,
        }
    }

    /// Ends the span with the call's `outcome` (`ok`, `error`, `refused`); an error or a
    /// refusal marks it as an error, saying `why` (asked only then, and only while traced).
    pub(crate) fn end(self, outcome: &'static str, why: impl FnOnce() -> Option<String>) {
        let Some(cx) = self.0 else {
            return;
        };
        let span = cx.span();
        span.set_attribute(KeyValue::new("capstore.outcome", outcome));
        if outcome != "ok" {
            span.set_attribute(KeyValue::new("error.type", outcome));
            span.set_status(Status::error(why().unwrap_or_else(|| outcome.to_string())));
        }
        span.end();
    }
}

/// The span of a call forwarded to an upstream server (a client span, a child of the
/// gateway's [`CallSpan`] when the call runs in one), while spans are exported.
pub(crate) struct UpstreamSpan(Option<opentelemetry_sdk::trace::Span>);

impl UpstreamSpan {
    /// Starts the span of `server`'s `tool` in the current context, with the `_meta` that
    /// carries its `traceparent` upstream (`None` while nothing is exported).
    pub(crate) fn start(
        server: &str,
        tool: &str,
    ) -> (UpstreamSpan, Option<rmcp::model::RequestMetaObject>) {
        let Some(tracer) = tracer() else {
            return (UpstreamSpan(None), None);
        };
        let parent = Context::current();
        let span = tracer
            .span_builder(format!("tools/call {tool}"))
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", tool.to_string()),
                KeyValue::new("capstore.upstream.server", server.to_string()),
            ])
            .start_with_context(&tracer, &parent);
        let cx = parent.with_remote_span_context(span.span_context().clone());
        let mut meta = rmcp::model::RequestMetaObject::new();
        TraceContextPropagator::new().inject_context(&cx, &mut Meta(&mut meta));
        (UpstreamSpan(Some(span)), Some(meta))
    }

    /// Ends the span with how the call ended: `Some((kind, message))` for an error, which
    /// marks the span as one, of that kind (`CallError::kind`).
    pub(crate) fn end(self, error: Option<(&'static str, String)>) {
        let Some(mut span) = self.0 else {
            return;
        };
        if let Some((kind, message)) = error {
            span.set_attribute(KeyValue::new("error.type", kind));
            span.set_status(Status::error(message));
        }
        span.end();
    }
}
