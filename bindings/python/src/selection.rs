//! `Selection` and `SelectedTool`: a library `Selection` as Python sees it. The definitions are
//! `ToolExport::selection_json`'s, the reasons `Reason`'s `Display`, the channel `Channel`'s.
//! The selection itself is made without the GIL; the Python objects (definitions as dicts,
//! `SelectedTool`s with their reasons) are made the first time they are asked for, so that a
//! caller who needs only the names pays for no dicts.

use std::sync::Arc;

use capstore::context;
use capstore::provider::{Provider, ToolExport};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;

use crate::options::provider_name;

/// One tool of a selection: its definition in the provider's shape, and why it was chosen.
#[pyclass(frozen, module = "capstore._native")]
pub(crate) struct SelectedTool {
    /// The qualified name (`source/name`), the store's key.
    #[pyo3(get)]
    name: String,
    /// The provider-safe name the model sees and calls it by (`definition`'s name).
    #[pyo3(get)]
    export_name: String,
    /// The definition, a dict in the provider's shape.
    #[pyo3(get)]
    definition: Py<PyAny>,
    /// Why it was selected, strongest first, as sentences (the library's `Reason`).
    #[pyo3(get)]
    reasons: Vec<String>,
    /// The channel that brought it, as a phrase: "asked for by this message", "brought by a
    /// skill the message matched", "from the conversation", "brought by a tool it goes with",
    /// "kept from the last turn", "pinned".
    #[pyo3(get)]
    channel: String,
    /// The channel's kind: "message", "skill", "conversation", "companion", "kept", "pinned"
    /// or "all".
    #[pyo3(get)]
    channel_kind: String,
    /// Its position by relevance (0: the most relevant), whatever the send order.
    #[pyo3(get)]
    rank: usize,
    /// The relevance it was ranked by.
    #[pyo3(get)]
    score: f32,
    /// Estimated tokens of its definition.
    #[pyo3(get)]
    tokens: usize,
}

#[pymethods]
impl SelectedTool {
    /// The name, channel and reasons.
    fn __repr__(&self) -> String {
        format!(
            "SelectedTool(name={:?}, channel={:?}, reasons={:?})",
            self.name, self.channel_kind, self.reasons
        )
    }
}

/// The tools to send for one turn, in send order, with their definitions in the provider's
/// shape and the reasons for each.
///
/// `definitions` is the `tools` array of the provider's request; iterating gives the
/// `SelectedTool`s. The Python objects are made when first asked for.
#[pyclass(frozen, module = "capstore._native")]
pub(crate) struct Selection {
    made: Made,
    definitions: PyOnceLock<Vec<Py<PyAny>>>,
    tools: PyOnceLock<Vec<Py<SelectedTool>>>,
}

impl Selection {
    fn definition_objects(&self, py: Python<'_>) -> PyResult<&Vec<Py<PyAny>>> {
        self.definitions.get_or_try_init(py, || {
            self.made
                .export
                .selection_json(self.made.provider, &self.made.selection)
                .iter()
                .map(|definition| {
                    pythonize::pythonize(py, definition)
                        .map(Bound::unbind)
                        .map_err(|e| crate::errors::CapstoreError::new_err(e.to_string()))
                })
                .collect()
        })
    }

    fn tool_objects(&self, py: Python<'_>) -> PyResult<&Vec<Py<SelectedTool>>> {
        self.tools.get_or_try_init(py, || {
            let definitions = self.definition_objects(py)?;
            self.made
                .selection
                .tools
                .iter()
                .zip(definitions)
                .map(|(tool, definition)| {
                    Py::new(
                        py,
                        SelectedTool {
                            name: tool.key.to_string(),
                            export_name: self.made.export_name(tool),
                            definition: definition.clone_ref(py),
                            reasons: unique_reasons(tool),
                            channel: tool.channel.to_string(),
                            channel_kind: channel_kind(&tool.channel).to_string(),
                            rank: tool.rank,
                            score: tool.score,
                            tokens: tool.tokens,
                        },
                    )
                })
                .collect()
        })
    }
}

#[pymethods]
impl Selection {
    /// The selected tools (`SelectedTool`: definition, reasons, channel), in send order.
    #[getter]
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.tool_objects(py)?)
    }

    /// The tool definitions in the provider's shape, in send order: the request's `tools`.
    #[getter]
    fn definitions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.definition_objects(py)?)
    }

    /// The selected tools' qualified names, in send order.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.made.selection.keys().map(str::to_string).collect()
    }

    /// The names the model sees (the definitions' names), in send order.
    #[getter]
    fn export_names(&self) -> Vec<String> {
        self.made
            .selection
            .tools
            .iter()
            .map(|tool| self.made.export_name(tool))
            .collect()
    }

    /// The provider whose shape the definitions are in.
    #[getter]
    fn provider(&self) -> &'static str {
        provider_name(self.made.provider)
    }

    /// Estimated tokens of all the definitions.
    #[getter]
    fn tokens(&self) -> usize {
        self.made.selection.tokens
    }

    /// The store version the selection read.
    #[getter]
    fn version(&self) -> u64 {
        self.made.selection.version
    }

    /// True when nothing matched and the policy's no-match rule applied.
    #[getter]
    fn no_match(&self) -> bool {
        self.made.selection.no_match
    }

    /// The skills that contributed.
    #[getter]
    fn skills(&self) -> Vec<String> {
        self.made
            .selection
            .skills
            .iter()
            .map(|s| s.name.to_string())
            .collect()
    }

    /// Near misses: `(name, why it was not sent)`.
    #[getter]
    fn dropped(&self) -> Vec<(String, String)> {
        self.made
            .selection
            .dropped
            .iter()
            .map(|d| {
                // Its Display names the policy fields a limit comes from.
                (d.key.to_string(), d.reason.to_string())
            })
            .collect()
    }

    /// One line per tool: its exported name, the channel that brought it, and its reasons
    /// (each said once); then, when nothing matched, a line that says so; the list's size and
    /// where its limits come from; and the near misses with why each was not sent.
    fn explain(&self) -> String {
        let selection = &self.made.selection;
        let mut lines: Vec<String> = selection
            .tools
            .iter()
            .map(|tool| {
                format!(
                    "{:<32} {}: {}",
                    self.made.export_name(tool),
                    tool.channel,
                    unique_reasons(tool).join("; ")
                )
            })
            .collect();
        let fallback = selection
            .tools
            .iter()
            .any(|tool| tool.reasons.contains(&context::Reason::Fallback));
        if selection.no_match && !fallback {
            lines.push(no_match_line(selection.tools.is_empty()).to_string());
        } else if selection.tools.is_empty() {
            lines.push(
                "no tool sent: every candidate was dropped (the near misses below say why)"
                    .to_string(),
            );
        }
        lines.push(format!("list size: {}", size_line(&selection.size)));
        for dropped in &selection.dropped {
            lines.push(format!("not sent: {} ({})", dropped.key, dropped.reason));
        }
        lines.join("\n")
    }

    /// Why the list has its size: the message's asks and the limits that applied, with the
    /// policy fields they come from.
    #[getter]
    fn size(&self) -> String {
        size_line(&self.made.selection.size)
    }

    /// How many tools were selected.
    fn __len__(&self) -> usize {
        self.made.selection.tools.len()
    }

    /// The `SelectedTool`s, in send order.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.tools(py)?.into_any().try_iter()?.into_any())
    }

    /// Whether a tool (qualified or exported name) was selected.
    fn __contains__(&self, name: &str) -> bool {
        self.made
            .selection
            .tools
            .iter()
            .any(|tool| &*tool.key == name || self.made.export_name(tool) == name)
    }

    /// The exported names, tokens and provider.
    fn __repr__(&self) -> String {
        format!(
            "Selection(names={:?}, tokens={}, provider={:?})",
            self.export_names(),
            self.made.selection.tokens,
            provider_name(self.made.provider)
        )
    }
}

/// A library selection, with the export names of the snapshot it read.
pub(crate) struct Made {
    selection: context::Selection,
    export: Arc<ToolExport>,
    provider: Provider,
}

impl Made {
    pub(crate) fn new(
        selection: context::Selection,
        export: &Arc<ToolExport>,
        provider: Provider,
    ) -> Made {
        Made {
            selection,
            export: Arc::clone(export),
            provider,
        }
    }

    /// The Python `Selection`; its objects are made when asked for.
    pub(crate) fn into_py(self) -> Selection {
        Selection {
            made: self,
            definitions: PyOnceLock::new(),
            tools: PyOnceLock::new(),
        }
    }

    /// The name the model sees for `tool`: the export's (`ToolExport::tool_json` names a tool
    /// the export does not know by its sanitized name).
    fn export_name(&self, tool: &context::SelectedTool) -> String {
        match self.export.export_name(&tool.key) {
            Some(name) => name.to_string(),
            None => capstore::tools::sanitize(&tool.tool.name),
        }
    }
}

/// The channel's kind, as the library's serde form names it (`{"kind": "kept", ...}`).
fn channel_kind(channel: &context::Channel) -> &'static str {
    match channel {
        context::Channel::Pinned => "pinned",
        context::Channel::Message => "message",
        context::Channel::Skill => "skill",
        context::Channel::Conversation => "conversation",
        context::Channel::Companion => "companion",
        context::Channel::Kept { .. } => "kept",
        context::Channel::All => "all",
    }
}

/// A tool's reasons as sentences, each once, strongest first (two channels may give the same
/// reason: "BM25 4.16" for the message alone and with its asks).
fn unique_reasons(tool: &context::SelectedTool) -> Vec<String> {
    let mut reasons: Vec<String> = Vec::with_capacity(tool.reasons.len());
    for reason in &tool.reasons {
        let text = reason.to_string();
        if !reasons.contains(&text) {
            reasons.push(text);
        }
    }
    reasons
}

/// What `explain` says when nothing in the store matched the message.
fn no_match_line(nothing_sent: bool) -> &'static str {
    if nothing_sent {
        "nothing matched: no tool or skill shares a term with the message, so no tool is sent \
         (the policy's on_no_match is \"pinned_only\" and nothing is pinned); answer without \
         tools, ask the user to say more, pin a fallback or search tool (policy \
         {\"pinned_tools\": [...]}), or send every tool ({\"on_no_match\": \"all\"})"
    } else {
        "nothing matched: no tool or skill shares a term with the message; sent only what is \
         pinned or kept from earlier turns (the policy's on_no_match)"
    }
}

/// `ListSize` with the policy fields its limits come from.
fn size_line(size: &context::ListSize) -> String {
    match size {
        context::ListSize::Tools { .. } => format!(
            "{size} (its own: max_turn_tools, plus message.max_tools when the history is read; \
             the list: max_tools)"
        ),
        context::ListSize::Request { .. } => format!("{size} (the policy's request settings)"),
    }
}
