//! `capstore serve --http --otlp-endpoint URL`: each call's spans, exported over OTLP/HTTP to
//! a collector that runs inside this test (hyper on loopback, the OpenTelemetry project's own
//! protobuf types decoded with prost), in the trace the client's `traceparent` started (its
//! HTTP header, or over stdio its request's `_meta`), the queued spans sent when the gateway
//! stops; and a collector that never answers slows no call.

#[path = "common/gateway.rs"]
mod gateway;

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use gateway::{GatewayProcess, HttpGateway};
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message;
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capstore-trace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// One server, `f` (the fault fixture: `echo`, and `fail`, which answers `isError`).
fn config(dir: &Path) -> PathBuf {
    let config = dir.join("mcp.json");
    let script = root().join("tests/fixtures/mcp/servers/fault_server.py");
    std::fs::write(
        &config,
        json!({"mcpServers": {"f": {"command": "python3", "args": [script, "ok"]}}}).to_string(),
    )
    .expect("config");
    config
}

/// A span as the collector received it, with the resource it came from.
#[derive(Debug, Clone)]
struct Received {
    span: opentelemetry_proto::tonic::trace::v1::Span,
    service: Option<String>,
}

impl Received {
    fn attribute(&self, key: &str) -> Option<String> {
        self.span
            .attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                Any::StringValue(s) => Some(s.clone()),
                other => Some(format!("{other:?}")),
            })
    }

    fn status(&self) -> (StatusCode, String) {
        self.span
            .status
            .as_ref()
            .map_or((StatusCode::Unset, String::new()), |s| {
                (
                    StatusCode::try_from(s.code).unwrap_or(StatusCode::Unset),
                    s.message.clone(),
                )
            })
    }
}

/// An OTLP/HTTP collector on loopback, inside this test: each `POST /v1/traces` body decoded
/// as the OTLP protobuf request, its spans kept; or (`answer: false`) one that takes the
/// connection and never answers.
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Received>>>,
    posts: Arc<Mutex<usize>>,
    runtime: tokio::runtime::Runtime,
}

impl Collector {
    fn start(answer: bool) -> Collector {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let posts = Arc::new(Mutex::new(0));
        let (kept, counted) = (Arc::clone(&spans), Arc::clone(&posts));
        runtime.spawn(async move {
            let mut held = Vec::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                if !answer {
                    // Taken, never read or answered: the exporter waits for its timeout.
                    held.push(stream);
                    continue;
                }
                let (kept, counted) = (Arc::clone(&kept), Arc::clone(&counted));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let (kept, counted) = (Arc::clone(&kept), Arc::clone(&counted));
                        async move { Ok::<_, Infallible>(receive(request, &kept, &counted).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Collector {
            url,
            spans,
            posts,
            runtime,
        }
    }

    /// The spans received so far once `enough` holds of them, waiting 30 s at most.
    fn wait_for(&self, enough: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans = self.spans.lock().expect("spans").clone();
            if enough(&spans) {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "the collector did not get the spans within 30 s ({} posts): {spans:#?}",
                self.posts.lock().expect("posts")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One OTLP/HTTP export: `200` with an empty export response when its body is the OTLP
/// protobuf request (its spans kept), `400` otherwise.
async fn receive(
    request: hyper::Request<hyper::body::Incoming>,
    kept: &Mutex<Vec<Received>>,
    counted: &Mutex<usize>,
) -> hyper::Response<Full<Bytes>> {
    let path_ok = request.method() == hyper::Method::POST && request.uri().path() == "/v1/traces";
    let protobuf = request
        .headers()
        .get("content-type")
        .is_some_and(|v| v == "application/x-protobuf");
    let body = request.into_body().collect().await.map(|b| b.to_bytes());
    let decoded = body
        .ok()
        .filter(|_| path_ok && protobuf)
        .and_then(|b| ExportTraceServiceRequest::decode(b).ok());
    let Some(export) = decoded else {
        let mut answer = hyper::Response::new(Full::new(Bytes::from_static(b"not OTLP")));
        *answer.status_mut() = hyper::StatusCode::BAD_REQUEST;
        return answer;
    };
    *counted.lock().expect("posts") += 1;
    let mut spans = kept.lock().expect("spans");
    for resource in export.resource_spans {
        let service = resource.resource.as_ref().and_then(|r| {
            r.attributes
                .iter()
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                    Any::StringValue(s) => Some(s.clone()),
                    _ => None,
                })
        });
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.push(Received {
                    span,
                    service: service.clone(),
                });
            }
        }
    }
    let mut answer = hyper::Response::new(Full::new(Bytes::new()));
    answer.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/x-protobuf"),
    );
    answer
}

/// An MCP client over Streamable HTTP, by hand: one request per connection (hyper's HTTP/1
/// client), the session's id and the client's token sent with each.
struct McpClient {
    port: u16,
    token: String,
    session: Option<String>,
    next_id: u64,
}

impl McpClient {
    /// Connects and completes the handshake.
    fn connect(runtime: &tokio::runtime::Runtime, port: u16, token: &str) -> McpClient {
        let mut client = McpClient {
            port,
            token: token.to_string(),
            session: None,
            next_id: 0,
        };
        let init = client.request(
            runtime,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "trace-test", "version": "1"}}),
            None,
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "capstore", "{init}");
        client.post(
            runtime,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            None,
        );
        client
    }

    /// A request and its answer (the SSE event, or the JSON body, that holds it).
    fn request(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        method: &str,
        params: Value,
        traceparent: Option<&str>,
    ) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let body = self.post(
            runtime,
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            traceparent,
        );
        body.lines()
            .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {method} in {body:?}"))
    }

    /// `call_tool` of `tool` with `arguments`, the request carrying `traceparent`.
    fn call(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        tool: &str,
        arguments: Value,
        traceparent: Option<&str>,
    ) -> Value {
        self.request(
            runtime,
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": tool, "arguments": arguments}}),
            traceparent,
        )
    }

    /// One POST to `/mcp`: the body of the answer (within 20 s), and the session's id noted.
    fn post(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        message: Value,
        traceparent: Option<&str>,
    ) -> String {
        let mut request = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{}", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {}", self.token));
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(traceparent) = traceparent {
            request = request.header("traceparent", traceparent);
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .expect("request");
        let port = self.port;
        let (session, body) = runtime
            .block_on(async move {
                tokio::time::timeout(Duration::from_secs(20), async move {
                    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                        .await
                        .expect("connect");
                    let (mut sender, connection) =
                        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                            .await
                            .expect("handshake");
                    tokio::spawn(connection);
                    let answer = sender.send_request(request).await.expect("answer");
                    assert!(answer.status().is_success(), "{answer:?}");
                    let session = answer
                        .headers()
                        .get("mcp-session-id")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let body = answer.into_body().collect().await.expect("body").to_bytes();
                    (session, String::from_utf8_lossy(&body).into_owned())
                })
                .await
            })
            .expect("an answer within 20 s");
        if session.is_some() {
            self.session = session;
        }
        body
    }
}

/// `capstore clients add NAME --server f`: the client's token.
fn add_client(config: &Path, name: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(["clients", "add", name, "--server", "f", "--mcp-config"])
        .arg(config)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A call with the client's `traceparent` gives, at the collector: the gateway's server span
/// in the client's trace, parented to the client's span, with the client, the tool and the
/// outcome; under it the upstream call's client span (server, tool, its duration), whose
/// context the upstream server received in `_meta`. An upstream error marks both as errors.
#[test]
fn a_calls_spans_reach_the_collector_in_the_clients_trace() {
    let dir = scratch("spans");
    let config = config(&dir);
    let token = add_client(&config, "tracer");
    let collector = Collector::start(true);
    let gateway = HttpGateway::start_with_env(
        &config,
        "127.0.0.1:0",
        &["--no-quarantine", "--otlp-endpoint", &collector.url],
        // Exported every 100 ms rather than every 5 s: the test waits less.
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );
    let runtime = &collector.runtime;
    let mut client = McpClient::connect(runtime, gateway.port, &token);

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let traceparent = format!("00-{trace_id}-{client_span}-01");
    let echoed = client.call(
        runtime,
        "f/echo",
        json!({"message": "hi"}),
        Some(&traceparent),
    );
    assert_eq!(
        echoed["result"]["structuredContent"]["echoed"], "hi",
        "{echoed}"
    );
    let failing_span = "b7ad6b7169203331";
    let failed = client.call(
        runtime,
        "f/fail",
        json!({}),
        Some(&format!("00-{trace_id}-{failing_span}-01")),
    );
    assert_eq!(failed["result"]["isError"], true, "{failed}");

    let spans = collector.wait_for(|spans| spans.len() >= 4);
    assert_eq!(spans.len(), 4, "two spans per call: {spans:#?}");
    for span in &spans {
        assert_eq!(
            hex(&span.span.trace_id),
            trace_id,
            "the client's trace: {span:#?}"
        );
        assert_eq!(span.service.as_deref(), Some("capstore"), "{span:#?}");
        assert!(
            span.span.end_time_unix_nano > span.span.start_time_unix_nano,
            "{span:#?}"
        );
    }
    let find = |name: &str, kind: SpanKind| -> Received {
        spans
            .iter()
            .find(|s| s.span.name == name && s.span.kind == kind as i32)
            .cloned()
            .unwrap_or_else(|| panic!("a {kind:?} span {name}: {spans:#?}"))
    };

    // The gateway's span for the echo: the client's span's child, with who, what and how.
    let served = find("tools/call f/echo", SpanKind::Server);
    assert_eq!(hex(&served.span.parent_span_id), client_span);
    assert_eq!(
        served.attribute("capstore.client").as_deref(),
        Some("tracer")
    );
    assert_eq!(
        served.attribute("gen_ai.tool.name").as_deref(),
        Some("f/echo")
    );
    assert_eq!(
        served.attribute("mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(served.attribute("capstore.outcome").as_deref(), Some("ok"));
    assert_ne!(served.status().0, StatusCode::Error, "{served:#?}");
    // The upstream call: the gateway span's child, by server and the server's own tool name.
    let upstream = find("tools/call echo", SpanKind::Client);
    assert_eq!(upstream.span.parent_span_id, served.span.span_id);
    assert_eq!(
        upstream.attribute("capstore.upstream.server").as_deref(),
        Some("f")
    );
    assert_eq!(
        upstream.attribute("gen_ai.tool.name").as_deref(),
        Some("echo")
    );
    assert_eq!(upstream.attribute("error.type"), None);
    assert_ne!(upstream.status().0, StatusCode::Error, "{upstream:#?}");
    // Within the gateway's span in time.
    assert!(upstream.span.start_time_unix_nano >= served.span.start_time_unix_nano);
    assert!(upstream.span.end_time_unix_nano <= served.span.end_time_unix_nano);
    // The trace went on upstream: the server received the upstream span's context in `_meta`.
    assert_eq!(
        echoed["result"]["structuredContent"]["traceparent"],
        format!("00-{trace_id}-{}-01", hex(&upstream.span.span_id)),
        "{echoed}"
    );

    // The failing call: both spans errors, saying why.
    let served = find("tools/call f/fail", SpanKind::Server);
    assert_eq!(hex(&served.span.parent_span_id), failing_span);
    assert_eq!(
        served.attribute("capstore.outcome").as_deref(),
        Some("error")
    );
    let (code, message) = served.status();
    assert_eq!(code, StatusCode::Error, "{served:#?}");
    assert!(message.contains("disk quota exceeded"), "{message}");
    let upstream = find("tools/call fail", SpanKind::Client);
    assert_eq!(upstream.span.parent_span_id, served.span.span_id);
    assert_eq!(upstream.attribute("error.type").as_deref(), Some("tool"));
    let (code, message) = upstream.status();
    assert_eq!(code, StatusCode::Error, "{upstream:#?}");
    assert!(message.contains("disk quota exceeded"), "{message}");

    // A call without `traceparent` starts a trace of its own, its spans still parent and child.
    client.call(runtime, "f/echo", json!({"message": "alone"}), None);
    let spans = collector.wait_for(|spans| spans.len() >= 6);
    let fresh: Vec<&Received> = spans
        .iter()
        .filter(|s| hex(&s.span.trace_id) != trace_id)
        .collect();
    assert_eq!(fresh.len(), 2, "{spans:#?}");
    let by_kind: HashMap<i32, &Received> = fresh.iter().map(|s| (s.span.kind, *s)).collect();
    let (root, child) = (
        by_kind[&(SpanKind::Server as i32)],
        by_kind[&(SpanKind::Client as i32)],
    );
    assert!(root.span.parent_span_id.is_empty(), "{root:#?}");
    assert_eq!(child.span.parent_span_id, root.span.span_id);
    assert_eq!(child.span.trace_id, root.span.trace_id);
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Over stdio, the client's trace context comes in the request's `_meta`; the spans are sent
/// when the session ends and the gateway stops, though its batches would wait a minute.
#[test]
fn over_stdio_the_trace_comes_in_meta_and_the_spans_are_sent_when_the_gateway_stops() {
    let dir = scratch("stdio");
    let config = config(&dir);
    let collector = Collector::start(true);
    let mut gateway = GatewayProcess::start_with_env(
        &config,
        &["--no-quarantine", "--otlp-endpoint", &collector.url],
        &[("OTEL_BSP_SCHEDULE_DELAY", "60000")],
    );
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let client_span = "b9c7c989f97918e1";
    let answer = gateway.request(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "f/echo", "arguments": {"message": "x"}},
               "_meta": {"traceparent": format!("00-{trace_id}-{client_span}-01")}}),
    );
    assert_eq!(
        answer["result"]["structuredContent"]["echoed"], "x",
        "{answer}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        collector.spans.lock().expect("spans").is_empty(),
        "nothing sent before a batch is due"
    );
    assert!(
        gateway.finish(Duration::from_secs(20)),
        "the gateway exits when its client leaves: {}",
        gateway.stderr()
    );
    let spans = collector.wait_for(|spans| spans.len() >= 2);
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let served = spans
        .iter()
        .find(|s| s.span.kind == SpanKind::Server as i32)
        .expect("the server span");
    assert_eq!(hex(&served.span.trace_id), trace_id);
    assert_eq!(hex(&served.span.parent_span_id), client_span);
    assert_eq!(
        served.attribute("capstore.client"),
        None,
        "no clients over stdio"
    );
    let upstream = spans
        .iter()
        .find(|s| s.span.kind == SpanKind::Client as i32)
        .expect("the upstream span");
    assert_eq!(upstream.span.parent_span_id, served.span.span_id);
    assert_eq!(
        answer["result"]["structuredContent"]["traceparent"],
        format!("00-{trace_id}-{}-01", hex(&upstream.span.span_id)),
        "{answer}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A collector that takes the connection and never answers: every call still answers at
/// once (the export waits on a thread of its own, and gives up after its timeout).
#[test]
fn a_collector_that_never_answers_slows_no_call() {
    let dir = scratch("stalled");
    let config = config(&dir);
    let token = add_client(&config, "patient");
    let collector = Collector::start(false);
    let gateway = HttpGateway::start_with_env(
        &config,
        "127.0.0.1:0",
        &["--no-quarantine", "--otlp-endpoint", &collector.url],
        // An export is attempted every 10 ms, each stuck until its timeout.
        &[("OTEL_BSP_SCHEDULE_DELAY", "10")],
    );
    let runtime = &collector.runtime;
    let mut client = McpClient::connect(runtime, gateway.port, &token);
    let started = Instant::now();
    for i in 0..20 {
        let message = format!("call {i}");
        let traceparent = format!("00-{:032x}-{:016x}-01", i + 1, i + 1);
        let answer = client.call(
            runtime,
            "f/echo",
            json!({"message": message}),
            Some(&traceparent),
        );
        assert_eq!(
            answer["result"]["structuredContent"]["echoed"], message,
            "{answer}"
        );
        if i == 0 {
            // Past the first export's start: the exporter is now stuck on the collector.
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let took = started.elapsed();
    // 20 calls on loopback take well under a second; one stuck export would take 5 s.
    assert!(
        took < Duration::from_secs(4),
        "20 calls took {took:?} with a stalled collector"
    );
    assert!(collector.spans.lock().expect("spans").is_empty());
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}
