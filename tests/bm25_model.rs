//! Model-based property test of `capstore::bm25::Bm25Index`, in the style of imbl's
//! `src/tests/ordset.rs`: random configurations and random sequences of writes and searches are
//! applied both to the index and to a brute-force scorer written plainly below (f64, N, avgdl
//! and df recomputed from a `BTreeMap` of documents at every step). After every step the two
//! must agree on the documents, `N`, `avgdl`, every `doc_freq`, every document's length and
//! score, and on search results; clones taken earlier must still answer as they did.
//!
//! Small merge factors make merges happen inside the sequences. The number of cases follows
//! proptest's defaults (`PROPTEST_CASES` raises it). A failing case prints as the Rust calls
//! that reproduce it.

use std::collections::BTreeMap;
use std::fmt;

use capstore::bm25::{Bm25Index, Bm25Params, Document, Hit, IndexConfig};
use proptest::prelude::*;

mod common;
use common::bm25_reference::{Reference, close};

const VOCAB: usize = 20;
const KEYS: u8 = 24;
/// Upserts draw from the first few keys so that they usually replace a document.
const HOT_KEYS: u8 = 6;
/// Clones kept alive and re-checked (the most recent ones).
const MAX_SNAPSHOTS: usize = 4;

fn term(t: u8) -> String {
    format!("t{t:02}")
}

fn key(k: u8) -> String {
    format!("k{k:02}")
}

fn field(f: usize) -> String {
    format!("f{f}")
}

/// A document as generated: (field number, term numbers) per field.
#[derive(Clone, PartialEq)]
struct Doc(Vec<(usize, Vec<u8>)>);

impl Doc {
    fn document(&self) -> Document {
        self.0.iter().fold(Document::new(), |d, (f, terms)| {
            d.with_field(&field(*f), terms.iter().map(|&t| term(t)).collect())
        })
    }
}

impl fmt::Debug for Doc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Document::new()")?;
        for (n, terms) in &self.0 {
            let terms: Vec<String> = terms.iter().map(|&t| term(t)).collect();
            write!(f, ".with_field({:?}, vec!{:?})", field(*n), terms)?;
        }
        Ok(())
    }
}

#[derive(Clone)]
enum Action {
    Insert(u8, Doc),
    Upsert(u8, Doc),
    Remove(u8),
    Compact,
    Search(Vec<u8>, usize),
    /// A weighted query: (term, weight) occurrences.
    SearchWeighted(Vec<(u8, f32)>, usize),
    Snapshot,
}

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Insert(k, doc) => write!(f, "index.insert({:?}, &{doc:?});", key(*k)),
            Action::Upsert(k, doc) => write!(f, "index.insert({:?}, &{doc:?}); // upsert", key(*k)),
            Action::Remove(k) => write!(f, "index.remove({:?});", key(*k)),
            Action::Compact => write!(f, "index.compact();"),
            Action::Search(q, k) => {
                let q: Vec<String> = q.iter().map(|&t| term(t)).collect();
                write!(f, "index.search(&{q:?}, {k});")
            }
            Action::SearchWeighted(q, k) => {
                let q: Vec<(String, f32)> = q.iter().map(|&(t, w)| (term(t), w)).collect();
                write!(f, "index.search_weighted(&{q:?}, {k}, |_| true);")
            }
            Action::Snapshot => write!(f, "let snapshot = index.clone();"),
        }
    }
}

#[derive(Clone)]
struct Case {
    params: Bm25Params,
    /// Weight per field; `None`: not listed (weighs 1.0).
    weights: Vec<Option<f32>>,
    merge_factor: Option<usize>,
    actions: Vec<Action>,
}

impl Case {
    fn config(&self) -> IndexConfig {
        let mut config = IndexConfig {
            params: self.params,
            ..IndexConfig::default()
        };
        for (f, w) in self.weights.iter().enumerate() {
            if let Some(w) = w {
                config.field_weights.insert(field(f), *w);
            }
        }
        config
    }
}

/// Prints the case as the program that reproduces it.
impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f)?;
        writeln!(
            f,
            "let mut config = IndexConfig {{ params: {:?}, ..IndexConfig::default() }};",
            self.params
        )?;
        for (n, w) in self.weights.iter().enumerate() {
            if let Some(w) = w {
                writeln!(
                    f,
                    "config.field_weights.insert({:?}.into(), {w:?});",
                    field(n)
                )?;
            }
        }
        write!(f, "let mut index = Bm25Index::new(config).unwrap()")?;
        match self.merge_factor {
            Some(t) => writeln!(f, ".with_merge_factor({t});")?,
            None => writeln!(f, ";")?,
        }
        for a in &self.actions {
            writeln!(f, "{a:?}")?;
        }
        Ok(())
    }
}

fn doc_strategy(n_fields: usize) -> impl Strategy<Value = Doc> {
    prop::collection::vec(
        (0..n_fields, prop::collection::vec(0..VOCAB as u8, 0..=15)),
        0..=n_fields,
    )
    .prop_map(Doc)
}

fn action_strategy(n_fields: usize) -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => (0..KEYS, doc_strategy(n_fields)).prop_map(|(k, d)| Action::Insert(k, d)),
        2 => (0..HOT_KEYS, doc_strategy(n_fields)).prop_map(|(k, d)| Action::Upsert(k, d)),
        2 => (0..KEYS).prop_map(Action::Remove),
        1 => Just(Action::Compact),
        3 => (
            prop::collection::vec(0..(VOCAB as u8 + 2), 0..8),
            prop_oneof![0..12usize, Just(usize::MAX)],
        )
            .prop_map(|(q, k)| Action::Search(q, k)),
        1 => (
            prop::collection::vec(
                (0..(VOCAB as u8 + 2), prop_oneof![Just(0.0f32), Just(1.0), 0.1f32..3.0]),
                0..8
            ),
            prop_oneof![0..12usize, Just(usize::MAX)],
        )
            .prop_map(|(q, k)| Action::SearchWeighted(q, k)),
        1 => Just(Action::Snapshot),
    ]
}

fn weight_strategy() -> impl Strategy<Value = Option<f32>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(0.0)),
        1 => Just(Some(1.0)),
        3 => (0.05f32..4.0).prop_map(Some),
    ]
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (1usize..=3)
        .prop_flat_map(|n_fields| {
            (
                (0.0f32..3.0, 0.0f32..=1.0),
                prop::collection::vec(weight_strategy(), n_fields),
                prop_oneof![Just(None), Just(Some(2)), Just(Some(4))],
                prop::collection::vec(action_strategy(n_fields), 1..60),
            )
        })
        .prop_map(|((k1, b), weights, merge_factor, actions)| Case {
            params: Bm25Params { k1, b },
            weights,
            merge_factor,
            actions,
        })
}

// -------------------------------------------------------------------------------------------
// The brute-force reference
// -------------------------------------------------------------------------------------------

/// The index's hits agree with the reference's ranking: same length, scores equal rank by
/// rank, each hit's own score right, sorted with ties by key, and no document clearly better
/// than the last hit left out.
fn check_hits(hits: &[Hit], reference: &[(String, f64)], k: usize) -> Result<(), String> {
    let expected_len = reference.len().min(k);
    if hits.len() != expected_len {
        return Err(format!("{} hits, expected {expected_len}", hits.len()));
    }
    let by_key: BTreeMap<&str, f64> = reference.iter().map(|(k, s)| (k.as_str(), *s)).collect();
    for (rank, (hit, (_, want))) in hits.iter().zip(reference).enumerate() {
        let got = f64::from(hit.score);
        if !close(got, *want) {
            return Err(format!("rank {rank}: score {got}, reference {want}"));
        }
        match by_key.get(&*hit.key) {
            Some(own) if close(got, *own) => {}
            own => {
                return Err(format!(
                    "rank {rank}: {} scored {got}, reference {own:?}",
                    hit.key
                ));
            }
        }
    }
    for w in hits.windows(2) {
        let ordered = w[0].score > w[1].score || (w[0].score == w[1].score && w[0].key < w[1].key);
        if !ordered {
            return Err(format!("out of order: {:?} before {:?}", w[0], w[1]));
        }
    }
    if let Some(last) = hits.last() {
        let last = f64::from(last.score);
        for (key, s) in reference {
            if *s > last && !close(*s, last) && !hits.iter().any(|h| &*h.key == key) {
                return Err(format!(
                    "{key} ({s}) beats the last hit ({last}) but is missing"
                ));
            }
        }
    }
    Ok(())
}

fn query_terms(q: &[u8]) -> Vec<String> {
    q.iter().map(|&t| term(t)).collect()
}

/// Everything the index reports must agree with the model.
fn check_state(index: &Bm25Index, model: &Reference<'_>, probe: &[String]) -> Result<(), String> {
    let keys: Vec<String> = index.keys().iter().map(|k| k.to_string()).collect();
    let model_keys: Vec<String> = model.docs.keys().cloned().collect();
    if keys != model_keys {
        return Err(format!("keys {keys:?}, model {model_keys:?}"));
    }
    if index.len() != model.docs.len() || index.is_empty() != model.docs.is_empty() {
        return Err(format!("len {}, model {}", index.len(), model.docs.len()));
    }
    let stats = index.stats();
    if stats.n_docs != model.n()
        || !close(stats.total_len, model.total_len())
        || !close(f64::from(stats.avgdl), model.avgdl())
    {
        return Err(format!(
            "stats {stats:?}, model N {} total {} avgdl {}",
            model.n(),
            model.total_len(),
            model.avgdl()
        ));
    }
    for t in (0..VOCAB as u8 + 2).map(term) {
        if index.doc_freq(&t) != model.df(&t) {
            return Err(format!(
                "df({t}) = {}, model {}",
                index.doc_freq(&t),
                model.df(&t)
            ));
        }
    }
    for (key, doc) in &model.docs {
        let dl = index.doc_len(key).map(f64::from);
        if !dl.is_some_and(|dl| close(dl, model.dl(doc))) {
            return Err(format!("doc_len({key}) = {dl:?}, model {}", model.dl(doc)));
        }
        let want = model.score(doc, probe);
        let got = index.score(key, probe).map(f64::from);
        if !got.is_some_and(|got| close(got, want)) {
            return Err(format!("score({key}, {probe:?}) = {got:?}, model {want}"));
        }
        let explained = index
            .explain(key, probe)
            .ok_or_else(|| format!("no explanation for {key}"))?;
        let sum: f64 = explained.terms.iter().map(|t| f64::from(t.score)).sum();
        if got != Some(f64::from(explained.score)) || !close(sum, f64::from(explained.score)) {
            return Err(format!("explain({key}) = {explained:?}, score {got:?}"));
        }
    }
    if index.contains("absent") || index.score("absent", probe).is_some() {
        return Err("an absent key answers".into());
    }
    check_hits(
        &index.search(probe, usize::MAX),
        &model.search(probe),
        usize::MAX,
    )
    .map_err(|e| format!("probe search {probe:?}: {e}"))
}

/// A clone taken earlier, with what it answered then.
struct Snapshot {
    index: Bm25Index,
    answers: Vec<(Vec<String>, Vec<Hit>)>,
    stats: capstore::bm25::CorpusStats,
}

fn run(case: &Case) -> Result<(), String> {
    let config = case.config();
    let mut index = Bm25Index::new(config.clone()).map_err(|e| e.to_string())?;
    if let Some(t) = case.merge_factor {
        index = index.with_merge_factor(t);
    }
    let mut model = Reference {
        config: &config,
        docs: BTreeMap::new(),
    };
    let mut snapshots: Vec<Snapshot> = Vec::new();
    let probes: Vec<Vec<String>> = vec![
        query_terms(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
        query_terms(&[3, 3, 19, 21]),
    ];
    for (step, action) in case.actions.iter().enumerate() {
        let at = |e: String| format!("step {step} ({action:?}): {e}");
        match action {
            Action::Insert(k, doc) | Action::Upsert(k, doc) => {
                index.insert(&key(*k), &doc.document());
                model.docs.insert(key(*k), doc.document());
            }
            Action::Remove(k) => {
                let removed = index.remove(&key(*k));
                if removed != model.docs.remove(&key(*k)).is_some() {
                    return Err(at(format!("remove returned {removed}")));
                }
            }
            Action::Compact => index.compact(),
            Action::Search(q, k) => {
                let q = query_terms(q);
                let hits = index.search(&q, *k);
                check_hits(&hits, &model.search(&q), *k).map_err(at)?;
                // Pruning (MaxScore) changes nothing, to the bit.
                if index.clone().with_pruning_from(0).search(&q, *k) != hits {
                    return Err(at("the pruned search differs".to_string()));
                }
            }
            Action::SearchWeighted(q, k) => {
                let q: Vec<(String, f32)> = q.iter().map(|&(t, w)| (term(t), w)).collect();
                let hits = index.search_weighted(&q, *k, |_| true);
                check_hits(&hits, &model.search_weighted(&q), *k).map_err(at)?;
                if index.search_weighted_all(&q, *k) != hits {
                    return Err(at("search_weighted_all differs from keep-all".to_string()));
                }
                if index
                    .clone()
                    .with_pruning_from(0)
                    .search_weighted_all(&q, *k)
                    != hits
                {
                    return Err(at("the pruned search_weighted_all differs".to_string()));
                }
                for hit in &hits {
                    let got = index.score_weighted(&hit.key, &q);
                    let explained = index.explain_weighted(&hit.key, &q).map(|e| e.score);
                    if got != Some(hit.score) || explained != Some(hit.score) {
                        return Err(at(format!(
                            "{}: score {got:?}, explain {explained:?}",
                            hit.key
                        )));
                    }
                }
            }
            Action::Snapshot => {
                let answers = probes
                    .iter()
                    .map(|q| (q.clone(), index.search(q, 5)))
                    .collect();
                snapshots.push(Snapshot {
                    index: index.clone(),
                    answers,
                    stats: index.stats(),
                });
                if snapshots.len() > MAX_SNAPSHOTS {
                    snapshots.remove(0);
                }
            }
        }
        check_state(&index, &model, &probes[step % probes.len()]).map_err(at)?;
        for (i, snap) in snapshots.iter().enumerate() {
            if snap.index.stats() != snap.stats {
                return Err(at(format!("snapshot {i}: stats changed")));
            }
            for (q, hits) in &snap.answers {
                if &snap.index.search(q, 5) != hits {
                    return Err(at(format!("snapshot {i}: search {q:?} changed")));
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn bm25_index_agrees_with_brute_force_model(case in case_strategy()) {
        if let Err(e) = run(&case) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// A fixed sequence exercising every action, so that a broken index fails with a readable case
/// even before proptest shrinks one.
#[test]
fn bm25_fixed_sequence() {
    let doc = |terms: &[u8]| {
        Doc(vec![
            (0, terms.to_vec()),
            (1, terms.iter().map(|t| t + 1).collect()),
        ])
    };
    let mut actions = Vec::new();
    for k in 0..KEYS {
        actions.push(Action::Insert(k, doc(&[k % 5, k % 7, k % 11])));
        if k % 4 == 3 {
            actions.push(Action::Remove(k / 2));
            actions.push(Action::Search(vec![1, 2, 3], 5));
        }
        if k % 6 == 5 {
            actions.push(Action::Snapshot);
            actions.push(Action::Upsert(k % HOT_KEYS, doc(&[9, 9, 9])));
        }
    }
    actions.push(Action::Compact);
    actions.push(Action::Search(vec![9], usize::MAX));
    for factor in [None, Some(2), Some(4)] {
        let case = Case {
            params: Bm25Params::default(),
            weights: vec![Some(2.0), None],
            merge_factor: factor,
            actions: actions.clone(),
        };
        if let Err(e) = run(&case) {
            panic!("{e}\n{case:?}");
        }
    }
}
