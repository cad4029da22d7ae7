//! The exception classes of the `capstore` package, and the library's errors mapped onto them.
//! Every exception carries the library's own message (its `Display`), which names the file,
//! the JSON path, the tool or the server at fault.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pyo3::create_exception!(
    capstore,
    CapstoreError,
    PyException,
    "Base class of every error capstore raises; the message is the library's."
);
pyo3::create_exception!(
    capstore,
    CatalogError,
    CapstoreError,
    "A catalog file could not be read, parsed, checked or loaded (the message names the file and the JSON path)."
);
pyo3::create_exception!(
    capstore,
    SelectError,
    CapstoreError,
    "A selection could not be made."
);
pyo3::create_exception!(
    capstore,
    PolicyError,
    CapstoreError,
    "A selection policy (or a setting given for one) is out of range or malformed."
);
pyo3::create_exception!(
    capstore,
    EmbedError,
    CapstoreError,
    "The embedding model could not be loaded, or texts could not be embedded."
);
pyo3::create_exception!(
    capstore,
    McpError,
    CapstoreError,
    "An mcpServers configuration could not be read, or a live MCP server could not be used."
);
pyo3::create_exception!(
    capstore,
    ToolError,
    CapstoreError,
    "A tool given as a dict is malformed, invalid by the store's rules, or already in the store."
);
pyo3::create_exception!(
    capstore,
    ToolNotFoundError,
    CapstoreError,
    "No tool of that name (qualified or exported) is in the store."
);

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CapstoreError", py.get_type::<CapstoreError>())?;
    m.add("CatalogError", py.get_type::<CatalogError>())?;
    m.add("SelectError", py.get_type::<SelectError>())?;
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    m.add("EmbedError", py.get_type::<EmbedError>())?;
    m.add("McpError", py.get_type::<McpError>())?;
    m.add("ToolError", py.get_type::<ToolError>())?;
    m.add("ToolNotFoundError", py.get_type::<ToolNotFoundError>())?;
    Ok(())
}

/// A catalog error, its message naming the file and the JSON path.
pub(crate) fn catalog(error: capstore::catalog::CatalogError) -> PyErr {
    CatalogError::new_err(error.to_string())
}

/// A selection error: an embedding failure as `EmbedError`, anything else as `SelectError`.
pub(crate) fn select(error: capstore::context::SelectError) -> PyErr {
    match error {
        capstore::context::SelectError::Embed(error) => embed(error),
        other => SelectError::new_err(other.to_string()),
    }
}

/// An embedding error.
pub(crate) fn embed(error: capstore::embed::EmbedError) -> PyErr {
    EmbedError::new_err(error.to_string())
}

/// A policy error.
pub(crate) fn policy(error: impl std::fmt::Display) -> PyErr {
    PolicyError::new_err(error.to_string())
}

/// A store error outside of writing tools (a snapshot that cannot answer): the base class.
pub(crate) fn store(error: capstore::StoreError) -> PyErr {
    CapstoreError::new_err(error.to_string())
}

/// An MCP error (configuration, list, live server).
pub(crate) fn mcp(error: impl std::fmt::Display) -> PyErr {
    McpError::new_err(error.to_string())
}

/// A tool that could not be read or written.
pub(crate) fn tool(message: impl std::fmt::Display) -> PyErr {
    ToolError::new_err(message.to_string())
}

/// A name that is no tool of the store.
pub(crate) fn not_found(name: &str) -> PyErr {
    ToolNotFoundError::new_err(format!(
        "no tool {name:?} in the store (neither a qualified nor an exported name)"
    ))
}
