//! `capstore.Store`: a capstore store (`capstore::Store`) filled from a catalog, the bundled
//! catalog, tools given as dicts or live MCP servers, with its selections and search.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use capstore::catalog::Catalog;
use capstore::context::Turn;
use capstore::{TOOLS, Tool};
use pyo3::exceptions::{PyRuntimeWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::conversation::Conversation;
use crate::embed::PyMiniLm;
use crate::errors;
use crate::live::Live;
use crate::options::{self, Settings};
use crate::selection::{Made, Selection};
use crate::shared::{Inner, lock};

/// A store of tools (and skills) to select from, each turn, the few that reach the model.
///
/// Open one with `Store.bundled()`, `Store.from_catalog(path)`, `Store.from_tools(tools)` or
/// `Store.from_mcp_config(path)`, or start empty with `Store()` and `add_tools`. Selecting,
/// searching and loading release the GIL; a store may be used from several threads.
#[pyclass(frozen, module = "capstore._native")]
pub(crate) struct Store {
    pub(crate) inner: Arc<Inner>,
}

impl Store {
    fn wrap(store: capstore::Store, pinned: Vec<String>) -> Store {
        Store {
            inner: Inner::new(store, pinned),
        }
    }

    /// `tools` (an iterable of dicts) read as `Tool`s.
    fn read_tools(tools: &Bound<'_, PyAny>, source: Option<&str>) -> PyResult<Vec<Tool>> {
        if tools.is_instance_of::<PyDict>() {
            return Err(PyValueError::new_err(
                "tools must be a list of tool dicts, not one dict",
            ));
        }
        tools
            .try_iter()?
            .enumerate()
            .map(|(index, tool)| crate::tools::tool_from_py(&tool?, source, index))
            .collect()
    }
}

#[pymethods]
impl Store {
    /// An empty store; fill it with `add_tools`.
    #[new]
    fn new() -> Store {
        Store::wrap(capstore::Store::new(), Vec::new())
    }

    /// The catalog bundled with capstore (`catalog/default.json`: 37 skills, 222 tools across
    /// files, git, GitHub, web, calendar, email, databases, cloud, payments, maps and more),
    /// with its pinned tools.
    #[staticmethod]
    fn bundled(py: Python<'_>) -> PyResult<Store> {
        py.detach(|| {
            let store = capstore::Store::new();
            let report = Catalog::bundled()
                .and_then(|catalog| catalog.move_into(&store))
                .map_err(errors::catalog)?;
            Ok(Store::wrap(store, report.pinned))
        })
    }

    /// A store loaded from a catalog file (`capstore.catalog/v1`: skills, tools, pinned tools),
    /// checked whole and loaded in one transaction. Raises `CatalogError` naming the file and
    /// the JSON path at fault.
    #[staticmethod]
    fn from_catalog(py: Python<'_>, path: PathBuf) -> PyResult<Store> {
        py.detach(|| {
            let store = capstore::Store::new();
            let report = Catalog::load_file(&path, &store).map_err(errors::catalog)?;
            Ok(Store::wrap(store, report.pinned))
        })
    }

    /// A store of the given tools: dicts in OpenAI (chat completions or responses), Anthropic,
    /// MCP or capstore's own shape, told apart per dict. With `source`, every tool is
    /// namespaced as an MCP server's would be (`source/name`, tagged `source`). Raises
    /// `ToolError` naming the tool at fault.
    #[staticmethod]
    #[pyo3(signature = (tools, *, source=None))]
    fn from_tools(
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        source: Option<&str>,
    ) -> PyResult<Store> {
        let store = Store::new();
        store.add_tools(py, tools, source)?;
        Ok(store)
    }

    /// A store of the tools of every server of an `mcpServers` configuration (Claude Desktop's,
    /// Claude Code's `.mcp.json`, Cursor's `mcp.json`; stdio and Streamable HTTP; `${VAR}`
    /// expanded), connected live through capstore's `McpHub` on a runtime the store owns: each
    /// server's tools are `server/name` and kept in step with the server while the store
    /// lives (`close()` stops the servers).
    ///
    /// A server that cannot start or answer within `connect_timeout` seconds is retried in the
    /// background; it raises `McpError` with `strict=True`, and gives a `RuntimeWarning`
    /// otherwise (`servers()` says how each went). With `quarantine=True` tools are checked
    /// against the configuration's trust file as `capstore serve` does (a changed definition
    /// is held back until approved with `capstore approve`).
    #[staticmethod]
    #[pyo3(signature = (path, *, connect_timeout=30.0, quarantine=false, strict=false))]
    fn from_mcp_config(
        py: Python<'_>,
        path: PathBuf,
        connect_timeout: f64,
        quarantine: bool,
        strict: bool,
    ) -> PyResult<Store> {
        let timeout = Duration::try_from_secs_f64(connect_timeout).map_err(|_| {
            PyValueError::new_err(format!(
                "connect_timeout must be a number of seconds >= 0, not {connect_timeout}"
            ))
        })?;
        let store = capstore::Store::new();
        let live = py
            .detach(|| Live::connect(&store, &path, timeout, quarantine))
            .map_err(errors::mcp)?;
        let failures: Vec<String> = live
            .startup()
            .iter()
            .filter_map(|s| s.result.as_ref().err().map(ToString::to_string))
            .collect();
        if strict && let Some(first) = failures.first() {
            let mut live = live;
            py.detach(|| live.shutdown());
            return Err(errors::mcp(first));
        }
        for failure in &failures {
            let message = std::ffi::CString::new(format!("{failure} (going on without it)"))
                .unwrap_or_default();
            PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &message, 1)?;
        }
        let wrapped = Store::wrap(store, Vec::new());
        *lock(&wrapped.inner.live) = Some(live);
        Ok(wrapped)
    }

    /// Adds tools (dicts, in any shape `from_tools` takes) in one transaction: all of them, or
    /// none when one is malformed or already in the store (`ToolError`). Returns their
    /// qualified names.
    #[pyo3(signature = (tools, *, source=None))]
    fn add_tools(
        &self,
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        source: Option<&str>,
    ) -> PyResult<Vec<String>> {
        let tools = Store::read_tools(tools, source)?;
        let inner = Arc::clone(&self.inner);
        py.detach(move || inner.insert(tools))
    }

    /// The tools to send for one message: at most `max_tools` (default: the policy's, 24),
    /// in the `provider`'s shape (`"openai"`, `"openai-responses"` or `"anthropic"`), each
    /// with why it was chosen. With `embedder` (a `MiniLm`), hybrid retrieval: BM25 fused with
    /// the nearest tool vectors (the tools are embedded the first time, then as they change);
    /// `lexical_weight` fixes BM25's share (else the library's curve). `policy` is a dict of
    /// `SelectionPolicy` fields over the default (`{"token_budget": 2000}`).
    #[pyo3(signature = (message, *, max_tools=None, provider="openai", embedder=None, lexical_weight=None, policy=None))]
    #[allow(clippy::too_many_arguments)]
    fn select(
        &self,
        py: Python<'_>,
        message: String,
        max_tools: Option<usize>,
        provider: &str,
        embedder: Option<&Bound<'_, PyMiniLm>>,
        lexical_weight: Option<f32>,
        policy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Selection> {
        let settings = Settings::new(
            max_tools,
            false,
            embedder.map(Bound::get),
            lexical_weight,
            policy,
        )?;
        let provider = options::provider(provider)?;
        let inner = Arc::clone(&self.inner);
        let made = py.detach(move || -> PyResult<Made> {
            let builder = inner.builder(&settings)?;
            inner.prepare(&settings)?;
            let snapshot = inner.store.snapshot();
            let selection = builder
                .select(&snapshot, &Turn::new(message))
                .map_err(errors::select)?;
            let export = inner.export(&snapshot)?;
            Ok(Made::new(selection, &export, provider))
        })?;
        Ok(made.into_py())
    }

    /// A conversation over this store: `select` each user message in turn, `record_tool_use`
    /// for each tool the model calls. It carries the tool list across turns (last turn's tools
    /// keep their place, new ones are appended), so that providers' prompt caches stay warm.
    /// `max_tools` is the carried list's length (default 24); the other settings are
    /// `select`'s. With `learn` (the default), each turn's recorded calls are counted into the
    /// store's usage, so that later selections bring the tools called together.
    #[pyo3(signature = (*, max_tools=None, provider="openai", embedder=None, lexical_weight=None, policy=None, learn=true))]
    #[allow(clippy::too_many_arguments)]
    fn conversation(
        &self,
        max_tools: Option<usize>,
        provider: &str,
        embedder: Option<&Bound<'_, PyMiniLm>>,
        lexical_weight: Option<f32>,
        policy: Option<&Bound<'_, PyAny>>,
        learn: bool,
    ) -> PyResult<Conversation> {
        let settings = Settings::new(
            max_tools,
            true,
            embedder.map(Bound::get),
            lexical_weight,
            policy,
        )?;
        // Checked now: a bad policy is the caller's mistake, not the first turn's.
        self.inner.builder(&settings)?;
        Ok(Conversation::new(
            Arc::clone(&self.inner),
            settings,
            options::provider(provider)?,
            learn,
        ))
    }

    /// The `k` tools whose text best matches `query` by BM25 (the store's index, as the
    /// `search_tools` tool searches), best first: dicts with `name` (qualified),
    /// `description` and `score`.
    #[pyo3(signature = (query, k=5))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: String,
        k: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let inner = Arc::clone(&self.inner);
        let hits = py.detach(move || -> PyResult<Vec<(String, String, f32)>> {
            let snapshot = inner.store.snapshot();
            let hits = snapshot.search(&TOOLS, &query, k).map_err(errors::store)?;
            Ok(hits
                .into_iter()
                .map(|hit| {
                    (
                        hit.key.to_string(),
                        hit.record.description.clone(),
                        hit.score,
                    )
                })
                .collect())
        })?;
        hits.into_iter()
            .map(|(name, description, score)| {
                let dict = PyDict::new(py);
                dict.set_item("name", name)?;
                dict.set_item("description", description)?;
                dict.set_item("score", score)?;
                Ok(dict)
            })
            .collect()
    }

    /// Every tool's qualified name, in key order.
    fn tools(&self) -> PyResult<Vec<String>> {
        let snapshot = self.inner.store.snapshot();
        Ok(snapshot
            .iter(&TOOLS)
            .map_err(errors::store)?
            .keys()
            .map(ToString::to_string)
            .collect())
    }

    /// One tool's definition in the `provider`'s shape; `name` is qualified or exported.
    #[pyo3(signature = (name, *, provider="openai"))]
    fn definition<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        provider: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let provider = options::provider(provider)?;
        let key = self.inner.resolve(name)?;
        let snapshot = self.inner.store.snapshot();
        let tool = snapshot
            .get(&TOOLS, &key)
            .map_err(errors::store)?
            .ok_or_else(|| errors::not_found(name))?;
        let json = self
            .inner
            .export(&snapshot)?
            .tool_json(provider, &key, tool);
        pythonize::pythonize(py, &json).map_err(|e| errors::CapstoreError::new_err(e.to_string()))
    }

    /// The provider-safe name the model sees for the tool `name` (qualified or exported).
    fn export_name(&self, name: &str) -> PyResult<String> {
        let key = self.inner.resolve(name)?;
        let snapshot = self.inner.store.snapshot();
        let export = self.inner.export(&snapshot)?;
        Ok(export.export_name(&key).unwrap_or(&key).to_string())
    }

    /// The qualified name behind `name` (an exported name as the model calls it, or a
    /// qualified name); raises `ToolNotFoundError` if it is no tool of the store.
    fn resolve(&self, name: &str) -> PyResult<String> {
        self.inner.resolve(name)
    }

    /// Estimated tokens of the tool `name`'s definition (capstore's `estimate_tokens`: four
    /// bytes a token); `name` is qualified or exported.
    fn estimate_tokens(&self, name: &str) -> PyResult<usize> {
        let key = self.inner.resolve(name)?;
        let snapshot = self.inner.store.snapshot();
        let tool = snapshot
            .get(&TOOLS, &key)
            .map_err(errors::store)?
            .ok_or_else(|| errors::not_found(name))?;
        Ok(capstore::context::estimate_tokens(tool))
    }

    /// The store's version: the number of the last commit (each load or `add_tools` is one).
    #[getter]
    fn version(&self) -> u64 {
        self.inner.store.version()
    }

    /// How each live MCP server's start went (empty unless opened with `from_mcp_config`):
    /// dicts with `name`, `ok`, `tools` (qualified names imported), `error` (or None),
    /// `seconds`, and `held` (tools the quarantine holds back, with why).
    fn servers<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let live = lock(&self.inner.live);
        let Some(live) = live.as_ref() else {
            return Ok(Vec::new());
        };
        let held = live.held();
        live.startup()
            .iter()
            .map(|startup| {
                let dict = PyDict::new(py);
                dict.set_item("name", &startup.server)?;
                dict.set_item("ok", startup.result.is_ok())?;
                let (tools, error) = match &startup.result {
                    Ok(report) => {
                        let mut tools = report.added.clone();
                        tools.extend(report.changed.iter().cloned());
                        (tools, None)
                    }
                    Err(error) => (Vec::new(), Some(error.to_string())),
                };
                dict.set_item("tools", tools)?;
                dict.set_item("error", error)?;
                dict.set_item("seconds", startup.elapsed.as_secs_f64())?;
                let prefix = format!("{}/", startup.server);
                let held: Vec<(String, String)> = held
                    .iter()
                    .filter(|(key, _)| key.starts_with(&prefix))
                    .cloned()
                    .collect();
                dict.set_item("held", held)?;
                Ok(dict)
            })
            .collect()
    }

    /// Stops the live MCP servers (if any); their tools stay in the store. Also done when the
    /// store is garbage-collected.
    fn close(&self, py: Python<'_>) {
        let inner = Arc::clone(&self.inner);
        py.detach(move || {
            if let Some(live) = lock(&inner.live).as_mut() {
                live.shutdown();
            }
        });
    }

    /// How many tools the store holds.
    fn __len__(&self) -> PyResult<usize> {
        self.inner
            .store
            .snapshot()
            .count(&TOOLS)
            .map_err(errors::store)
    }

    /// Whether `name` (qualified or exported) is a tool of the store.
    fn __contains__(&self, name: &str) -> bool {
        self.inner.resolve(name).is_ok()
    }

    /// The store's size and version.
    fn __repr__(&self) -> PyResult<String> {
        Ok(format!(
            "Store(tools={}, version={})",
            self.__len__()?,
            self.inner.store.version()
        ))
    }
}
