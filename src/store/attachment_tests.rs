//! The text index keeps each record's row with its document (`TableState::put`), and a
//! selection takes a search hit's row as the record instead of looking it up: that is right
//! only if a hit's row is always the row the table holds under the hit's key, in the same
//! snapshot. Checked here after random write sequences (inserts, upserts with changed and
//! unchanged text, removals, bulk loads that compact the index, churn that renumbers it, merges
//! all along), in every snapshot taken on the way, and inside transactions.

use std::sync::Arc;

use proptest::prelude::*;

use crate::bm25::HashedQuery;
use crate::store::{Snapshot, Store};
use crate::tools::{TOOLS, Tool};

const NAMES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
const WORDS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];
/// In every description, so that one query retrieves every tool.
const COMMON: &str = "common";

#[derive(Debug, Clone)]
enum Write {
    /// Upsert `NAMES[name]` with the words `WORDS[..]` picked (same words: unchanged text).
    Upsert {
        name: usize,
        words: Vec<usize>,
    },
    Remove {
        name: usize,
    },
    /// Upserts `count` tools named `bulk<i>`: doubling a small table settles it into one
    /// segment when the transaction commits.
    Bulk {
        count: usize,
    },
    /// Upserts `NAMES[name]` `times` times: enough dead slots make the index renumber.
    Churn {
        name: usize,
        times: usize,
    },
}

fn write() -> impl Strategy<Value = Write> {
    let name = 0..NAMES.len();
    let words = prop::collection::vec(0..WORDS.len(), 0..3);
    prop_oneof![
        6 => (name.clone(), words).prop_map(|(name, words)| Write::Upsert { name, words }),
        3 => name.clone().prop_map(|name| Write::Remove { name }),
        1 => (1usize..24).prop_map(|count| Write::Bulk { count }),
        1 => (name, 1usize..400).prop_map(|(name, times)| Write::Churn { name, times }),
    ]
}

fn tool(name: &str, words: &[usize]) -> Tool {
    let mut text = String::from(COMMON);
    for &w in words {
        text.push(' ');
        text.push_str(WORDS[w % WORDS.len()]);
    }
    Tool::new(name, text)
}

fn apply(tx: &mut crate::store::WriteTxn, w: &Write) {
    match w {
        Write::Upsert { name, words } => {
            let _ = tx.upsert(&TOOLS, tool(NAMES[*name], words));
        }
        Write::Remove { name } => {
            let _ = tx.delete(&TOOLS, NAMES[*name]);
        }
        Write::Bulk { count } => {
            for i in 0..*count {
                let _ = tx.upsert(&TOOLS, tool(&format!("bulk{i}"), &[i]));
            }
        }
        Write::Churn { name, times } => {
            for i in 0..*times {
                let _ = tx.upsert(&TOOLS, tool(NAMES[*name], &[i % 2]));
            }
        }
    }
}

/// Every record's attachment is its row, and every hit's attachment is the row under its key.
fn check(snap: &Snapshot) -> Result<(), TestCaseError> {
    let (_, state) = snap.resolve(&TOOLS).map_err(fail)?;
    let index = state.text.as_ref().ok_or_else(|| fail("no text index"))?;
    prop_assert_eq!(index.len(), state.rows.len());
    for (key, row) in &state.rows {
        let attached = index.attachment(key);
        prop_assert!(
            attached.is_some_and(|a| Arc::ptr_eq(a, row)),
            "{key}: the attachment is not the row"
        );
    }
    // A look-up by key (through the text index first) finds exactly the rows' B-tree's row,
    // for the keys there are and those there are not (removed, or never written).
    let lookup = snap.lookup(&TOOLS).map_err(fail)?;
    let bulk: Vec<String> = (0..24).map(|i| format!("bulk{i}")).collect();
    for key in NAMES.iter().copied().chain(bulk.iter().map(String::as_str)) {
        let found = lookup.entry(key);
        let in_rows = state.rows.get_key_value(key);
        prop_assert_eq!(found.is_some(), in_rows.is_some(), "{}", key);
        if let (Some(found), Some((stored, row))) = (found, in_rows) {
            let same_record = row
                .downcast_ref::<Tool>()
                .is_some_and(|tool| std::ptr::eq(found.record, tool));
            prop_assert!(found.key == stored && same_record, "{}: another row", key);
        }
    }
    let terms = [(COMMON, 1.0f32)];
    let query = HashedQuery::new(&terms);
    let hits = index.search_hashed_keys(&query, state.rows.len() + 1, None);
    prop_assert_eq!(hits.len(), state.rows.len());
    for hit in hits {
        let row = state
            .rows
            .get(hit.key)
            .ok_or_else(|| fail("hit not in rows"))?;
        prop_assert!(
            hit.attachment.is_some_and(|a| Arc::ptr_eq(a, row)),
            "{}: the hit's attachment is not the row",
            hit.key
        );
    }
    Ok(())
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_hits_attachment_is_the_row_under_its_key(
        txns in prop::collection::vec(prop::collection::vec(write(), 1..6), 1..12),
    ) {
        let store = Store::new();
        let mut snapshots = vec![store.snapshot()];
        for writes in &txns {
            let mut tx = store.begin();
            for w in writes {
                apply(&mut tx, w);
                check(tx.view())?;
            }
            tx.commit();
            let snap = store.snapshot();
            check(&snap)?;
            snapshots.push(snap);
        }
        // Later writes leave earlier snapshots as they were.
        for snap in &snapshots {
            check(snap)?;
        }
    }
}

#[test]
fn churn_renumbers_and_keeps_the_rows() {
    let store = Store::new();
    let mut tx = store.begin();
    apply(&mut tx, &Write::Bulk { count: 20 });
    tx.commit();
    let before = store
        .snapshot()
        .text_index(&TOOLS)
        .map(|i| i.segment_count())
        .unwrap_or(0);
    assert_eq!(before, 1, "the bulk load settled into one segment");
    let mut tx = store.begin();
    // Over 256 dead slots: the index merges everything and renumbers.
    apply(
        &mut tx,
        &Write::Churn {
            name: 0,
            times: 300,
        },
    );
    tx.commit();
    let snap = store.snapshot();
    let index = snap.text_index(&TOOLS).expect("text index");
    // 320 slots were handed out; a renumbering gave the 20 live documents slots 0..20 again,
    // and only the churn after it took more.
    assert!(index.slots_allocated() < 320, "{index:?}");
    check(&snap).expect("rows after churn");
}
