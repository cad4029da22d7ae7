//! The index's configuration: BM25 parameters and field weights, validated up front.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::Bm25Error;
use super::scoring::Bm25Params;

/// How an index scores: [`Bm25Params`] and a weight per document field.
///
/// Field weighting is a simple BM25F: a document's term frequency is Σ over fields of
/// `weight · count`, its length Σ of `weight · field length`. Fields not listed weigh 1.0, so
/// with no weights the index is plain BM25 over the concatenated fields. A field weighing 0 is
/// ignored: its terms neither match nor count in the document's length or in `doc_freq`.
///
/// ```
/// use capstore::bm25::IndexConfig;
///
/// let mut config = IndexConfig::default();
/// config.field_weights.insert("name".into(), 3.0);
/// config.validate()?;
/// assert_eq!(config.field_weight("name"), 3.0);
/// assert_eq!(config.field_weight("description"), 1.0);
/// # Ok::<(), capstore::bm25::Bm25Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexConfig {
    /// `k1` and `b`.
    pub params: Bm25Params,
    /// Weights of named fields; unlisted fields weigh 1.0.
    pub field_weights: BTreeMap<String, f32>,
}

impl IndexConfig {
    /// Checks every parameter: `k1` finite and ≥ 0, `b` in [0, 1], weights finite and ≥ 0.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Params, IndexConfig};
    ///
    /// assert!(IndexConfig::default().validate().is_ok());
    /// let bad = IndexConfig { params: Bm25Params { k1: f32::NAN, b: 0.75 }, ..IndexConfig::default() };
    /// assert!(bad.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), Bm25Error> {
        let invalid = |name: String, value: f32, reason: &'static str| {
            Err(Bm25Error::InvalidParameter {
                name,
                value,
                reason,
            })
        };
        let Bm25Params { k1, b } = self.params;
        if !(k1.is_finite() && k1 >= 0.0) {
            return invalid("k1".into(), k1, "must be finite and at least 0");
        }
        if !(0.0..=1.0).contains(&b) {
            return invalid("b".into(), b, "must be between 0 and 1");
        }
        for (field, &weight) in &self.field_weights {
            if !(weight.is_finite() && weight >= 0.0) {
                return invalid(
                    format!("field_weights[{field:?}]"),
                    weight,
                    "must be finite and at least 0",
                );
            }
        }
        Ok(())
    }

    /// The weight of field `name`: its entry in `field_weights`, else 1.0.
    ///
    /// ```
    /// use capstore::bm25::IndexConfig;
    ///
    /// assert_eq!(IndexConfig::default().field_weight("anything"), 1.0);
    /// ```
    pub fn field_weight(&self, name: &str) -> f32 {
        self.field_weights.get(name).copied().unwrap_or(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_params(k1: f32, b: f32) -> IndexConfig {
        IndexConfig {
            params: Bm25Params { k1, b },
            ..IndexConfig::default()
        }
    }

    fn rejected_name(config: &IndexConfig) -> Option<String> {
        match config.validate() {
            Err(Bm25Error::InvalidParameter { name, .. }) => Some(name),
            Ok(()) => None,
        }
    }

    #[test]
    fn parameter_ranges() {
        assert_eq!(rejected_name(&with_params(0.0, 0.0)), None);
        assert_eq!(rejected_name(&with_params(100.0, 1.0)), None);
        assert_eq!(
            rejected_name(&with_params(-0.1, 0.5)).as_deref(),
            Some("k1")
        );
        assert_eq!(
            rejected_name(&with_params(f32::INFINITY, 0.5)).as_deref(),
            Some("k1")
        );
        assert_eq!(rejected_name(&with_params(1.2, -0.1)).as_deref(), Some("b"));
        assert_eq!(rejected_name(&with_params(1.2, 1.01)).as_deref(), Some("b"));
        assert_eq!(
            rejected_name(&with_params(1.2, f32::NAN)).as_deref(),
            Some("b")
        );
    }

    #[test]
    fn weights_must_be_finite_and_non_negative() {
        let mut config = IndexConfig::default();
        config.field_weights.insert("name".into(), 0.0);
        assert!(config.validate().is_ok());
        config.field_weights.insert("tags".into(), -1.0);
        let err = config.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid BM25 parameter field_weights[\"tags\"] = -1: must be finite and at least 0"
        );
        config.field_weights.insert("tags".into(), f32::INFINITY);
        assert!(config.validate().is_err());
    }
}
