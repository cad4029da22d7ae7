//! The `eval` module and the `capstore eval` command, on hand-made rankings and on a tiny
//! fixture catalog (`tests/fixtures/eval_tiny`) whose rankings and metrics are worked out by hand
//! below.
//!
//! # The fixture, by hand
//! Tools: `w1` get_weather "Current weather for a city" (param `city` "City name"); `f1`
//! read_file "Read a file from disk"; `m1` send_email "Send an email message"; `web::search` and
//! `code::search`, both named `search` ("Search the web", "Search code repositories"), so the
//! identity policy stores them as `web/search` and `code/search`; `p1` getPM2.5Level "Air
//! pollution level" (a name providers reject, stored as it is).
//!
//! | query | terms (stop words dropped) | ranking | gold | R@1 | R@3..10 | nDCG@10 | MRR@10 | C@10 |
//! |---|---|---|---|---|---|---|---|---|
//! | q1 "weather in Oslo" | weather, oslo | w1 (only doc with `weather`) | w1 | 1 | 1 | 1 | 1 | 1 |
//! | q2 "send the file by email" | send, file, email | m1 (2 terms, tf 2 each), f1 (1 term, tf 2); same length 5, same idf | f1 | 0 | 1 | 1/log2 3 = 0.63093 | 1/2 | 1 |
//! | q3 "search code" | search, code | code::search (both terms), web::search | code::search | 1 | 1 | 1 | 1 | 1 |
//! | q4 "air quality" | air, quality | p1 | p1, w1 | 1/2 | 1/2 | 1/(1 + 1/log2 3) = 0.61315 | 1 | 0 |
//! | q5 "translate to French" | translate, french | (none: nothing matches, nothing pinned) | w1 | 0 | 0 | 0 | 0 | 0 |
//!
//! Means ×100 over the 5 queries: R@1 = 2.5/5 = 50.00; R@3 = R@5 = R@10 = 3.5/5 = 70.00;
//! nDCG@10 = (1 + 0.630930 + 1 + 0.613147 + 0)/5 = 64.88; MRR@10 = 3.5/5 = 70.00;
//! C@10 = 3/5 = 60.00. Split `main` (q1–q4): 62.50, 87.50, 87.50, 87.50, 81.10, 87.50, 75.00.

use std::path::PathBuf;

use capstore::Tool;
use capstore::eval::{
    EvalConfig, EvalError, Metrics, ToolEntry, assign_keys, complete_at, load_queries, load_tools,
    mrr_at, ndcg_at, parse_queries, parse_tools, recall_at, run,
};

fn ids(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/eval_tiny")
        .join(name)
}

#[test]
fn recall_on_hand_made_rankings() {
    let ranked = ids(&["a", "b", "c", "d"]);
    assert!(close(recall_at(&ranked, &ids(&["b", "d"]), 1), 0.0));
    assert!(close(recall_at(&ranked, &ids(&["b", "d"]), 2), 0.5));
    assert!(close(recall_at(&ranked, &ids(&["b", "d"]), 4), 1.0));
    // |gold| > k: at most k of them can be found.
    assert!(close(
        recall_at(&ranked, &ids(&["a", "b", "c"]), 2),
        2.0 / 3.0
    ));
    // Empty ranking, empty gold.
    assert!(close(recall_at(&[], &ids(&["a"]), 10), 0.0));
    assert!(close(recall_at(&ranked, &[], 10), 0.0));
    // A repeated id counts once.
    assert!(close(
        recall_at(&ids(&["a", "a"]), &ids(&["a", "b"]), 2),
        0.5
    ));
}

#[test]
fn ndcg_on_hand_made_rankings() {
    let l2 = |x: f64| x.log2();
    let ranked = ids(&["x", "a", "y", "b"]);
    // Gold at ranks 2 and 4: DCG = 1/log2 3 + 1/log2 5; ideal = 1 + 1/log2 3.
    let expected = (1.0 / l2(3.0) + 1.0 / l2(5.0)) / (1.0 + 1.0 / l2(3.0));
    assert!(close(ndcg_at(&ranked, &ids(&["a", "b"]), 10), expected));
    // Cut at k = 2: only rank 2 counts; ideal over min(2, 2) = 2.
    let expected = (1.0 / l2(3.0)) / (1.0 + 1.0 / l2(3.0));
    assert!(close(ndcg_at(&ranked, &ids(&["a", "b"]), 2), expected));
    // |gold| = 3 > k = 2, both top ranks gold: ideal over min(3, 2) = 2 ranks, so 1.
    assert!(close(
        ndcg_at(&ids(&["a", "b"]), &ids(&["a", "b", "c"]), 2),
        1.0
    ));
    // Perfect, empty ranking, empty gold, k = 0.
    assert!(close(ndcg_at(&ids(&["a"]), &ids(&["a"]), 10), 1.0));
    assert!(close(ndcg_at(&[], &ids(&["a"]), 10), 0.0));
    assert!(close(ndcg_at(&ranked, &[], 10), 0.0));
    assert!(close(ndcg_at(&ranked, &ids(&["x"]), 0), 0.0));
}

#[test]
fn mrr_and_completeness_on_hand_made_rankings() {
    let ranked = ids(&["x", "y", "a", "b"]);
    assert!(close(mrr_at(&ranked, &ids(&["a", "b"]), 10), 1.0 / 3.0));
    assert!(close(mrr_at(&ranked, &ids(&["a"]), 2), 0.0));
    assert!(close(mrr_at(&[], &ids(&["a"]), 10), 0.0));
    assert!(close(complete_at(&ranked, &ids(&["a", "b"]), 4), 1.0));
    assert!(close(complete_at(&ranked, &ids(&["a", "b"]), 3), 0.0));
    // |gold| > k can never be complete.
    assert!(close(complete_at(&ids(&["a"]), &ids(&["a", "b"]), 1), 0.0));
    assert!(close(complete_at(&[], &ids(&["a"]), 10), 0.0));
    assert!(close(complete_at(&ranked, &[], 10), 0.0));
}

#[test]
fn metrics_average_and_scale() {
    let pairs = [(ids(&["a", "b"]), ids(&["b"])), (ids(&[]), ids(&["c"]))];
    let m = Metrics::of(pairs.iter().map(|(r, g)| (&r[..], &g[..])));
    assert_eq!(m.queries, 2);
    assert!(close(m.recall_1, 0.0));
    assert!(close(m.recall_3, 50.0));
    assert!(close(m.mrr_10, 25.0));
    assert!(close(m.ndcg_10, 50.0 / 3f64.log2()));
    assert!(close(m.complete_10, 50.0));
    assert_eq!(Metrics::of([]), Metrics::default());
}

#[test]
fn loader_errors_are_typed_and_name_the_line() {
    let err =
        parse_tools("t.jsonl", "{\"id\": \"a\", \"name\": \"x\"}\n\n{not json\n").unwrap_err();
    assert!(matches!(err, EvalError::Json { line: 3, .. }), "{err:?}");
    assert!(
        err.to_string().starts_with("t.jsonl:3: invalid JSON"),
        "{err}"
    );

    let err = parse_tools("t.jsonl", "{\"id\": \"a\"}").unwrap_err();
    assert!(matches!(
        err,
        EvalError::MissingField {
            line: 1,
            field: "name",
            ..
        }
    ));
    assert_eq!(err.to_string(), "t.jsonl:1: missing field `name`");

    let err = parse_tools(
        "t.jsonl",
        "{\"id\": \"a\", \"name\": \"x\", \"parameters\": 3}",
    )
    .unwrap_err();
    assert!(matches!(
        err,
        EvalError::WrongType {
            line: 1,
            field: "parameters",
            ..
        }
    ));

    let two = "{\"id\": \"a\", \"name\": \"x\"}\n{\"id\": \"a\", \"name\": \"y\"}";
    let err = parse_tools("t.jsonl", two).unwrap_err();
    assert!(matches!(err, EvalError::DuplicateId { line: 2, ref id, .. } if id == "a"));

    let err = parse_queries(
        "q.jsonl",
        "{\"id\": \"q\", \"query\": \"x\", \"gold\": \"w\"}",
    )
    .unwrap_err();
    assert!(matches!(
        err,
        EvalError::WrongType {
            line: 1,
            field: "gold",
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "q.jsonl:1: field `gold` must be an array of strings"
    );

    let err = parse_queries("q.jsonl", "[1]").unwrap_err();
    assert!(matches!(err, EvalError::Json { line: 1, .. }));

    let err = load_tools("/no/such/dir/tools.jsonl").unwrap_err();
    assert!(matches!(err, EvalError::Io { .. }));
}

#[test]
fn identity_policy_keeps_every_record_distinct() {
    let entries = load_tools(fixture("tools.jsonl")).expect("fixture");
    let keys: Vec<String> = assign_keys(&entries)
        .expect("keys")
        .iter()
        .map(Tool::qualified_name)
        .collect();
    assert_eq!(
        keys,
        [
            "get_weather",
            "read_file",
            "send_email",
            "web/search",
            "code/search",
            "getPM2.5Level"
        ]
    );
    // Same name and same `::` prefix: the whole id becomes the source.
    let same = [
        ToolEntry {
            id: "T::a".into(),
            tool: Tool::new("x", ""),
        },
        ToolEntry {
            id: "T::b".into(),
            tool: Tool::new("x", ""),
        },
    ];
    let keys: Vec<String> = assign_keys(&same)
        .expect("keys")
        .iter()
        .map(Tool::qualified_name)
        .collect();
    assert_eq!(keys, ["T::a/x", "T::b/x"]);
}

#[test]
fn the_fixture_ranks_and_scores_as_worked_out_by_hand() {
    let tools = load_tools(fixture("tools.jsonl")).expect("tools");
    let queries = load_queries(fixture("queries.jsonl")).expect("queries");
    let report = run(&tools, &queries, &EvalConfig::default()).expect("run");
    assert_eq!(report.registered, 6);
    let ranked: Vec<(&str, Vec<&str>)> = report
        .runs
        .iter()
        .map(|r| {
            (
                r.query_id.as_str(),
                r.ranked.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        ranked,
        [
            ("q1", vec!["w1"]),
            ("q2", vec!["m1", "f1"]),
            ("q3", vec!["code::search", "web::search"]),
            ("q4", vec!["p1"]),
            ("q5", vec![]),
        ]
    );
    let m = report.metrics;
    assert_eq!(m.queries, 5);
    assert!(close(m.recall_1, 50.0));
    assert!(close(m.recall_3, 70.0) && close(m.recall_5, 70.0) && close(m.recall_10, 70.0));
    let ndcg = (1.0 + 1.0 / 3f64.log2() + 1.0 + 1.0 / (1.0 + 1.0 / 3f64.log2())) / 5.0 * 100.0;
    assert!(close(m.ndcg_10, ndcg), "{} vs {ndcg}", m.ndcg_10);
    assert!((m.ndcg_10 - 64.88).abs() < 0.005);
    assert!(close(m.mrr_10, 70.0));
    assert!(close(m.complete_10, 60.0));
}

#[test]
fn k_cuts_the_ranking() {
    let tools = load_tools(fixture("tools.jsonl")).expect("tools");
    let queries = load_queries(fixture("queries.jsonl")).expect("queries");
    let config = EvalConfig {
        k: 1,
        ..EvalConfig::default()
    };
    let report = run(&tools, &queries, &config).expect("run");
    assert!(report.runs.iter().all(|r| r.ranked.len() <= 1));
    assert_eq!(report.runs[1].ranked, ["m1"]);
}
