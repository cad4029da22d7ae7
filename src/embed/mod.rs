//! Sentence embedders: text in, a fixed-size vector out, for the dense half of hybrid selection.
//!
//! [`Embedder`] is the one thing the rest of capstore asks of a model: turn a batch of texts into
//! vectors of [`dimensions`](Embedder::dimensions) floats, the same text always into the same
//! vector. Plug in any model or embedding API by implementing it; capstore ships one local
//! implementation, `MiniLm` (feature `minilm`), all-MiniLM-L6-v2 run on the CPU.
//!
//! `MiniLm` reads the model from a directory (`config.json`, `tokenizer.json`,
//! `model.safetensors`; `bash scripts/minilm.sh` fetches them and prints where) and embeds as
//! sentence-transformers does: WordPiece tokens cut to 256, BERT, mean pooling, unit length.
//!
//! What it costs: nothing, unless a selection policy asks for hybrid retrieval. Embedding is
//! slow next to everything else capstore does (milliseconds a text, where a lexical selection
//! takes microseconds), so it never runs inside a write transaction or a snapshot read: tools are
//! embedded before their commit, and a turn's message before its selection. A process that
//! starts often (a CLI, a short-lived agent) can wrap its model in a [`VectorCache`], a file of
//! the vectors already made, and embed only the tools whose text changed since the last run.

use std::fmt;

#[cfg(feature = "minilm")]
mod bert;
mod cache;
#[cfg(feature = "minilm")]
mod gelu;
#[cfg(feature = "minilm")]
mod minilm;
mod vectors;

pub use cache::VectorCache;
#[cfg(feature = "minilm")]
pub use minilm::MiniLm;
pub use vectors::{
    DenseHit, EmbedReport, ToolVector, VECTORS, embed_missing, embedding_text, nearest,
};
pub(crate) use vectors::{NearestCache, check_shape, schema as vectors_schema};

/// A model that turns texts into vectors of a fixed size.
///
/// Implementations must be deterministic (the same text, the same vector) so that selections
/// stay reproducible, and safe to call from many threads at once. Vectors need not be unit
/// length: capstore normalises them before it compares them by cosine.
///
/// ```
/// use capstore::embed::{EmbedError, Embedder};
///
/// /// Counts letters: a toy, but an embedder all the same.
/// struct Letters;
/// impl Embedder for Letters {
///     fn model_id(&self) -> &str { "letters-v1" }
///     fn dimensions(&self) -> usize { 26 }
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts.iter().map(|text| {
///             let mut counts = vec![0.0; 26];
///             for c in text.bytes().filter(u8::is_ascii_lowercase) {
///                 counts[usize::from(c - b'a')] += 1.0;
///             }
///             counts
///         }).collect())
///     }
/// }
/// let vectors = Letters.embed(&["abc", "zz"])?;
/// assert_eq!((vectors.len(), vectors[1][25]), (2, 2.0));
/// # Ok::<(), EmbedError>(())
/// ```
pub trait Embedder: Send + Sync {
    /// Names the model and its version. Vectors made by different models are never compared:
    /// a store's vectors are tagged with this id, and a turn embedded by another model finds
    /// none of them.
    fn model_id(&self) -> &str;

    /// The length of every vector this embedder returns.
    fn dimensions(&self) -> usize;

    /// One vector per text, in the order given. An empty batch gives an empty result.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Why texts could not be embedded, or a model not loaded.
///
/// ```
/// use capstore::embed::EmbedError;
/// let err = EmbedError::Load { path: "/models/minilm".into(), reason: "no config.json".into() };
/// assert_eq!(err.to_string(), "cannot load the embedding model at /models/minilm: no config.json");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedError {
    /// The model's files could not be read or understood.
    Load {
        /// Where the model was looked for.
        path: String,
        /// What was missing or wrong.
        reason: String,
    },
    /// The model failed on a batch (tokenizing, running, or an API's answer).
    Embed {
        /// What went wrong.
        reason: String,
    },
    /// The embedder returned a vector of the wrong length, or the wrong number of vectors.
    Shape {
        /// What was expected.
        expected: String,
        /// What came back.
        got: String,
    },
    /// A [`VectorCache`]'s file could not be read or written, or holds something else than
    /// this model's vectors.
    Cache {
        /// The cache file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedError::Load { path, reason } => {
                write!(f, "cannot load the embedding model at {path}: {reason}")
            }
            EmbedError::Embed { reason } => write!(f, "embedding failed: {reason}"),
            EmbedError::Shape { expected, got } => {
                write!(f, "the embedder returned {got}, expected {expected}")
            }
            EmbedError::Cache { path, reason } => write!(f, "the vector cache {path}: {reason}"),
        }
    }
}

impl std::error::Error for EmbedError {}
