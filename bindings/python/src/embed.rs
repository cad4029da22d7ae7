//! `capstore.MiniLm`: the library's local sentence embedder (all-MiniLM-L6-v2 on the CPU,
//! `embed::MiniLm`), for hybrid selection and as a plain embedding function.

use std::path::PathBuf;
use std::sync::Arc;

use capstore::embed::{Embedder, MiniLm};
use pyo3::prelude::*;

use crate::errors;

/// all-MiniLM-L6-v2, run on the CPU by capstore (`capstore::embed::MiniLm`), read from a
/// directory holding its `config.json`, `tokenizer.json` and `model.safetensors`
/// (`bash scripts/minilm.sh` fetches them and prints the directory). Nothing is downloaded.
///
/// Pass it as `embedder=` to `Store.select` or `Store.conversation` for hybrid selection (BM25
/// fused with the nearest tool vectors), or call `embed(texts)` for the vectors themselves
/// (384 floats a text, unit length), e.g. as the embedding function of a LangGraph store.
/// Loading and embedding release the GIL.
#[pyclass(frozen, name = "MiniLm", module = "capstore._native")]
pub(crate) struct PyMiniLm {
    pub(crate) model: Arc<MiniLm>,
}

#[pymethods]
impl PyMiniLm {
    /// Loads the model from the directory `path`; raises `EmbedError` naming the file that is
    /// missing or wrong.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let model = py.detach(|| MiniLm::load(&path)).map_err(errors::embed)?;
        Ok(PyMiniLm {
            model: Arc::new(model),
        })
    }

    /// One vector (a list of `dimensions` floats, unit length) per text, in order: what
    /// sentence-transformers' all-MiniLM-L6-v2 gives for the same texts.
    fn embed(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Vec<Vec<f32>>> {
        py.detach(|| {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            self.model.embed(&texts)
        })
        .map_err(errors::embed)
    }

    /// `embed(texts)`: the model is itself an embedding function.
    fn __call__(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Vec<Vec<f32>>> {
        self.embed(py, texts)
    }

    /// The vector of one text: `embed([text])[0]`.
    fn embed_one(&self, py: Python<'_>, text: String) -> PyResult<Vec<f32>> {
        let mut vectors = self.embed(py, vec![text])?;
        vectors
            .pop()
            .ok_or_else(|| errors::EmbedError::new_err("the model returned no vector"))
    }

    /// The model's name and version (`sentence-transformers/all-MiniLM-L6-v2`).
    #[getter]
    fn model_id(&self) -> &str {
        self.model.model_id()
    }

    /// The length of every vector (384).
    #[getter]
    fn dimensions(&self) -> usize {
        self.model.dimensions()
    }

    /// The model's id and dimensions.
    fn __repr__(&self) -> String {
        format!(
            "MiniLm(model_id={:?}, dimensions={})",
            self.model.model_id(),
            self.model.dimensions()
        )
    }
}
