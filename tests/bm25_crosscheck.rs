//! Cross-check of `capstore::bm25` against Python `bm25s` (method "lucene", k1 = 1.2, b = 0.75) on
//! the shared Seal-Tools dev catalog.
//!
//! The reference scores live in `tests/fixtures/bm25s_sealtools.json`, written by
//! `scripts/gen_bm25s_fixture.py` (its docstring says how to regenerate it; in short:
//! `pip install -r scripts/requirements-fixture.txt && python3 scripts/gen_bm25s_fixture.py`).
//! The catalog itself is not in this repository: it is read from `../shared/data/sealtools`
//! (beside the clone, as in CI). Without it the test fails, unless `CAPSTORE_SKIP_SHARED_DATA=1`.
//!
//! Both sides use the same tokens: the *plain* tokenizer below (not capstore's `Tokenizer`), and
//! the same document text per tool (name, description, each parameter's name and description).
//! What is compared, per fixture query:
//! - capstore's top-10 scores equal bm25s's × (k1 + 1) within 1e-4 relative, rank by rank
//!   (bm25s "lucene" omits Okapi's constant (k1 + 1) factor; the script checks that against a
//!   textbook Okapi BM25);
//! - capstore's top-10 ids equal bm25s's, except among tied scores (see `check_query`);
//! - `Bm25Index::score` of every bm25s top-10 id equals its bm25s score × (k1 + 1).
//!
//! Query tokens keep their repeats: bm25s does not deduplicate them (it sums a term's score once
//! per occurrence in the query), and capstore sums over query-term occurrences as well.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use capstore::bm25::{Bm25Index, DEFAULT_B, DEFAULT_K1, Document, IndexConfig};
use serde::Deserialize;
use serde_json::Value;

const DATA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/sealtools");
const FIXTURE: &str = include_str!("fixtures/bm25s_sealtools.json");
const SKIP_ENV: &str = "CAPSTORE_SKIP_SHARED_DATA";

/// Relative tolerance for scores, and for deciding that two scores tie.
const REL_TOL: f64 = 1e-4;
const TOP_K: usize = 10;
const MIN_QUERIES: usize = 200;

#[derive(Deserialize)]
struct Fixture {
    bm25s_version: String,
    method: String,
    k1: f64,
    b: f64,
    query_tokens_deduplicated: bool,
    corpus: CorpusFacts,
    queries: Vec<FixtureQuery>,
}

#[derive(Deserialize)]
struct CorpusFacts {
    n_docs: u64,
    total_tokens: u64,
    vocab_size: usize,
}

#[derive(Deserialize)]
struct FixtureQuery {
    id: String,
    tokens: Vec<String>,
    /// bm25s's top-10 as (tool id, bm25s score), best first; only positive scores.
    top: Vec<(String, f64)>,
    /// Ids ranked below 10th by bm25s whose score ties the 10th score within 1e-4 relative.
    cut_ties: Vec<String>,
}

/// The plain tokenizer, identical to `tokenize` in `scripts/gen_bm25s_fixture.py`: ASCII
/// lower-case, then maximal runs of `[a-z0-9]`; every other character separates tokens.
fn plain_tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_ascii_lowercase())
        .collect()
}

/// Document tokens of one tool: name, description, then every parameter's name and description.
/// serde_json (without `preserve_order`) iterates `properties` in key order rather than file
/// order; BM25 scores a bag of words, so the order cannot change a score.
fn tool_tokens(tool: &Value) -> Vec<String> {
    fn text(v: Option<&Value>) -> &str {
        v.and_then(Value::as_str).unwrap_or("")
    }
    let mut tokens = plain_tokens(text(tool.get("name")));
    tokens.extend(plain_tokens(text(tool.get("description"))));
    if let Some(props) = tool
        .get("parameters")
        .and_then(|p| p.get("properties"))
        .and_then(Value::as_object)
    {
        for (name, schema) in props {
            tokens.extend(plain_tokens(name));
            tokens.extend(plain_tokens(text(schema.get("description"))));
        }
    }
    tokens
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}:{}: bad JSON: {e}", path.display(), i + 1))
        })
        .collect()
}

/// The shared data directory, or `None` when it is absent and the caller allowed skipping.
fn data_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(DATA_DIR);
    if dir.join("tools.jsonl").is_file() && dir.join("queries.jsonl").is_file() {
        return Some(dir);
    }
    if std::env::var(SKIP_ENV).as_deref() == Ok("1") {
        eprintln!(
            "SKIPPED bm25 cross-check: {} not found and {SKIP_ENV}=1",
            dir.display()
        );
        return None;
    }
    panic!(
        "the shared Seal-Tools catalog is missing: expected tools.jsonl and queries.jsonl in {}.\n\
         Check out the shared data beside this repository (../shared/data/sealtools), or set \
         {SKIP_ENV}=1 to skip this test deliberately.",
        dir.display()
    );
}

fn rel_diff(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

fn ties(a: f64, b: f64) -> bool {
    rel_diff(a, b) <= REL_TOL
}

/// Compares capstore's hits for one query with bm25s's, returning one message per disagreement.
///
/// Ties: bm25s orders equal scores arbitrarily (numpy's partition), capstore by key ascending, and
/// the two compute in different precisions (capstore f32, the fixture f64), so scores equal in
/// exact arithmetic can come out in either order. Hence ids are compared as *tie groups*: the id
/// capstore puts at rank r is accepted if bm25s ranked it anywhere in the top-10 with a score that
/// ties capstore's score at r, or, when that score ties bm25s's 10th score, if it is one of the
/// `cut_ties` (documents bm25s ranked just below the cut with the same score). Scores themselves
/// are compared rank by rank, which ties cannot disturb.
fn check_query(index: &Bm25Index, q: &FixtureQuery, scale: f64) -> Vec<String> {
    let mut errors = Vec::new();
    let hits = index.search(&q.tokens, TOP_K);
    if hits.len() != q.top.len() {
        errors.push(format!(
            "{}: capstore returned {} hits, bm25s {}",
            q.id,
            hits.len(),
            q.top.len()
        ));
    }
    let tenth = (q.top.len() == TOP_K).then(|| q.top[TOP_K - 1].1 * scale);
    let mut seen = BTreeSet::new();
    for (rank, (hit, (want_id, want))) in hits.iter().zip(&q.top).enumerate() {
        let want = want * scale;
        let got = f64::from(hit.score);
        if !ties(got, want) {
            errors.push(format!(
                "{} rank {}: capstore score {got} ({}), bm25s x (k1+1) = {want} ({want_id}), \
                 rel diff {:.2e}",
                q.id,
                rank + 1,
                hit.key,
                rel_diff(got, want)
            ));
        }
        let key: &str = &hit.key;
        if !seen.insert(key.to_owned()) {
            errors.push(format!("{}: {key} returned twice", q.id));
        }
        let in_tie_group = q
            .top
            .iter()
            .any(|(id, s)| id == key && ties(s * scale, got));
        let in_cut_ties =
            tenth.is_some_and(|t| ties(t, got)) && q.cut_ties.iter().any(|id| id == key);
        if key != want_id && !in_tie_group && !in_cut_ties {
            errors.push(format!(
                "{} rank {}: capstore has {key} ({got}), bm25s has {want_id} ({want}) and no tie \
                 explains it",
                q.id,
                rank + 1
            ));
        }
    }
    for (id, s) in &q.top {
        let want = s * scale;
        match index.score(id, &q.tokens) {
            Some(got) if ties(f64::from(got), want) => {}
            other => errors.push(format!(
                "{}: score({id}) = {other:?}, bm25s x (k1+1) = {want}",
                q.id
            )),
        }
    }
    errors
}

#[test]
fn scores_match_python_bm25s_on_sealtools() {
    let fixture: Fixture =
        serde_json::from_str(FIXTURE).expect("tests/fixtures/bm25s_sealtools.json is malformed");
    assert_eq!(fixture.method, "lucene");
    assert!(!fixture.query_tokens_deduplicated);
    assert_eq!(fixture.k1 as f32, DEFAULT_K1, "fixture k1 vs DEFAULT_K1");
    assert_eq!(fixture.b as f32, DEFAULT_B, "fixture b vs DEFAULT_B");
    let Some(dir) = data_dir() else { return };

    // Build the index from the catalog, one field per tool (all field weights are 1).
    let tools = read_jsonl(&dir.join("tools.jsonl"));
    let mut index = Bm25Index::new(IndexConfig::default()).expect("default IndexConfig is valid");
    let mut doc_freq: HashMap<String, u64> = HashMap::new();
    let mut total_tokens = 0u64;
    for tool in &tools {
        let id = tool["id"].as_str().expect("tool id is a string");
        let tokens = tool_tokens(tool);
        total_tokens += tokens.len() as u64;
        for term in tokens.iter().collect::<BTreeSet<_>>() {
            *doc_freq.entry(term.clone()).or_default() += 1;
        }
        index.insert(id, &Document::new().with_field("text", tokens));
    }

    // Corpus facts first: a tokenizer or document-text mismatch with the script shows up here.
    let facts = &fixture.corpus;
    assert_eq!(tools.len() as u64, facts.n_docs, "number of tools");
    assert_eq!(
        total_tokens, facts.total_tokens,
        "total tokens: the plain tokenizer or the document text differs from the script's"
    );
    assert_eq!(
        doc_freq.len(),
        facts.vocab_size,
        "vocabulary size: the plain tokenizer differs from the script's"
    );
    let stats = index.stats();
    assert_eq!(index.len() as u64, facts.n_docs, "Bm25Index::len");
    assert_eq!(stats.n_docs, facts.n_docs, "CorpusStats::n_docs");
    assert_eq!(
        stats.total_len, facts.total_tokens as f64,
        "CorpusStats::total_len"
    );
    let avgdl = facts.total_tokens as f64 / facts.n_docs as f64;
    assert!(
        ties(f64::from(stats.avgdl), avgdl),
        "avgdl {} vs {avgdl}",
        stats.avgdl
    );
    let df_errors: BTreeMap<&str, (u64, u64)> = doc_freq
        .iter()
        .filter(|(t, n)| index.doc_freq(t) != **n)
        .map(|(t, n)| (t.as_str(), (index.doc_freq(t), *n)))
        .take(10)
        .collect();
    assert!(
        df_errors.is_empty(),
        "doc_freq disagrees (index, counted): {df_errors:?}"
    );

    // The fixture's query tokens are what the plain tokenizer makes of the query text.
    let query_text: HashMap<String, String> = read_jsonl(&dir.join("queries.jsonl"))
        .into_iter()
        .map(|q| {
            let id = q["id"].as_str().expect("query id").to_owned();
            (id, q["query"].as_str().expect("query text").to_owned())
        })
        .collect();

    let scale = fixture.k1 + 1.0;
    let mut errors = Vec::new();
    let mut compared = 0usize;
    let mut hits_compared = 0usize;
    for q in &fixture.queries {
        let text = query_text
            .get(&q.id)
            .unwrap_or_else(|| panic!("fixture query {} is not in queries.jsonl", q.id));
        assert_eq!(plain_tokens(text), q.tokens, "tokens of query {}", q.id);
        errors.extend(check_query(&index, q, scale));
        compared += 1;
        hits_compared += q.top.len();
    }
    eprintln!(
        "bm25 cross-check: {compared} queries, {hits_compared} top-10 hits compared with bm25s {}",
        fixture.bm25s_version
    );
    assert!(
        errors.is_empty(),
        "{} disagreements with bm25s (first 20):\n{}",
        errors.len(),
        errors
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        compared >= MIN_QUERIES,
        "only {compared} queries compared, want at least {MIN_QUERIES}"
    );
}

#[test]
fn plain_tokenizer_matches_the_script() {
    assert_eq!(
        plain_tokens("getPM2.5Level: Ünïcode-ID_x, «quoted» 42°C"),
        [
            "getpm2", "5level", "n", "code", "id", "x", "quoted", "42", "c"
        ]
    );
    assert!(plain_tokens(" ,;- ").is_empty());
}
