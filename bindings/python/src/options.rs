//! The settings a Python call gives a selection (`max_tools`, `provider`, `embedder`,
//! `lexical_weight`, `policy`), turned into the library's `SelectionPolicy`, `Provider` and a
//! `ContextBuilder`, exactly as the command line does for the same flags.

use std::sync::Arc;

use capstore::context::{ContextBuilder, HybridPolicy, Retrieval, SelectionPolicy};
use capstore::embed::{Embedder, MiniLm};
use capstore::provider::Provider;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;

use crate::errors;

/// The provider named by `name`: `"openai"` (chat completions), `"openai-responses"` or
/// `"anthropic"`.
pub(crate) fn provider(name: &str) -> PyResult<Provider> {
    match name {
        "openai" | "openai-chat" => Ok(Provider::OpenAiChat),
        "openai-responses" => Ok(Provider::OpenAiResponses),
        "anthropic" => Ok(Provider::Anthropic),
        other => Err(PyValueError::new_err(format!(
            "unknown provider {other:?}: expected \"openai\", \"openai-responses\" or \"anthropic\""
        ))),
    }
}

/// The name `provider` is given by in Python.
pub(crate) fn provider_name(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAiChat => "openai",
        Provider::OpenAiResponses => "openai-responses",
        Provider::Anthropic => "anthropic",
    }
}

/// What a selection is asked for: the policy's settings and the embedder.
#[derive(Clone)]
pub(crate) struct Settings {
    /// Tools to send: for one message, the turn's limit and the list's (the CLI's
    /// `--max-tools`, `SelectionPolicy::with_tool_limit`); for a conversation, the carried
    /// list's length (the policy's `max_tools`).
    pub(crate) max_tools: Option<usize>,
    /// A conversation's settings (`max_tools` is the list's) rather than one message's.
    pub(crate) conversation: bool,
    /// Hybrid retrieval with this model.
    pub(crate) embedder: Option<Arc<MiniLm>>,
    /// Hybrid retrieval's fixed lexical weight (`HybridPolicy::fixed`, the CLI's
    /// `--lexical-weight`); `None`: the library's default curve.
    pub(crate) lexical_weight: Option<f32>,
    /// Policy fields over the default, as JSON (the CLI's `eval --policy`).
    pub(crate) policy: Option<Value>,
}

impl Settings {
    /// Reads the Python arguments; `policy` is a dict of `SelectionPolicy` fields.
    pub(crate) fn new(
        max_tools: Option<usize>,
        conversation: bool,
        embedder: Option<&crate::embed::PyMiniLm>,
        lexical_weight: Option<f32>,
        policy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Settings> {
        if max_tools == Some(0) {
            return Err(PyValueError::new_err("max_tools must be at least 1"));
        }
        if lexical_weight.is_some() && embedder.is_none() {
            return Err(PyValueError::new_err(
                "lexical_weight needs an embedder (hybrid retrieval)",
            ));
        }
        if let Some(weight) = lexical_weight
            && !(0.0..=1.0).contains(&weight)
        {
            return Err(PyValueError::new_err(format!(
                "lexical_weight must be between 0 and 1, not {weight}"
            )));
        }
        let policy = match policy {
            Some(policy) if !policy.is_none() => Some(
                pythonize::depythonize::<Value>(policy)
                    .map_err(|e| errors::policy(format!("policy: {e}")))?,
            ),
            _ => None,
        };
        Ok(Settings {
            max_tools,
            conversation,
            embedder: embedder.map(|e| Arc::clone(&e.model)),
            lexical_weight,
            policy,
        })
    }

    /// What identifies the builder these settings make, for the store's cache of builders.
    pub(crate) fn key(&self) -> String {
        format!(
            "{:?}|{}|{:?}|{:?}|{}",
            self.max_tools,
            self.conversation,
            self.embedder.as_ref().map(Arc::as_ptr),
            self.lexical_weight.map(f32::to_bits),
            self.policy
                .as_ref()
                .map_or_else(String::new, Value::to_string),
        )
    }

    /// The builder: the policy (fields over the default, the catalog's `pinned` tools added,
    /// `max_tools`, hybrid retrieval with the embedder), checked.
    pub(crate) fn builder(&self, pinned: &[String]) -> PyResult<ContextBuilder> {
        let mut policy: SelectionPolicy = match &self.policy {
            Some(fields) => serde_json::from_value(fields.clone())
                .map_err(|e| errors::policy(format!("policy: {e}")))?,
            None => SelectionPolicy::default(),
        };
        for tool in pinned {
            if !policy.pinned_tools.contains(tool) {
                policy.pinned_tools.push(tool.clone());
            }
        }
        if let Some(max) = self.max_tools {
            if self.conversation {
                policy.max_tools = max;
            } else {
                policy = policy.with_tool_limit(max);
            }
        }
        if let Some(model) = &self.embedder {
            match (self.lexical_weight, &policy.retrieval) {
                (Some(weight), _) => {
                    policy.retrieval = Retrieval::Hybrid(HybridPolicy::fixed(weight));
                }
                // The policy's own hybrid settings stand.
                (None, Retrieval::Hybrid(_)) => {}
                (None, _) => policy.retrieval = Retrieval::Hybrid(HybridPolicy::default()),
            }
            let model: Arc<dyn Embedder> = model.clone();
            return Ok(ContextBuilder::with_policy(policy)
                .map_err(errors::policy)?
                .with_embedder(model));
        }
        ContextBuilder::with_policy(policy).map_err(errors::policy)
    }
}
