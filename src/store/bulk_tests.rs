//! `WriteTxn::insert_many` against a loop of `insert`: the same rows and changes when it
//! succeeds, the same error and nothing written when it fails.

use std::sync::Arc;

use super::tests::users_store;
use crate::store::{Store, StoreError, Table};
use crate::{TOOLS, Tool};

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
