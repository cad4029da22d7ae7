//! Pruned top-k queries (MaxScore, `src/bm25/prune.rs`) against the plain path: on random
//! skewed corpora, after random inserts, upserts, removals and compactions, every query must
//! return exactly what the plain path returns (same keys, same scores to the bit, same order).
//!
//! The plain path is checked against a brute-force scorer by `bm25_model.rs`; here the two
//! paths of one index are checked against each other, on corpora shaped so that pruning has
//! something to prune: a few terms in most documents (bounds near 0) and many rare ones.

use capstore::bm25::{Bm25Index, Bm25Params, Document, IndexConfig};
use proptest::prelude::*;

const VOCAB: u16 = 400;
const KEYS: u16 = 600;

/// A term of a skewed (roughly Zipfian) vocabulary: the product of two uniform draws favours
/// small numbers, and term 0 to 3 are in most documents.
fn term(t: u16) -> String {
    format!("w{t}")
}

#[derive(Clone, Debug)]
enum Action {
    Insert(u16, Vec<u16>),
    Remove(u16),
    Compact,
}

fn skewed() -> impl Strategy<Value = u16> {
    (0..VOCAB, 0..VOCAB)
        .prop_map(|(a, b)| ((u32::from(a) * u32::from(b)) / u32::from(VOCAB)) as u16)
}

fn doc_strategy() -> impl Strategy<Value = Vec<u16>> {
    prop::collection::vec(skewed(), 1..30)
}

fn action_strategy() -> impl Strategy<Value = Action> {
    prop_oneof![
        12 => (0..KEYS, doc_strategy()).prop_map(|(k, d)| Action::Insert(k, d)),
        2 => (0..KEYS).prop_map(Action::Remove),
        1 => Just(Action::Compact),
    ]
}

/// (terms, weights, k) queries: terms skewed and repeated, some unknown.
fn query_strategy() -> impl Strategy<Value = (Vec<u16>, Vec<f32>, usize)> {
    (
        prop::collection::vec(prop_oneof![4 => skewed(), 1 => VOCAB..VOCAB + 5], 1..25),
        prop::collection::vec(prop_oneof![Just(1.0f32), 0.1f32..3.0, Just(0.0)], 25),
        prop_oneof![1..12usize, Just(0), Just(50), Just(usize::MAX)],
    )
}

fn document(terms: &[u16]) -> Document {
    let (name, rest) = terms.split_at(1.min(terms.len()));
    Document::new()
        .with_field("name", name.iter().map(|&t| term(t)).collect())
        .with_field("text", rest.iter().map(|&t| term(t)).collect())
}

fn check(index: &Bm25Index, queries: &[(Vec<u16>, Vec<f32>, usize)]) -> Result<(), String> {
    let pruned = index.clone().with_pruning_from(0);
    for (terms, weights, k) in queries {
        let plain_terms: Vec<String> = terms.iter().map(|&t| term(t)).collect();
        let (want, got) = (
            index.search(&plain_terms, *k),
            pruned.search(&plain_terms, *k),
        );
        if want != got {
            return Err(format!(
                "search {plain_terms:?} k={k}:\n{got:?}\nplain:\n{want:?}"
            ));
        }
        let weighted: Vec<(String, f32)> = plain_terms
            .iter()
            .zip(weights)
            .map(|(t, &w)| (t.clone(), w))
            .collect();
        let (want, got) = (
            index.search_weighted_all(&weighted, *k),
            pruned.search_weighted_all(&weighted, *k),
        );
        if want != got {
            return Err(format!(
                "weighted {weighted:?} k={k}:\n{got:?}\nplain:\n{want:?}"
            ));
        }
    }
    Ok(())
}

fn run(
    params: Bm25Params,
    actions: &[Action],
    queries: &[(Vec<u16>, Vec<f32>, usize)],
    merge_factor: usize,
) -> Result<(), String> {
    let config = IndexConfig {
        params,
        ..IndexConfig::default()
    };
    let mut index = Bm25Index::new(config)
        .map_err(|e| e.to_string())?
        .with_pruning_from(usize::MAX)
        .with_merge_factor(merge_factor);
    for (step, action) in actions.iter().enumerate() {
        match action {
            Action::Insert(k, d) => index.insert(&format!("k{k:03}"), &document(d)),
            Action::Remove(k) => {
                index.remove(&format!("k{k:03}"));
            }
            Action::Compact => index.compact(),
        }
        if step % 97 == 96 {
            check(&index, queries).map_err(|e| format!("after step {step}: {e}"))?;
        }
    }
    check(&index, queries)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn pruned_queries_return_what_the_plain_path_does(
        k1 in prop_oneof![Just(1.2f32), 0.0f32..3.0],
        b in prop_oneof![Just(0.75f32), 0.0f32..=1.0],
        actions in prop::collection::vec(action_strategy(), 50..700),
        queries in prop::collection::vec(query_strategy(), 1..12),
        merge_factor in 2usize..=4,
    ) {
        if let Err(e) = run(Bm25Params { k1, b }, &actions, &queries, merge_factor) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// Ties: many documents with the same terms and lengths score the same, and the top k must cut
/// through them by key exactly as the plain path does.
#[test]
fn ties_are_broken_by_key_as_on_the_plain_path() {
    let mut index = Bm25Index::new(IndexConfig::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .with_pruning_from(usize::MAX);
    for d in 0..3000u16 {
        let mut terms = vec![0, 1, 2];
        terms.push(3 + d % 7);
        if d % 50 == 0 {
            terms.push(100);
        }
        index.insert(
            &format!("d{:04}", (u32::from(d) * 7919) % 3000),
            &document(&terms),
        );
        if d % 13 == 0 {
            index.remove(&format!("d{:04}", (u32::from(d) * 31) % 3000));
        }
    }
    let queries: Vec<(Vec<u16>, Vec<f32>, usize)> = vec![
        (vec![0, 1, 2, 3, 100], vec![1.0; 5], 10),
        (vec![0, 0, 1, 5, 5, 100], vec![1.0; 6], 3),
        (vec![2, 4, 6, 8], vec![0.5, 1.0, 2.0, 1.0], 25),
        (vec![0, 1], vec![1.0; 2], 1000),
        (vec![0, 3, 100, 1000], vec![1.0; 4], 10),
    ];
    if let Err(e) = check(&index, &queries) {
        panic!("{e}");
    }
}
