//! The errors of the BM25 index: only configuration can be wrong; every other input is valid.

use std::fmt;

/// A BM25 configuration the index refuses, naming the parameter.
///
/// ```
/// use capstore::bm25::{Bm25Error, Bm25Params, IndexConfig};
///
/// let config = IndexConfig { params: Bm25Params { k1: 1.2, b: 2.0 }, ..IndexConfig::default() };
/// let err = config.validate().unwrap_err();
/// assert!(matches!(&err, Bm25Error::InvalidParameter { name, .. } if name == "b"));
/// assert_eq!(err.to_string(), "invalid BM25 parameter b = 2: must be between 0 and 1");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Bm25Error {
    /// A parameter out of its range.
    InvalidParameter {
        /// Which one: `k1`, `b`, or `field_weights["<field>"]`.
        name: String,
        /// The value given.
        value: f32,
        /// What it must be.
        reason: &'static str,
    },
}

impl fmt::Display for Bm25Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidParameter {
                name,
                value,
                reason,
            } => write!(f, "invalid BM25 parameter {name} = {value}: {reason}"),
        }
    }
}

impl std::error::Error for Bm25Error {}
