//! `capstore._native`: the native half of the `capstore` Python package.
//!
//! A thin layer over capstore's public API: it converts Python values to the library's types
//! and back, releases the GIL while the library works (loading, selecting, embedding), and
//! raises the library's errors as typed Python exceptions carrying the library's messages. It
//! holds no selection logic: every choice is `ContextBuilder::select`'s, every definition
//! `provider::ToolExport`'s, every reason the library's `Display`.
//!
//! - [`store`]: `Store` (from a catalog, the bundled catalog, tools as dicts, an `mcpServers`
//!   configuration), its selections and search.
//! - [`conversation`]: `Conversation`, the carried list across turns.
//! - [`selection`]: `Selection` and `SelectedTool`, what a selection returns to Python.
//! - [`tools`]: tool dicts in OpenAI, Anthropic, MCP or capstore's own shape.
//! - [`embed`]: `MiniLm`, the local sentence embedder.
//! - [`live`]: live MCP servers on a runtime the store owns.
//! - [`errors`]: the exception classes and the mapping of the library's errors onto them.

#![forbid(unsafe_code)]

mod conversation;
mod embed;
mod errors;
mod live;
mod options;
mod selection;
mod shared;
mod store;
mod tools;

use pyo3::prelude::*;

/// Estimated tokens of one tool definition as sent to a model (name, description and input
/// schema at four bytes a token): capstore's `context::estimate_tokens`. `tool` is a dict in
/// any shape `Store.from_tools` takes.
#[pyfunction]
fn estimate_tokens(tool: &Bound<'_, PyAny>) -> PyResult<usize> {
    let tool = tools::tool_from_py(tool, None, 0)?;
    Ok(capstore::context::estimate_tokens(&tool))
}

/// The `capstore._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<store::Store>()?;
    m.add_class::<conversation::Conversation>()?;
    m.add_class::<selection::Selection>()?;
    m.add_class::<selection::SelectedTool>()?;
    m.add_class::<embed::PyMiniLm>()?;
    m.add_function(wrap_pyfunction!(estimate_tokens, m)?)?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
