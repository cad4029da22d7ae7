//! One JSON request to a model's server, its failures typed.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::agent::{ModelError, ModelErrorKind};

/// How long a request may take unless the adapter is told otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// A client for `timeout`; fails only if the TLS back-end cannot start.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| ModelError::new(ModelErrorKind::Config, format!("HTTP client: {e}")))
}

/// `base` with `path` appended, one `/` between them.
pub(crate) fn endpoint(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// POSTs `body` to `url` with `headers`; the reply's JSON, or the failure typed: transport,
/// rate limit (429, or a provider's overload status in `overloaded`), other HTTP statuses
/// (with the provider's error message when its body has one), a body that is not JSON.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
    overloaded: &[u16],
) -> Result<Value, ModelError> {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        // Keys sorted, so that the same request is the same bytes in every build (serde_json
        // keeps the order written where a crate turned on its `preserve_order`: rig does) and
        // the provider's prompt cache sees the same prefix.
        .body(crate::tools::canonical_json(body));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let transport = |e: reqwest::Error| {
        let what = if e.is_timeout() {
            "timed out"
        } else {
            "failed"
        };
        ModelError::new(ModelErrorKind::Transport, format!("POST {url} {what}: {e}"))
    };
    let response = request.send().await.map_err(transport)?;
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let bytes = response.bytes().await.map_err(transport)?;
    let json: Result<Value, _> = serde_json::from_slice(&bytes);
    if (200..300).contains(&status) {
        return json.map_err(|e| {
            ModelError::new(
                ModelErrorKind::Malformed,
                format!("POST {url}: the reply is not JSON: {e}"),
            )
        });
    }
    let detail = json
        .ok()
        .and_then(|j| j["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(300).collect());
    let kind = if status == 429 || overloaded.contains(&status) {
        ModelErrorKind::RateLimited { retry_after }
    } else {
        ModelErrorKind::Http { status }
    };
    let wait = match retry_after {
        Some(d) => format!(" (retry after {}s)", d.as_secs_f64()),
        None => String::new(),
    };
    Err(ModelError::new(
        kind,
        format!("POST {url}: HTTP {status}{wait}: {detail}"),
    ))
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds; an HTTP date is not read.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    let ms = number("retry-after-ms").map(|ms| ms / 1000.0);
    Duration::try_from_secs_f64(ms.or_else(|| number("retry-after"))?).ok()
}

/// A reply that is not as the provider documents it.
pub(crate) fn malformed(what: impl std::fmt::Display) -> ModelError {
    ModelError::new(
        ModelErrorKind::Malformed,
        format!("malformed reply: {what}"),
    )
}

/// The environment variable `name`, when set and not empty.
pub(crate) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
