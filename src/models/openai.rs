//! OpenAI-compatible chat completions with tools.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::agent::{
    Message, Model, ModelError, ModelErrorKind, ModelReply, ModelRequest, ModelToolCall,
};
use crate::tools::canonical_json;

use super::http::{DEFAULT_TIMEOUT, client, endpoint, env, malformed, post_json};
use super::tools;

/// A [`Model`] over an OpenAI-compatible `POST {base}/chat/completions` endpoint with tools:
/// OpenAI, vLLM, Ollama (`http://localhost:11434/v1`), llama.cpp's server, LM Studio,
/// OpenRouter.
///
/// The conversation is sent as `user`, `assistant` (with `tool_calls`) and `tool` messages; the
/// reply's `tool_calls` (one or several, parallel) become [`ModelReply::ToolCalls`], its
/// `content` (or its `refusal`, when the model refuses) a [`ModelReply::Final`]. Text the model
/// writes beside tool calls is not kept.
///
/// ```
/// use capstore::models::OpenAiChat;
/// let model = OpenAiChat::new("http://localhost:11434/v1", None, "qwen3:8b")?
///     .with_system("You are terse.");
/// assert_eq!(model.url(), "http://localhost:11434/v1/chat/completions");
/// # Ok::<(), capstore::agent::ModelError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    client: reqwest::Client,
    url: String,
    key: Option<String>,
    model: String,
    system: Option<String>,
    options: Map<String, Value>,
}

impl OpenAiChat {
    /// An adapter for `base_url` (up to `/v1`), with an API key (`None` for local servers
    /// that need none) and a model name.
    ///
    /// ```
    /// let model = capstore::models::OpenAiChat::new("https://api.openai.com/v1/", Some("sk-...".into()), "gpt-4.1-mini")?;
    /// assert_eq!(model.model(), "gpt-4.1-mini");
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        model: impl Into<String>,
    ) -> Result<Self, ModelError> {
        Ok(OpenAiChat {
            client: client(DEFAULT_TIMEOUT)?,
            url: endpoint(base_url, "chat/completions"),
            key: api_key,
            model: model.into(),
            system: None,
            options: Map::new(),
        })
    }

    /// An adapter from the environment: `OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`), `OPENAI_API_KEY` (optional for local servers; required
    /// when the base URL is OpenAI's) and `OPENAI_MODEL` (default `gpt-4.1-mini`).
    ///
    /// ```
    /// // With neither OPENAI_BASE_URL nor OPENAI_API_KEY set, there is nothing to talk to:
    /// if std::env::var("OPENAI_BASE_URL").is_err() && std::env::var("OPENAI_API_KEY").is_err() {
    ///     let err = capstore::models::OpenAiChat::from_env().unwrap_err();
    ///     assert_eq!(err.kind, capstore::agent::ModelErrorKind::Config);
    /// }
    /// ```
    pub fn from_env() -> Result<Self, ModelError> {
        let base = env("OPENAI_BASE_URL");
        let key = env("OPENAI_API_KEY");
        if base.is_none() && key.is_none() {
            return Err(ModelError::new(
                ModelErrorKind::Config,
                "set OPENAI_API_KEY (for OpenAI) or OPENAI_BASE_URL (for a compatible server)",
            ));
        }
        let base = base.unwrap_or_else(|| "https://api.openai.com/v1".into());
        let model = env("OPENAI_MODEL").unwrap_or_else(|| "gpt-4.1-mini".into());
        OpenAiChat::new(&base, key, model)
    }

    /// Sends `system` as the first message of every request.
    ///
    /// ```
    /// # let model = capstore::models::OpenAiChat::new("http://localhost:8080/v1", None, "m")?;
    /// let model = model.with_system("Answer in French.");
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Adds a field to every request body (`temperature`, `max_completion_tokens`,
    /// `parallel_tool_calls`, ...).
    ///
    /// ```
    /// # let model = capstore::models::OpenAiChat::new("http://localhost:8080/v1", None, "m")?;
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
    /// # let model = capstore::models::OpenAiChat::new("http://localhost:8080/v1", None, "m")?;
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
    /// let model = capstore::models::OpenAiChat::new("http://127.0.0.1:8080/v1", None, "m")?;
    /// assert_eq!(model.url(), "http://127.0.0.1:8080/v1/chat/completions");
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model name sent.
    ///
    /// ```
    /// let model = capstore::models::OpenAiChat::new("http://127.0.0.1:8080/v1", None, "m")?;
    /// assert_eq!(model.model(), "m");
    /// # Ok::<(), capstore::agent::ModelError>(())
    /// ```
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The request body for `request`.
    fn body(&self, request: &ModelRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = &self.system {
            messages.push(json!({ "role": "system", "content": system }));
        }
        for message in &request.messages {
            messages.push(match message {
                Message::User { text } => json!({ "role": "user", "content": text }),
                Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
                    json!({ "role": "assistant", "content": text })
                }
                Message::Assistant { text, tool_calls } => json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { json!(text) },
                    "tool_calls": tool_calls.iter().map(|c| json!({
                        "id": c.id,
                        "type": "function",
                        "function": { "name": c.name, "arguments": canonical_json(&c.arguments) },
                    })).collect::<Vec<_>>(),
                }),
                Message::ToolResult {
                    call_id, content, ..
                } => {
                    json!({ "role": "tool", "tool_call_id": call_id, "content": text_of(content) })
                }
            });
        }
        let mut body = self.options.clone();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(tools::openai_chat(&request.tools)),
            );
        }
        Value::Object(body)
    }
}

/// A tool result as the text a `tool` message carries: a string as it is, other JSON with its
/// keys sorted (the same text in every build, as the request body is).
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        other => canonical_json(other),
    }
}

/// The reply of a chat completion: its first choice's tool calls, refusal or content.
fn reply(body: &Value) -> Result<ModelReply, ModelError> {
    let message = &body["choices"][0]["message"];
    if !message.is_object() {
        return Err(malformed("no choices[0].message"));
    }
    if let Some(calls) = message["tool_calls"].as_array().filter(|c| !c.is_empty()) {
        return calls
            .iter()
            .map(tool_call)
            .collect::<Result<_, _>>()
            .map(ModelReply::ToolCalls);
    }
    if let Some(refusal) = message["refusal"].as_str() {
        return Ok(ModelReply::Final(refusal.to_string()));
    }
    match &message["content"] {
        Value::String(text) => Ok(ModelReply::Final(text.clone())),
        Value::Null => Ok(ModelReply::Final(String::new())),
        other => Err(malformed(format!("message content is {other}"))),
    }
}

fn tool_call(call: &Value) -> Result<ModelToolCall, ModelError> {
    let function = &call["function"];
    let (Some(id), Some(name)) = (call["id"].as_str(), function["name"].as_str()) else {
        return Err(malformed(format!("a tool call without id or name: {call}")));
    };
    // Arguments come as a JSON text; some servers send an object, or nothing for no arguments.
    let arguments = match &function["arguments"] {
        Value::String(text) if text.trim().is_empty() => json!({}),
        Value::String(text) => serde_json::from_str(text).map_err(|e| {
            malformed(format!(
                "the arguments of tool call {id} are not JSON ({e}): {text}"
            ))
        })?,
        Value::Null => json!({}),
        other => other.clone(),
    };
    Ok(ModelToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
    })
}

impl Model for OpenAiChat {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let auth = self.key.as_ref().map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let body = post_json(&self.client, &self.url, &headers, &self.body(request), &[]).await?;
        reply(&body)
    }
}
