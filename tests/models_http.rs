//! The model adapters against a local HTTP server (127.0.0.1, started here) that serves the
//! provider replies recorded in tests/fixtures/models: tool calls, parallel tool calls,
//! refusals, errors and rate limits. Each test also checks what the adapter sent.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use capstore::agent::{
    Agent, AgentError, Message, Model, ModelErrorKind, ModelReply, ModelRequest, RecordingModel,
    ReplayModel, TurnOutcome,
};
use capstore::exec::register_tool;
use capstore::models::{Anthropic, OpenAiChat};
use capstore::provider::Provider;
use capstore::{Store, Tool};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn fixture(provider: &str, name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/models/{provider}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("fixture file");
    let all: Value = serde_json::from_str(&text).expect("fixture JSON");
    assert!(all[name].is_object(), "no fixture {name} in {path}");
    all[name].clone()
}

/// A request as the server received it.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HashMap<String, String>,
    body: Value,
}

/// Serves `replies` in order, one per connection, and keeps what it received.
struct Server {
    base: String,
    received: Arc<Mutex<Vec<Received>>>,
}

async fn serve(replies: Vec<Value>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    let mut replies = VecDeque::from(replies);
    tokio::spawn(async move {
        while let Some(reply) = replies.pop_front() {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let Some(request) = read_request(&mut socket).await else {
                return;
            };
            log.lock().push(request);
            let body = reply["body"].to_string();
            let mut head = format!(
                "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                reply["status"],
                body.len()
            );
            if let Some(headers) = reply["headers"].as_object() {
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {}\r\n", value.as_str().unwrap_or("")));
                }
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    Server { base, received }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let mut lines = head.lines();
    let path = lines.next()?.split_whitespace().nth(1)?.to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers.get("content-length")?.parse().ok()?;
    while data.len() < head_end + length {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    }
    let body = serde_json::from_slice(&data[head_end..head_end + length]).ok()?;
    Some(Received {
        path,
        headers,
        body,
    })
}

fn store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("get_weather", "Current weather for a city"),
                |a| async move { Ok(json!({"city": a["city"], "sky": "clear"})) },
            )?;
            register_tool(
                tx,
                Tool::new("convert_currency", "Convert an amount between currencies"),
                |a| async move { Ok(json!(a["amount"].as_f64().unwrap_or(0.0) * 11.7)) },
            )
        })
        .expect("store");
    store
}

fn agent<M: Model>(model: M, provider: Provider) -> Agent<M> {
    Agent::new(store(), model)
        .with_builder(None)
        .with_search_tools(false)
        .with_provider(provider)
}

fn hello() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::User {
            text: "hello".into(),
        }],
        tools: vec![],
        selection: Arc::default(),
    }
}

fn openai(server: &Server) -> OpenAiChat {
    OpenAiChat::new(
        &format!("{}/v1", server.base),
        Some("test-key".into()),
        "gpt-4.1-mini",
    )
    .expect("adapter")
    .with_timeout(Duration::from_secs(10))
    .expect("timeout")
}

fn anthropic(server: &Server) -> Anthropic {
    Anthropic::new(&server.base, "test-key", "claude-sonnet-4-5")
        .expect("adapter")
        .with_timeout(Duration::from_secs(10))
        .expect("timeout")
}

/// One agent turn over the adapter `model` makes for a server serving `replies`: the outcome,
/// and the requests the server received.
async fn one_turn<M: Model>(
    provider_fixtures: (&str, [&str; 2]),
    model: impl FnOnce(&Server) -> M,
    tool_shape: Provider,
    message: &str,
) -> (TurnOutcome, Vec<Received>) {
    let (provider, names) = provider_fixtures;
    let server = serve(names.iter().map(|n| fixture(provider, n)).collect()).await;
    let agent = agent(model(&server), tool_shape);
    let mut session = agent.session();
    let outcome = agent.run_turn(&mut session, message).await.expect("turn");
    let received = server.received.lock().clone();
    (outcome, received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_tool_call_then_answer() {
    let (outcome, received) = one_turn(
        ("openai", ["tool_call", "final"]),
        openai,
        Provider::OpenAiChat,
        "weather in Oslo?",
    )
    .await;
    assert_eq!(outcome.answer, "It is clear and 4 degrees in Oslo.");
    assert_eq!(outcome.calls, [("get_weather".to_string(), true)]);

    assert_eq!(received.len(), 2);
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[0].headers["authorization"], "Bearer test-key");
    let first = &received[0].body;
    assert_eq!(first["model"], "gpt-4.1-mini");
    assert_eq!(
        first["messages"],
        json!([{"role": "user", "content": "weather in Oslo?"}])
    );
    let names: Vec<&str> = first["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"get_weather") && names.contains(&"convert_currency"));
    let second = &received[1].body["messages"];
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_abc123", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}
        ]})
    );
    assert_eq!(
        second[2],
        json!({"role": "tool", "tool_call_id": "call_abc123", "content": "{\"city\":\"Oslo\",\"sky\":\"clear\"}"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_parallel_tool_calls_all_run_and_all_results_go_back() {
    let (outcome, received) = one_turn(
        ("openai", ["parallel_tool_calls", "final"]),
        openai,
        Provider::OpenAiChat,
        "weather and money",
    )
    .await;
    assert_eq!(
        outcome.calls,
        [
            ("get_weather".to_string(), true),
            ("convert_currency".to_string(), true)
        ]
    );
    let messages = received[1].body["messages"]
        .as_array()
        .expect("messages")
        .clone();
    let tool_ids: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(tool_ids, ["call_w1", "call_c1"]);
    assert_eq!(messages[3]["content"], "1404.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_refusals_and_failures_are_typed() {
    let server = serve(vec![
        fixture("openai", "refusal"),
        fixture("openai", "unauthorized"),
        fixture("openai", "rate_limited"),
        fixture("openai", "no_choices"),
        fixture("openai", "bad_arguments"),
    ])
    .await;
    let model = openai(&server);
    assert_eq!(
        model.complete(&hello()).await,
        Ok(ModelReply::Final(
            "I'm sorry, I can't help with that.".into()
        ))
    );
    let err = model.complete(&hello()).await.expect_err("401");
    assert_eq!(err.kind, ModelErrorKind::Http { status: 401 });
    assert!(
        err.message.contains("HTTP 401: Incorrect API key provided"),
        "{}",
        err.message
    );
    let err = model.complete(&hello()).await.expect_err("429");
    assert_eq!(
        err.kind,
        ModelErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(20))
        }
    );
    assert!(
        err.message
            .contains("(retry after 20s): Rate limit reached"),
        "{}",
        err.message
    );
    let err = model.complete(&hello()).await.expect_err("no choices");
    assert_eq!(err.kind, ModelErrorKind::Malformed);
    assert!(
        err.message.contains("no choices[0].message"),
        "{}",
        err.message
    );
    let err = model.complete(&hello()).await.expect_err("bad arguments");
    assert_eq!(err.kind, ModelErrorKind::Malformed);
    assert!(
        err.message.contains("tool call call_bad are not JSON"),
        "{}",
        err.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let model = OpenAiChat::new(&format!("http://{addr}/v1"), None, "m").expect("adapter");
    let err = model.complete(&hello()).await.expect_err("refused");
    assert_eq!(err.kind, ModelErrorKind::Transport);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_tool_use_then_answer() {
    let (outcome, received) = one_turn(
        ("anthropic", ["tool_use", "final"]),
        |server| anthropic(server).with_system("Be brief."),
        Provider::Anthropic,
        "weather in Oslo?",
    )
    .await;
    assert_eq!(outcome.answer, "It is clear and 4 degrees in Oslo.");
    assert_eq!(outcome.calls, [("get_weather".to_string(), true)]);

    assert_eq!(received[0].path, "/v1/messages");
    assert_eq!(received[0].headers["x-api-key"], "test-key");
    assert_eq!(received[0].headers["anthropic-version"], "2023-06-01");
    let first = &received[0].body;
    assert_eq!(first["model"], "claude-sonnet-4-5");
    assert_eq!(first["max_tokens"], 1024);
    assert_eq!(first["system"], "Be brief.");
    assert!(first["tools"][0]["input_schema"].is_object());
    let second = &received[1].body["messages"];
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"city": "Oslo"}}
        ]})
    );
    assert_eq!(
        second[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
            "content": "{\"city\":\"Oslo\",\"sky\":\"clear\"}", "is_error": false}]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_parallel_tool_use_results_go_back_in_one_message() {
    // Tools offered in OpenAI's shape are sent in Anthropic's.
    let (outcome, received) = one_turn(
        ("anthropic", ["parallel_tool_use", "final"]),
        anthropic,
        Provider::OpenAiChat,
        "weather and money",
    )
    .await;
    assert_eq!(outcome.calls.len(), 2);
    assert!(received[0].body["tools"][0]["input_schema"].is_object());
    assert!(received[0].body["tools"][0].get("function").is_none());
    let messages = received[1].body["messages"]
        .as_array()
        .expect("messages")
        .clone();
    assert_eq!(messages.len(), 3);
    let ids: Vec<&str> = messages[2]["content"]
        .as_array()
        .expect("blocks")
        .iter()
        .filter_map(|b| b["tool_use_id"].as_str())
        .collect();
    assert_eq!(ids, ["toolu_w1", "toolu_c1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_refusals_and_failures_are_typed() {
    let server = serve(vec![
        fixture("anthropic", "refusal"),
        fixture("anthropic", "invalid_request"),
        fixture("anthropic", "rate_limited"),
        fixture("anthropic", "overloaded"),
        fixture("anthropic", "no_content"),
    ])
    .await;
    let model = anthropic(&server);
    let Ok(ModelReply::Final(text)) = model.complete(&hello()).await else {
        panic!("a refusal is a final answer");
    };
    assert!(text.contains("declined"), "{text}");
    let err = model.complete(&hello()).await.expect_err("400");
    assert_eq!(err.kind, ModelErrorKind::Http { status: 400 });
    assert!(
        err.message.contains("Input should be a valid list"),
        "{}",
        err.message
    );
    let err = model.complete(&hello()).await.expect_err("429");
    assert_eq!(
        err.kind,
        ModelErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(30))
        }
    );
    let err = model.complete(&hello()).await.expect_err("529");
    assert_eq!(err.kind, ModelErrorKind::RateLimited { retry_after: None });
    assert!(
        err.message.contains("HTTP 529: Overloaded"),
        "{}",
        err.message
    );
    let err = model.complete(&hello()).await.expect_err("no content");
    assert_eq!(err.kind, ModelErrorKind::Malformed);
}

/// Record a conversation through the real adapter once; replay it with no server at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_conversation_recorded_replays_offline() {
    let tape =
        std::env::temp_dir().join(format!("capstore-models-tape-{}.jsonl", std::process::id()));
    let server = serve(vec![
        fixture("openai", "tool_call"),
        fixture("openai", "final"),
    ])
    .await;
    let recorder = agent(
        RecordingModel::create(openai(&server), &tape).expect("tape"),
        Provider::OpenAiChat,
    );
    let mut session = recorder.session();
    let live = recorder
        .run_turn(&mut session, "weather in Oslo?")
        .await
        .expect("turn");
    drop(server);

    let player = agent(
        ReplayModel::open(&tape).expect("open"),
        Provider::OpenAiChat,
    );
    let mut session = player.session();
    let replayed = player
        .run_turn(&mut session, "weather in Oslo?")
        .await
        .expect("replay");
    assert_eq!(replayed.answer, live.answer);
    assert_eq!(replayed.calls, live.calls);
    let mut session = player.session();
    let err = player
        .run_turn(&mut session, "weather in Bergen?")
        .await
        .expect_err("diverges");
    assert!(
        matches!(err, AgentError::Model(ref e) if matches!(e.kind, ModelErrorKind::ReplayDiverged { .. })),
        "{err}"
    );
    std::fs::remove_file(&tape).ok();
}
