//! Hybrid retrieval with embedders written here (no model files): vectors follow their tools,
//! embedding happens outside the writer lock, and the fused ranking shows both sides' evidence.

use std::sync::Arc;

use capstore::context::{
    ContextBuilder, HybridPolicy, Reason, Retrieval, SelectError, SelectionPolicy, Turn,
};
use capstore::embed::{EmbedError, Embedder, ToolVector, embed_missing, embedding_text, nearest};
use capstore::store::{SchemaError, StoreBuilder, TableSchema};
use capstore::{ChangeKind, Store, StoreError, TOOLS, Tool, VECTORS};
use parking_lot::Mutex;

/// Words that mean the same thing share a dimension: a toy of what a sentence embedder does.
const TOPICS: &[&[&str]] = &[
    &["invoice", "bill", "charge", "payment", "pay"],
    &["weather", "forecast", "rain", "sunny", "umbrella"],
    &["email", "mail", "message", "write"],
    &["route", "directions", "map", "drive"],
];

struct Topics;

impl Embedder for Topics {
    fn model_id(&self) -> &str {
        "topics-v1"
    }
    fn dimensions(&self) -> usize {
        TOPICS.len() + 1
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let text = text.to_lowercase();
                let mut v: Vec<f32> = TOPICS
                    .iter()
                    .map(|words| words.iter().filter(|w| text.contains(*w)).count() as f32)
                    .collect();
                v.push(0.05);
                v
            })
            .collect())
    }
}

fn store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert(
                &TOOLS,
                Tool::new("create_invoice", "Create an invoice for a customer"),
            )?;
            tx.insert(
                &TOOLS,
                Tool::new("get_forecast", "Weather forecast for a city"),
            )?;
            tx.insert(&TOOLS, Tool::new("send_email", "Send an email to someone"))?;
            tx.insert(
                &TOOLS,
                Tool::new("get_route", "Directions between two places"),
            )
        })
        .expect("tools");
    store
}

/// A builder fusing by `policy`, with the `Topics` embedder.
fn hybrid_with(policy: HybridPolicy) -> ContextBuilder {
    let policy = SelectionPolicy {
        retrieval: Retrieval::Hybrid(policy),
        ..SelectionPolicy::default()
    };
    ContextBuilder::with_policy(policy)
        .expect("policy")
        .with_embedder(Arc::new(Topics))
}

/// A builder fusing with one lexical weight for every message.
fn hybrid(lexical_weight: f32) -> ContextBuilder {
    hybrid_with(HybridPolicy::fixed(lexical_weight))
}

#[test]
fn a_tool_written_or_removed_loses_its_vector_in_the_same_commit() {
    let store = store();
    assert_eq!(embed_missing(&store, &Topics).expect("embed").embedded, 4);
    let before = store.snapshot();
    // Replacing a tool (even with the same text) and deleting one: their vectors go in the
    // same commit, and the change set says so.
    let info = store
        .write(|tx| {
            tx.upsert(
                &TOOLS,
                Tool::new("create_invoice", "Create an invoice, in euros"),
            )?;
            tx.delete(&TOOLS, "send_email")
        })
        .expect("write");
    let snap = store.snapshot();
    assert!(!snap.contains(&VECTORS, "create_invoice").expect("vectors"));
    assert!(!snap.contains(&VECTORS, "send_email").expect("vectors"));
    assert!(snap.contains(&VECTORS, "get_forecast").expect("vectors"));
    let vector_changes: Vec<(&str, ChangeKind)> = info
        .changes
        .changes
        .iter()
        .filter(|c| c.is(&VECTORS))
        .map(|c| (&*c.key, c.kind))
        .collect();
    assert_eq!(
        vector_changes,
        [
            ("create_invoice", ChangeKind::Deleted),
            ("send_email", ChangeKind::Deleted)
        ]
    );
    // The older snapshot still pairs each tool with its own vector.
    assert!(
        before
            .contains(&VECTORS, "create_invoice")
            .expect("vectors")
    );
    // A vector written after its tool in one transaction stands.
    store
        .write(|tx| {
            tx.upsert(&TOOLS, Tool::new("get_route", "Driving directions"))?;
            tx.upsert(
                &VECTORS,
                ToolVector::new("get_route", "topics-v1", vec![0.0, 0.0, 0.0, 1.0, 0.0]),
            )
        })
        .expect("write");
    assert!(
        store
            .snapshot()
            .contains(&VECTORS, "get_route")
            .expect("vectors")
    );
    // Only the changed tools are embedded again.
    assert_eq!(embed_missing(&store, &Topics).expect("embed").embedded, 1);
}

#[test]
fn bad_vectors_and_bad_follow_declarations_are_refused() {
    let store = store();
    for (vector, field) in [(vec![], "empty"), (vec![f32::NAN, 1.0], "finite")] {
        let err = store
            .write(|tx| tx.insert(&VECTORS, ToolVector::new("get_route", "m", vector)))
            .expect_err("refused");
        assert!(matches!(err, StoreError::InvalidRecord { .. }), "{err:?}");
        assert!(err.to_string().contains(field), "{err}");
    }
    assert_eq!(store.snapshot().count(&VECTORS).expect("count"), 0);
    // A table can follow only a table declared before it in the same builder.
    let mut other = StoreBuilder::new();
    let foreign = other
        .table(TableSchema::new("a", |s: &String| s.clone()))
        .expect("a");
    let mut builder = StoreBuilder::new();
    let own = builder
        .table(TableSchema::new("a", |s: &String| s.clone()))
        .expect("a");
    for (name, schema) in [
        (
            "of_another_builder",
            TableSchema::new("c", |s: &String| s.clone()).follows(&foreign),
        ),
        (
            "built_in_without_built_ins",
            TableSchema::new("c", |s: &String| s.clone()).follows(&TOOLS),
        ),
    ] {
        let err = builder.table(schema).expect_err(name);
        assert_eq!(
            err,
            SchemaError::UnknownParent { table: "c".into() },
            "{name}"
        );
    }
    builder
        .table(TableSchema::new("c", |s: &String| s.clone()).follows(&own))
        .expect("own table");
    let mut with_built_ins = Store::builder();
    with_built_ins
        .table(TableSchema::new("notes", |s: &String| s.clone()).follows(&TOOLS))
        .expect("follows tools");
}

/// Changes a tool of the store while it is asked to embed: what a writer running at the same
/// time as `embed_missing` looks like.
struct ChangesAToolMeanwhile {
    store: Store,
    done: Mutex<bool>,
}

impl Embedder for ChangesAToolMeanwhile {
    fn model_id(&self) -> &str {
        Topics.model_id()
    }
    fn dimensions(&self) -> usize {
        Topics.dimensions()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut done = self.done.lock();
        if !*done {
            *done = true;
            // The writer lock is free while embedding: this commit goes through.
            self.store
                .write(|tx| tx.upsert(&TOOLS, Tool::new("get_forecast", "Umbrella advice")))
                .map_err(|e| EmbedError::Embed {
                    reason: e.to_string(),
                })?;
        }
        Topics.embed(texts)
    }
}

#[test]
fn embedding_runs_outside_the_writer_lock_and_never_stores_a_stale_vector() {
    let store = store();
    let embedder = ChangesAToolMeanwhile {
        store: store.clone(),
        done: Mutex::new(false),
    };
    let report = embed_missing(&store, &embedder).expect("embed");
    assert_eq!((report.embedded, report.stale), (3, 1));
    assert!(
        !store
            .snapshot()
            .contains(&VECTORS, "get_forecast")
            .expect("vectors")
    );
    // Embedded again, it gets the vector of its new text.
    assert_eq!(embed_missing(&store, &Topics).expect("embed").embedded, 1);
    let snap = store.snapshot();
    let stored = snap
        .get(&VECTORS, "get_forecast")
        .expect("get")
        .expect("vector");
    let tool = snap
        .get(&TOOLS, "get_forecast")
        .expect("get")
        .expect("tool");
    let fresh = Topics.embed(&[&embedding_text(tool)]).expect("embed");
    assert_eq!(
        *stored,
        ToolVector::new("get_forecast", "topics-v1", fresh[0].clone())
    );
}

/// An embedder that fails, or returns the wrong shape.
struct Broken(&'static str);

impl Embedder for Broken {
    fn model_id(&self) -> &str {
        "broken"
    }
    fn dimensions(&self) -> usize {
        3
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match self.0 {
            "fail" => Err(EmbedError::Embed {
                reason: "the model fell over".into(),
            }),
            "short" => Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect()),
            _ => Ok(Vec::new()),
        }
    }
}

#[test]
fn embedder_failures_are_typed_and_store_nothing() {
    let store = store();
    let version = store.version();
    for (mode, says) in [
        ("fail", "fell over"),
        ("short", "3 numbers"),
        ("none", "4 vectors"),
    ] {
        let err = embed_missing(&store, &Broken(mode)).expect_err(mode);
        assert!(err.to_string().contains(says), "{mode}: {err}");
        assert_eq!(store.version(), version, "{mode}: nothing stored");
    }
    let snap = store.snapshot();
    let policy = SelectionPolicy {
        retrieval: Retrieval::Hybrid(HybridPolicy::default()),
        ..SelectionPolicy::default()
    };
    let no_embedder = ContextBuilder::with_policy(policy.clone()).expect("policy");
    assert_eq!(
        no_embedder
            .select(&snap, &Turn::new("pay"))
            .expect_err("no embedder"),
        SelectError::NoEmbedder
    );
    let broken = ContextBuilder::with_policy(policy).expect("policy");
    let err = broken
        .with_embedder(Arc::new(Broken("fail")))
        .select(&snap, &Turn::new("pay"))
        .expect_err("fails");
    assert!(matches!(err, SelectError::Embed(_)), "{err:?}");
    let wrong_length = hybrid(0.5).select(&snap, &Turn::new("pay").with_query_vector(vec![1.0]));
    assert!(matches!(
        wrong_length,
        Err(SelectError::Embed(EmbedError::Shape { .. }))
    ));
    let d = HybridPolicy::default();
    for (bad, field) in [
        (HybridPolicy { depth: 0, ..d }, "depth"),
        (
            HybridPolicy {
                min_lexical_weight: -0.1,
                ..d
            },
            "min_lexical_weight",
        ),
        (
            HybridPolicy {
                max_lexical_weight: 0.1,
                ..d
            },
            "max_lexical_weight",
        ),
        (
            HybridPolicy {
                max_lexical_weight: 1.5,
                ..d
            },
            "max_lexical_weight",
        ),
        (
            HybridPolicy {
                evidence_midpoint: f32::NAN,
                ..d
            },
            "evidence_midpoint",
        ),
        (
            HybridPolicy {
                evidence_scale: 0.0,
                ..d
            },
            "evidence_scale",
        ),
        (
            HybridPolicy {
                separation_midpoint: f32::INFINITY,
                ..d
            },
            "separation_midpoint",
        ),
        (
            HybridPolicy {
                separation_scale: f32::NAN,
                ..d
            },
            "separation_scale",
        ),
        (
            HybridPolicy {
                separation_scale: -0.1,
                ..d
            },
            "separation_scale",
        ),
        (
            HybridPolicy {
                separation_scale: f32::INFINITY,
                ..d
            },
            "separation_scale",
        ),
    ] {
        let policy = SelectionPolicy {
            retrieval: Retrieval::Hybrid(bad),
            ..SelectionPolicy::default()
        };
        let err = ContextBuilder::with_policy(policy).expect_err(field);
        assert_eq!(err.field, format!("retrieval.hybrid.{field}"));
    }
}

#[test]
fn hybrid_finds_by_meaning_what_no_word_matches_and_says_why() {
    let store = store();
    embed_missing(&store, &Topics).expect("embed");
    let snap = store.snapshot();
    // No word of the message is in any tool's text: BM25 finds nothing.
    let message = "will I need an umbrella tomorrow?";
    let lexical = ContextBuilder::new()
        .select(&snap, &Turn::new(message))
        .expect("select");
    assert!(lexical.tools.is_empty());
    let selection = hybrid(0.5)
        .select(&snap, &Turn::new(message))
        .expect("select");
    assert_eq!(selection.keys().next(), Some("get_forecast"));
    match &selection.tools[0].reasons[0] {
        Reason::Hybrid {
            bm25,
            cosine,
            score,
            lexical_weight,
            ..
        } => {
            assert_eq!(*bm25, None);
            assert!(cosine.is_some_and(|c| c > 0.9), "{cosine:?}");
            assert!(*score > 0.0);
            // The policy's one weight, and the score it makes: the dense side's share alone.
            assert_eq!(*lexical_weight, 0.5);
            assert!(*score <= 0.5 + 1e-6, "{score}");
        }
        other => panic!("{other:?}"),
    }
    // Words and meaning both: the reason carries both, with the BM25 explanation.
    let selection = hybrid(0.5)
        .select(&snap, &Turn::new("send an email about the invoice"))
        .expect("select");
    let both = selection
        .tools
        .iter()
        .find(|t| &*t.key == "send_email")
        .expect("send_email");
    match &both.reasons[0] {
        Reason::Hybrid {
            bm25: Some(bm25),
            cosine: Some(cosine),
            explanation,
            ..
        } => {
            assert!(*bm25 > 0.0 && *cosine > 0.0);
            assert!(explanation.is_some(), "explained, as the policy asks");
        }
        other => panic!("{other:?}"),
    }
    // The same snapshot and turn give the same selection.
    let again = hybrid(0.5)
        .select(&snap, &Turn::new("send an email about the invoice"))
        .expect("select");
    assert_eq!(
        again.keys().collect::<Vec<_>>(),
        selection.keys().collect::<Vec<_>>()
    );
}

#[test]
fn the_lexical_weight_moves_the_ranking_between_the_two_sides() {
    let store = store();
    embed_missing(&store, &Topics).expect("embed");
    let snap = store.snapshot();
    // "send" matches send_email by word; "pay" is a payment, the invoice tool by meaning.
    let turn = Turn::new("send pay");
    let first = |w: f32| {
        hybrid(w)
            .select(&snap, &turn)
            .expect("select")
            .keys()
            .next()
            .map(str::to_string)
    };
    assert_eq!(first(1.0).as_deref(), Some("send_email"));
    assert_eq!(first(0.0).as_deref(), Some("create_invoice"));
    // The lexical policy ignores the embedder altogether.
    let lexical = ContextBuilder::new().with_embedder(Arc::new(Broken("fail")));
    assert_eq!(
        lexical.select(&snap, &turn).expect("select").keys().next(),
        Some("send_email")
    );
}

/// The dense side's separation (its nearest tool's cosine over the second's) moves the weight:
/// the same message and BM25 evidence, with the message's vector pointing at one tool alone or
/// halfway between two, gets the vectors' tool or BM25's first.
#[test]
fn a_nearest_vector_standing_clear_moves_the_weight_towards_the_vectors() {
    let store = store();
    embed_missing(&store, &Topics).expect("embed");
    let snap = store.snapshot();
    // The first tool sent, and the lexical weight its reason reports.
    let first = |policy: HybridPolicy, vector: Vec<f32>| {
        // "send" matches send_email by word; the vector says what the message means.
        let turn = Turn::new("send pay").with_query_vector(vector);
        let selection = hybrid_with(policy).select(&snap, &turn).expect("select");
        let tool = selection.tools.first().expect("a tool");
        match tool.reasons.first() {
            Some(Reason::Hybrid { lexical_weight, .. }) => (tool.key.to_string(), *lexical_weight),
            other => panic!("{other:?}"),
        }
    };
    // The BM25 evidence left neutral, so only the separation moves the weight.
    let policy = HybridPolicy {
        evidence_scale: 1e9,
        ..HybridPolicy::default()
    };
    let invoice = vec![1.0, 0.0, 0.0, 0.0, 0.0];
    let invoice_or_weather = vec![1.0, 1.0, 0.0, 0.0, 0.0];
    // Clear of the rest (separation ~1): the weight falls to ~0.21, the vectors' tool wins.
    let (tool, weight) = first(policy, invoice.clone());
    assert_eq!(tool, "create_invoice");
    assert!((0.2..0.22).contains(&weight), "{weight}");
    // Two tools at the same cosine (separation ~0): the weight is ~0.57, BM25's tool wins.
    let (tool, weight) = first(policy, invoice_or_weather);
    assert_eq!(tool, "send_email");
    assert!((0.56..0.58).contains(&weight), "{weight}");
    // With the separation left out the weight sits at 0.525 whatever the vectors say.
    let blind = HybridPolicy {
        separation_scale: 1e9,
        ..policy
    };
    let (tool, weight) = first(blind, invoice);
    assert_eq!(tool, "send_email");
    assert!((weight - 0.525).abs() < 1e-6, "{weight}");
}

#[test]
fn a_message_longer_than_its_gist_leans_on_bm25_which_read_all_of_it() {
    let store = store();
    embed_missing(&store, &Topics).expect("embed");
    let snap = store.snapshot();
    // The lexical weight the first hybrid reason of `builder`'s selection reports.
    let weight = |builder: &ContextBuilder, message: &str| {
        let selection = builder.select(&snap, &Turn::new(message)).expect("select");
        let reasons = selection.tools.iter().flat_map(|t| t.reasons.iter());
        reasons
            .filter_map(|r| match r {
                Reason::Hybrid { lexical_weight, .. } => Some(*lexical_weight),
                _ => None,
            })
            .next()
            .expect("a hybrid reason")
    };
    let builder = hybrid_with(HybridPolicy::default());
    // A short message: the curve's weight, under its top.
    let short = weight(&builder, "please bill the customer for the work we did");
    assert!(short < 0.85, "{short}");
    // The same ask in a task's description of 80 words: the embedder read its gist (at most 64
    // of its words that are not stop words), BM25 every word, and it takes the largest share.
    let long = format!(
        "please bill the customer for the work we did {}",
        "and note the hours spent on the garden wall repair ".repeat(7)
    );
    assert!(long.split_whitespace().count() > capstore::context::GIST_WORDS);
    assert_eq!(
        weight(&builder, &long),
        HybridPolicy::default().max_lexical_weight
    );
    // A fixed weight stays fixed.
    assert_eq!(weight(&hybrid(0.4), &long), 0.4);
}

#[test]
fn vectors_of_another_model_or_of_removed_tools_are_never_used() {
    let store = store();
    embed_missing(&store, &Topics).expect("embed");
    store
        .write(|tx| {
            tx.delete(&TOOLS, "get_forecast")?;
            tx.insert(&TOOLS, Tool::new("lookup", "Look something up"))?;
            tx.insert(
                &VECTORS,
                ToolVector::new("lookup", "another-model", vec![0.0, 1.0, 0.0, 0.0, 0.0]),
            )
        })
        .expect("write");
    let snap = store.snapshot();
    let hits = nearest(&snap, "topics-v1", &[0.0, 1.0, 0.0, 0.0, 0.0], 10).expect("nearest");
    assert!(
        hits.iter()
            .all(|h| &*h.key != "get_forecast" && &*h.key != "lookup"),
        "{hits:?}"
    );
    let selection = hybrid(0.0)
        .select(&snap, &Turn::new("umbrella"))
        .expect("select");
    assert!(
        selection
            .keys()
            .all(|k| k != "get_forecast" && k != "lookup")
    );
}

/// [`Topics`], recording the texts of each call.
#[derive(Default)]
struct Recording(Mutex<Vec<Vec<String>>>);

impl Embedder for Recording {
    fn model_id(&self) -> &str {
        Topics.model_id()
    }
    fn dimensions(&self) -> usize {
        Topics.dimensions()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.0
            .lock()
            .push(texts.iter().map(|t| t.to_string()).collect());
        Topics.embed(texts)
    }
}

/// The ask (its text) that brought `key` into `selection`, if an ask did.
fn ask_of<'s>(selection: &'s capstore::context::Selection, key: &str) -> Option<&'s str> {
    let tool = selection.tools.iter().find(|t| &*t.key == key)?;
    tool.reasons.iter().find_map(|r| match r {
        Reason::Ask { ask, .. } => Some(&**ask),
        _ => None,
    })
}

#[test]
fn each_ask_is_searched_by_its_own_vector_too_for_the_cost_of_the_message() {
    let store = store();
    // A tool of both topics, which the whole message's vector ranks first.
    store
        .write(|tx| {
            tx.insert(
                &TOOLS,
                Tool::new("invoice_digest", "Each invoice with the weather forecast"),
            )
        })
        .expect("tool");
    embed_missing(&store, &Topics).expect("embed");
    let snap = store.snapshot();
    // Two asks, neither sharing a word with any tool: only their meaning finds them.
    let message = "pay the plumber's bill and check whether I need an umbrella tomorrow";
    let lexical = ContextBuilder::new()
        .select(&snap, &Turn::new(message))
        .expect("select");
    assert_eq!(ask_of(&lexical, "create_invoice"), None);
    assert_eq!(ask_of(&lexical, "get_forecast"), None);

    let recording = Arc::new(Recording::default());
    // One tool a turn from the whole message's search; the asks' bests come on top.
    let builder = ContextBuilder::with_policy(SelectionPolicy {
        retrieval: Retrieval::Hybrid(HybridPolicy::default()),
        max_turn_tools: 1,
        ..SelectionPolicy::default()
    })
    .expect("policy")
    .with_embedder(Arc::clone(&recording) as Arc<dyn Embedder>);
    let selection = builder.select(&snap, &Turn::new(message)).expect("select");
    assert_eq!(selection.keys().next(), Some("invoice_digest"));
    assert_eq!(
        ask_of(&selection, "create_invoice"),
        Some("pay the plumber's bill")
    );
    assert_eq!(
        ask_of(&selection, "get_forecast"),
        Some("check whether I need an umbrella tomorrow")
    );
    // One call, of the asks: the message's vector is their mean, not a second pass.
    assert_eq!(
        recording.0.lock().drain(..).collect::<Vec<_>>(),
        [[
            "pay the plumber's bill",
            "check whether I need an umbrella tomorrow"
        ]]
    );

    // A message of one ask is embedded whole, as before.
    builder
        .select(&snap, &Turn::new("will I need an umbrella tomorrow?"))
        .expect("select");
    assert_eq!(
        recording.0.lock().drain(..).collect::<Vec<_>>(),
        [["will I need an umbrella tomorrow?"]]
    );

    // A vector the caller made is the message's, and the model is not called: the asks are
    // searched by BM25 alone (which finds nothing here).
    let vector = Topics.embed(&[message]).expect("embed").remove(0);
    let given = builder
        .select(&snap, &Turn::new(message).with_query_vector(vector))
        .expect("select");
    assert!(recording.0.lock().is_empty());
    assert!(!given.tools.is_empty());
    assert!(given.tools.iter().all(|t| ask_of(&given, &t.key).is_none()));
}
