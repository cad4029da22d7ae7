//! Snapshot isolation: no dirty, non-repeatable or phantom reads; aborted transactions leave no
//! trace; a transaction sees its own writes.

use capstore::{Store, StoreError, TOOLS, Tool};

fn tool(name: &str, tag: &str) -> Tool {
    Tool::new(name, format!("{name} does things")).with_tags([tag])
}

#[test]
fn a_snapshot_sees_none_of_the_commits_after_it() -> Result<(), StoreError> {
    let store = Store::new();
    store.write(|tx| tx.insert(&TOOLS, tool("keep", "web")))?;
    let before = store.snapshot();
    for i in 0..50 {
        store.write(|tx| {
            tx.insert(&TOOLS, tool(&format!("t{i}"), "web"))?;
            tx.upsert(&TOOLS, tool("keep", &format!("tag{i}")))
        })?;
    }
    store.write(|tx| tx.delete(&TOOLS, "keep").map(|_| ()))?;
    // Repeatable read: the same record, unchanged.
    assert_eq!(
        before.get(&TOOLS, "keep")?.map(|t| t.tags.clone()),
        Some(vec!["web".to_string()])
    );
    // No phantoms: the same set for the same query.
    assert_eq!(before.by_index(&TOOLS, "tags", "web")?.count(), 1);
    assert_eq!(before.count(&TOOLS)?, 1);
    assert_eq!(before.text_index(&TOOLS)?.len(), 1);
    assert_eq!(before.version(), 1);
    let after = store.snapshot();
    assert_eq!(after.count(&TOOLS)?, 50);
    assert_eq!(after.version(), 52);
    Ok(())
}

#[test]
fn uncommitted_writes_are_invisible_to_readers() -> Result<(), StoreError> {
    let store = Store::new();
    let mut tx = store.begin();
    tx.insert(&TOOLS, tool("draft", "web"))?;
    let reader = store.clone();
    let seen = std::thread::spawn(move || reader.snapshot().count(&TOOLS))
        .join()
        .expect("reader thread")?;
    assert_eq!(seen, 0, "dirty read");
    assert_eq!(store.snapshot().by_index(&TOOLS, "tags", "web")?.count(), 0);
    assert!(store.snapshot().search(&TOOLS, "draft", 5)?.is_empty());
    tx.commit();
    assert_eq!(store.snapshot().count(&TOOLS)?, 1);
    Ok(())
}

#[test]
fn aborted_and_dropped_transactions_leave_no_trace() -> Result<(), StoreError> {
    let store = Store::new();
    store.write(|tx| tx.insert(&TOOLS, tool("base", "fs")))?;
    let base = store.snapshot();

    let mut tx = store.begin();
    tx.insert(&TOOLS, tool("a", "web"))?;
    tx.delete(&TOOLS, "base")?;
    tx.abort();

    {
        let mut tx = store.begin();
        tx.upsert(&TOOLS, tool("base", "changed"))?;
    } // dropped

    let now = store.snapshot();
    assert_eq!(now.version(), base.version());
    assert_eq!(now.get(&TOOLS, "base")?, base.get(&TOOLS, "base")?);
    assert_eq!(now.count(&TOOLS)?, 1);
    assert_eq!(now.by_index(&TOOLS, "tags", "changed")?.count(), 0);
    assert_eq!(now.text_index(&TOOLS)?.len(), 1);
    Ok(())
}

#[test]
fn a_transaction_sees_its_own_writes() -> Result<(), StoreError> {
    let store = Store::new();
    let mut tx = store.begin();
    tx.insert(&TOOLS, tool("fetch", "web"))?;
    assert_eq!(tx.view().by_index(&TOOLS, "tags", "web")?.count(), 1);
    assert_eq!(tx.view().search(&TOOLS, "fetch", 1)?.len(), 1);
    tx.update(&TOOLS, tool("fetch", "http"))?;
    assert_eq!(tx.view().by_index(&TOOLS, "tags", "web")?.count(), 0);
    assert_eq!(tx.view().by_index(&TOOLS, "tags", "http")?.count(), 1);
    tx.delete(&TOOLS, "fetch")?;
    assert!(tx.view().get(&TOOLS, "fetch")?.is_none());
    // Insert then delete folds to nothing: the commit publishes no new version.
    assert_eq!(tx.commit().version, 0);
    Ok(())
}

#[test]
fn a_failed_write_leaves_the_transaction_as_it_was() -> Result<(), StoreError> {
    let store = Store::new();
    let mut tx = store.begin();
    tx.insert(&TOOLS, tool("ok", "web"))?;
    let err = tx.insert(&TOOLS, tool("ok", "other")).unwrap_err();
    assert!(matches!(err, StoreError::DuplicateKey { .. }));
    let err = tx.insert(&TOOLS, Tool::new("", "nameless")).unwrap_err();
    assert!(matches!(err, StoreError::InvalidRecord { .. }), "{err:?}");
    assert_eq!(
        tx.view().get(&TOOLS, "ok")?.map(|t| t.tags.clone()),
        Some(vec!["web".into()])
    );
    assert_eq!(tx.view().by_index(&TOOLS, "tags", "other")?.count(), 0);
    let info = tx.commit();
    assert_eq!(info.changes.changes.len(), 1);
    assert_eq!(store.snapshot().count(&TOOLS)?, 1);
    Ok(())
}
