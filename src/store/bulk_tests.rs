//! `WriteTxn::insert_many` against a loop of `insert`: the same rows and changes when it
//! succeeds, the same error and nothing written when it fails.

use std::sync::Arc;

use super::tests::users_store;
use crate::store::{Store, StoreError, Table};
use crate::tools::{TOOLS, Tool};

/// The users store of the store tests, holding `old` (`old@x`).
fn users() -> (Store, Table<(String, String)>) {
    let (store, users) = users_store();
    store
        .write(|tx| tx.insert(&users, ("old".to_string(), "old@x".to_string())))
        .expect("seed");
    (store, users)
}

fn user(name: &str, email: &str) -> (String, String) {
    (name.to_string(), email.to_string())
}

/// What a way of inserting a batch returned, and the keys it left in the transaction.
type Outcome = (Result<usize, StoreError>, Vec<Arc<str>>);

/// Inserting `batch` in bulk, and one by one.
fn both(batch: &[(String, String)]) -> [Outcome; 2] {
    let run = |bulk: bool| {
        let (store, users) = users();
        let mut tx = store.begin();
        let result = if bulk {
            tx.insert_many(&users, batch.iter().cloned())
                .map(|k| k.len())
        } else {
            tx.all_or_nothing(|tx| {
                for u in batch {
                    tx.insert(&users, u.clone())?;
                }
                Ok(batch.len())
            })
        };
        let keys = tx
            .view()
            .iter(&users)
            .expect("users")
            .map(|(k, _)| Arc::clone(k))
            .collect();
        (result, keys)
    };
    [run(true), run(false)]
}

#[test]
fn the_same_errors_as_a_loop_of_inserts_and_nothing_written() {
    let cases: Vec<Vec<(String, String)>> = vec![
        vec![user("a", "a@x"), user("b", "b@x")],
        // A duplicate key in the batch, and one of the table's.
        vec![user("a", "a@x"), user("b", "b@x"), user("a", "c@x")],
        vec![user("a", "a@x"), user("old", "o@x")],
        // A unique value held in the batch, in the table, in both (the first holder by key).
        vec![user("b", "b@x"), user("c", "b@x")],
        vec![user("b", "b@x"), user("c", "old@x")],
        vec![user("a", "z@x"), user("p", "old@x"), user("q", "z@x")],
        // An empty key, after a good record.
        vec![user("a", "a@x"), user("", "e@x")],
    ];
    for batch in cases {
        let [bulk, plain] = both(&batch);
        assert_eq!(bulk, plain, "{batch:?}");
    }
}

#[test]
fn tools_in_bulk_match_tools_one_by_one() {
    let tools: Vec<Tool> = (0..300)
        .map(|i| {
            Tool::new(
                format!("tool_{i}"),
                format!("Tool {i} reads file {}", i % 7),
            )
            .with_source(format!("s{}", i % 4))
            .with_tags([format!("t{}", i % 5)])
        })
        .collect();
    let (bulk, plain) = (Store::new(), Store::new());
    let a = bulk
        .write(|tx| tx.insert_many(&TOOLS, tools.clone()))
        .expect("bulk");
    let b = plain
        .write(|tx| {
            tools
                .iter()
                .try_for_each(|t| tx.insert(&TOOLS, t.clone()).map(|_| ()))
        })
        .expect("plain");
    let kinds = |c: &crate::store::ChangeSet| -> Vec<(Arc<str>, crate::store::ChangeKind)> {
        c.changes
            .iter()
            .map(|c| (Arc::clone(&c.key), c.kind))
            .collect()
    };
    assert_eq!(kinds(&a.changes), kinds(&b.changes));
    let (sa, sb) = (bulk.snapshot(), plain.snapshot());
    let all = |s: &crate::store::Snapshot| -> Vec<Tool> {
        s.iter(&TOOLS)
            .expect("tools")
            .map(|(_, t)| t.clone())
            .collect()
    };
    assert_eq!(all(&sa), all(&sb));
    for index in ["source", "tags", "name"] {
        let values = |s: &crate::store::Snapshot| -> Vec<(Arc<str>, usize)> {
            s.index_values(&TOOLS, index)
                .expect("index")
                .map(|(v, n)| (Arc::clone(v), n))
                .collect()
        };
        assert_eq!(values(&sa), values(&sb));
    }
    let hits = |s: &crate::store::Snapshot| -> Vec<(Arc<str>, f32)> {
        s.search(&TOOLS, "read file 3", 10)
            .expect("search")
            .into_iter()
            .map(|h| (h.key, h.score))
            .collect()
    };
    assert_eq!(hits(&sa), hits(&sb));
}

/// Tools enough for a batch to make its text on a second thread.
fn many_tools() -> Vec<Tool> {
    let n = super::bulk::TEXT_THREAD_MIN_ROWS + 904;
    (0..n)
        .map(|i| {
            Tool::new(
                format!("tool_{i}"),
                format!("Tool {i} reads file {} and writes {}", i % 13, i % 101),
            )
            .with_source(format!("s{}", i % 9))
        })
        .collect()
}

#[test]
fn a_large_batch_makes_its_text_on_a_second_thread_with_the_same_results() {
    let tools = many_tools();
    let (threaded, inline) = (Store::new(), Store::new());
    threaded
        .write(|tx| tx.insert_many(&TOOLS, tools.clone()))
        .expect("threaded");
    // An iterator that does not say how long it is gets the text made as it goes.
    inline
        .write(|tx| tx.insert_many(&TOOLS, tools.iter().filter(|_| true).cloned()))
        .expect("inline");
    let (a, b) = (threaded.snapshot(), inline.snapshot());
    assert_eq!(a.count(&TOOLS).expect("count"), tools.len());
    let stats = |s: &crate::store::Snapshot| s.text_index(&TOOLS).expect("text").stats();
    assert_eq!(stats(&a), stats(&b));
    for query in ["read file 3", "writes 77", "tool 4100", "s4"] {
        let hits = |s: &crate::store::Snapshot| -> Vec<(Arc<str>, f32)> {
            s.search(&TOOLS, query, 20)
                .expect("search")
                .into_iter()
                .map(|h| (h.key, h.score))
                .collect()
        };
        assert_eq!(hits(&a), hits(&b), "{query}");
        assert!(!hits(&a).is_empty(), "{query}");
    }
}

#[test]
fn a_large_batch_that_fails_late_writes_nothing() {
    let mut tools = many_tools();
    let at = tools.len() - 10;
    tools[at] = Tool::new("tool_7", "a second tool_7").with_source("s7");
    let store = Store::new();
    let err = store
        .write(|tx| tx.insert_many(&TOOLS, tools.clone()))
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::DuplicateKey { key, .. } if &**key == "s7/tool_7"),
        "{err}"
    );
    assert_eq!(store.snapshot().count(&TOOLS).expect("count"), 0);
    assert_eq!(store.version(), 0);
}

#[test]
fn a_text_callback_that_panics_in_a_large_batch_writes_nothing() {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use crate::store::{StoreBuilder, TableSchema, TextSchema};

    let mut b = StoreBuilder::new();
    let notes = b
        .table(
            TableSchema::new("notes", |n: &(String, String)| n.0.clone()).text_index(
                TextSchema::new(|n: &(String, String), fields| {
                    assert!(n.1 != "boom", "the text callback fails on {}", n.0);
                    fields.add("body", &n.1);
                }),
            ),
        )
        .expect("schema");
    let store = b.build();
    let mut batch: Vec<(String, String)> = (0..super::bulk::TEXT_THREAD_MIN_ROWS + 100)
        .map(|i| (format!("n{i}"), format!("note {i}")))
        .collect();
    batch[4150].1 = "boom".into();
    let result = catch_unwind(AssertUnwindSafe(|| {
        store.write(|tx| tx.insert_many(&notes, batch.clone()))
    }));
    assert!(result.is_err(), "the panic reaches the caller");
    assert_eq!(store.snapshot().count(&notes).expect("count"), 0);
    // The rows are written while the text thread works: a transaction that outlives the
    // panic holds only what it held before the call.
    let mut tx = store.begin();
    tx.insert(&notes, ("first".into(), "kept".into()))
        .expect("insert");
    let result = catch_unwind(AssertUnwindSafe(|| tx.insert_many(&notes, batch.clone())));
    assert!(result.is_err(), "the panic reaches the caller");
    assert_eq!(tx.view().count(&notes).expect("count"), 1);
    assert!(
        tx.view()
            .search(&notes, "note", 5)
            .expect("search")
            .is_empty()
    );
    let changes = tx.commit().changes;
    assert_eq!(changes.changes.len(), 1);
    assert_eq!(
        store
            .snapshot()
            .search(&notes, "kept", 2)
            .expect("search")
            .len(),
        1
    );
    batch[4150].1 = "fine".into();
    store
        .write(|tx| tx.insert_many(&notes, batch))
        .expect("the same batch, fixed, is written");
    assert_eq!(
        store.snapshot().search(&notes, "fine", 1).expect("search")[0]
            .key
            .as_ref(),
        "n4150"
    );
}
