//! Errors of a selection.

use std::fmt;

use crate::embed::EmbedError;
use crate::skills::SkillError;
use crate::store::StoreError;

/// A selection that could not be made. Missing pinned tools or skills are not errors: they are
/// reported in [`Selection::dropped`](super::Selection::dropped).
#[derive(Debug, Clone, PartialEq)]
pub enum SelectError {
    /// The snapshot could not answer (a handle from another store, for example).
    Store(StoreError),
    /// A skill's dependencies could not be resolved.
    Skill(SkillError),
    /// The policy asks for hybrid retrieval and the builder has no embedder
    /// ([`ContextBuilder::with_embedder`](super::ContextBuilder::with_embedder)).
    NoEmbedder,
    /// The turn's message could not be embedded, or its vector does not fit the embedder's.
    Embed(EmbedError),
}

impl From<EmbedError> for SelectError {
    fn from(e: EmbedError) -> Self {
        SelectError::Embed(e)
    }
}

impl From<StoreError> for SelectError {
    fn from(e: StoreError) -> Self {
        SelectError::Store(e)
    }
}

impl From<SkillError> for SelectError {
    fn from(e: SkillError) -> Self {
        SelectError::Skill(e)
    }
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectError::Store(e) => write!(f, "selection failed: {e}"),
            SelectError::Skill(e) => write!(f, "selection failed: {e}"),
            SelectError::NoEmbedder => write!(
                f,
                "selection failed: hybrid retrieval needs a builder with an embedder"
            ),
            SelectError::Embed(e) => write!(f, "selection failed: {e}"),
        }
    }
}

impl std::error::Error for SelectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SelectError::Store(e) => Some(e),
            SelectError::Skill(e) => Some(e),
            SelectError::NoEmbedder => None,
            SelectError::Embed(e) => Some(e),
        }
    }
}
