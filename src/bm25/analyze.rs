//! A [`Document`] → what the index stores of it: each distinct term's field-weighted frequency
//! and the document's field-weighted length.

use super::config::IndexConfig;
use super::document::Document;
use super::hash::term_hash;
use super::scoring::saturating_f32;

/// One document, analysed: its distinct terms with their hashes,
/// each with `tf = Σ weight · count > 0`, and `len = Σ weight · field length`.
#[derive(Debug, PartialEq)]
pub(crate) struct Analyzed<'d> {
    pub(crate) terms: Vec<Term<'d>>,
    pub(crate) len: f32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Term<'d> {
    pub(crate) hash: u64,
    pub(crate) text: &'d str,
    pub(crate) tf: f32,
}

/// Analyses `doc` under `config`'s field weights. Sums run in `f64` (as the brute-force model in
/// the tests does) and saturate at `f32::MAX`, so huge weights cannot make a score NaN. Fields
/// weighing 0 are skipped, so that a zero weight means "not indexed" for `tf`, `dl` and `df`
/// alike. Terms come out in order of first occurrence.
pub(crate) fn analyze<'d>(doc: &'d Document, config: &IndexConfig) -> Analyzed<'d> {
    // A small open-addressing table (hash → index in `terms`), sized for at most half load:
    // linear in the tokens, where sorting them cost a third of an insert.
    let tokens = doc.len_tokens();
    let mask = (tokens * 2).next_power_of_two().max(8) - 1;
    let mut table: Vec<Option<usize>> = vec![None; mask + 1];
    let mut terms: Vec<Term<'d>> = Vec::with_capacity(tokens);
    let mut tfs: Vec<f64> = Vec::with_capacity(tokens);
    let mut len = 0.0f64;
    for (name, field) in doc.fields() {
        let weight = f64::from(config.field_weight(name));
        if weight <= 0.0 {
            continue;
        }
        len += weight * field.len() as f64;
        for token in field {
            let hash = term_hash(token);
            let mut at = hash as usize & mask;
            loop {
                match table.get(at).copied().flatten() {
                    None => {
                        if let Some(slot) = table.get_mut(at) {
                            *slot = Some(terms.len());
                        }
                        terms.push(Term {
                            hash,
                            text: token,
                            tf: 0.0,
                        });
                        tfs.push(weight);
                        break;
                    }
                    Some(i)
                        if terms
                            .get(i)
                            .is_some_and(|t| t.hash == hash && t.text == token) =>
                    {
                        if let Some(tf) = tfs.get_mut(i) {
                            *tf += weight;
                        }
                        break;
                    }
                    Some(_) => at = (at + 1) & mask,
                }
            }
        }
    }
    for (term, &tf) in terms.iter_mut().zip(&tfs) {
        term.tf = saturating_f32(tf);
    }
    terms.retain(|t| t.tf > 0.0);
    Analyzed {
        terms,
        len: saturating_f32(len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn weighted_frequencies_and_length() {
        let mut config = IndexConfig::default();
        config.field_weights.insert("name".into(), 2.0);
        config.field_weights.insert("hidden".into(), 0.0);
        let doc = Document::new()
            .with_field("name", toks("get weather"))
            .with_field("description", toks("weather now now"))
            .with_field("hidden", toks("secret weather"));
        let a = analyze(&doc, &config);
        let mut terms: Vec<(&str, f32)> = a.terms.iter().map(|t| (t.text, t.tf)).collect();
        terms.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(terms, [("get", 2.0), ("now", 2.0), ("weather", 3.0)]);
        assert!(a.terms.iter().all(|t| t.hash == term_hash(t.text)));
        assert_eq!(a.len, 2.0 * 2.0 + 3.0);
    }

    #[test]
    fn empty_documents() {
        let doc = Document::new();
        let a = analyze(&doc, &IndexConfig::default());
        assert!(a.terms.is_empty());
        assert_eq!(a.len, 0.0);
    }
}
