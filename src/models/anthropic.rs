//! Anthropic's Messages API with tools.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::agent::{
    Message, Model, ModelError, ModelErrorKind, ModelReply, ModelRequest, ModelToolCall,
};

use super::http::{DEFAULT_TIMEOUT, client, endpoint, env, malformed, post_json};
use super::openai::text_of;
use super::tools;

/// The Messages API version sent in `anthropic-version`.
const API_VERSION: &str = "2023-06-01";

/// A [`Model`] over Anthropic's `POST {base}/v1/messages` with tools.
///
/// The conversation is sent as `user` and `assistant` messages, tool calls as `tool_use`
/// blocks, and each step's tool results as `tool_result` blocks of one `user` message. A reply
/// with `tool_use` blocks (one or several) becomes [`ModelReply::ToolCalls`]; otherwise its text
/// blocks a [`ModelReply::Final`] (a refusal, `stop_reason: "refusal"`, is the model's final
/// word too). HTTP 429 and 529 (overloaded) are rate limits.
///
/// ```
/// use capstore::models::Anthropic;
/// let model = Anthropic::new("https://api.anthropic.com", "sk-ant-...", "claude-sonnet-4-5")?
///     .with_max_tokens(2048);
/// assert_eq!(model.url(), "https://api.anthropic.com/v1/messages");
/// # Ok::<(), capstore::agent::ModelError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    client: reqwest::Client,
    url: String,
    key: String,
    model: String,
    max_tokens: u32,
    system: Option<String>,
    options: Map<String, Value>,
}

impl Anthropic {
    /// An adapter for `base_url` (without `/v1`), an API key and a model name; at most 1024
    /// output tokens a step unless [set](Self::with_max_tokens).
    ///
    /// ```
    /// let model = capstore::models::Anthropic::new("https://api.anthropic.com", "key", "claude-haiku-4-5")?;
    /// assert_eq!(model.model(), "claude-haiku-4-5");
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn new(
        base_url: &str,
        api_key: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<Self, ModelError> {
        Ok(Anthropic {
            client: client(DEFAULT_TIMEOUT)?,
            url: endpoint(base_url, "v1/messages"),
            key: api_key.into(),
            model: model.into(),
            max_tokens: 1024,
            system: None,
            options: Map::new(),
        })
    }

    /// An adapter from the environment: `ANTHROPIC_API_KEY` (required), `ANTHROPIC_BASE_URL`
    /// (default `https://api.anthropic.com`), `ANTHROPIC_MODEL` (default `claude-sonnet-4-5`).
    ///
    /// ```
    /// if std::env::var("ANTHROPIC_API_KEY").is_err() {
    ///     let err = capstore::models::Anthropic::from_env().unwrap_err();
    ///     assert_eq!(err.kind, capstore::agent::ModelErrorKind::Config);
    /// }
    /// ```
    pub fn from_env() -> Result<Self, ModelError> {
        let Some(key) = env("ANTHROPIC_API_KEY") else {
            return Err(ModelError::new(
                ModelErrorKind::Config,
                "set ANTHROPIC_API_KEY",
            ));
        };
        let base = env("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".into());
        let model = env("ANTHROPIC_MODEL").unwrap_or_else(|| "claude-sonnet-4-5".into());
        Anthropic::new(&base, key, model)
    }

    /// The most tokens the model may write a step (`max_tokens`, which the API requires).
    ///
    /// ```
    /// # let model = capstore::models::Anthropic::new("http://127.0.0.1:1", "k", "m")?;
    /// let model = model.with_max_tokens(4096);
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sends `system` as the system prompt of every request.
    ///
    /// ```
    /// # let model = capstore::models::Anthropic::new("http://127.0.0.1:1", "k", "m")?;
    /// let model = model.with_system("Answer in French.");
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Adds a field to every request body (`temperature`, `tool_choice`, ...).
    ///
    /// ```
    /// # let model = capstore::models::Anthropic::new("http://127.0.0.1:1", "k", "m")?;
    /// let model = model.with_option("temperature", serde_json::json!(0));
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn with_option(mut self, name: impl Into<String>, value: Value) -> Self {
        self.options.insert(name.into(), value);
        self
    }

    /// Bounds each request by `timeout` (two minutes by default).
    ///
    /// ```
    /// # let model = capstore::models::Anthropic::new("http://127.0.0.1:1", "k", "m")?;
    /// let model = model.with_timeout(std::time::Duration::from_secs(30))?;
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ModelError> {
        self.client = client(timeout)?;
        Ok(self)
    }

    /// The endpoint requests go to.
    ///
    /// ```
    /// let model = capstore::models::Anthropic::new("http://127.0.0.1:9/", "k", "m")?;
    /// assert_eq!(model.url(), "http://127.0.0.1:9/v1/messages");
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model name sent.
    ///
    /// ```
    /// let model = capstore::models::Anthropic::new("http://127.0.0.1:9", "k", "m")?;
    /// assert_eq!(model.model(), "m");
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The request body for `request`.
    fn body(&self, request: &ModelRequest) -> Value {
        let mut messages: Vec<Value> = Vec::with_capacity(request.messages.len());
        for message in &request.messages {
            match message {
                Message::User { text } => messages.push(json!({ "role": "user", "content": text })),
                Message::Assistant { text, tool_calls } => {
                    let mut blocks = Vec::new();
                    if !text.is_empty() {
                        blocks.push(json!({ "type": "text", "text": text }));
                    }
                    for call in tool_calls {
                        blocks.push(json!({
                            "type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments,
                        }));
                    }
                    if blocks.is_empty() {
                        blocks.push(json!({ "type": "text", "text": "(no answer)" }));
                    }
                    messages.push(json!({ "role": "assistant", "content": blocks }));
                }
                Message::ToolResult {
                    call_id,
                    content,
                    is_error,
                } => {
                    let block = json!({
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": text_of(content),
                        "is_error": is_error,
                    });
                    // One step's results go back together, in one user message.
                    match messages.last_mut() {
                        Some(last) if is_tool_results(last) => {
                            if let Some(blocks) = last["content"].as_array_mut() {
                                blocks.push(block);
                            }
                        }
                        _ => messages.push(json!({ "role": "user", "content": [block] })),
                    }
                }
            }
        }
        let mut body = self.options.clone();
        body.insert("model".into(), json!(self.model));
        body.insert("max_tokens".into(), json!(self.max_tokens));
        if let Some(system) = &self.system {
            body.insert("system".into(), json!(system));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(tools::anthropic(&request.tools)),
            );
        }
        Value::Object(body)
    }
}

fn is_tool_results(message: &Value) -> bool {
    message["role"] == "user"
        && message["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().all(|b| b["type"] == "tool_result"))
}

/// The reply of a message: its `tool_use` blocks, or its text.
fn reply(body: &Value) -> Result<ModelReply, ModelError> {
    let Some(blocks) = body["content"].as_array() else {
        return Err(malformed("no content array"));
    };
    let mut calls = Vec::new();
    let mut text = String::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("tool_use") => {
                let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) else {
                    return Err(malformed(format!(
                        "a tool_use block without id or name: {block}"
                    )));
                };
                calls.push(ModelToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
                });
            }
            Some("text") => text.push_str(block["text"].as_str().unwrap_or("")),
            // Thinking and server-tool blocks are not part of the answer.
            _ => {}
        }
    }
    if !calls.is_empty() {
        return Ok(ModelReply::ToolCalls(calls));
    }
    if text.is_empty() && body["stop_reason"] == "refusal" {
        text = "The model declined to answer (stop_reason: refusal).".into();
    }
    Ok(ModelReply::Final(text))
}

impl Model for Anthropic {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let headers = [
            ("x-api-key", self.key.as_str()),
            ("anthropic-version", API_VERSION),
        ];
        let body = post_json(
            &self.client,
            &self.url,
            &headers,
            &self.body(request),
            &[529],
        )
        .await?;
        reply(&body)
    }
}
