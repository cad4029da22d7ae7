//! Change sets, subscriptions (sync and async) and watchers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capstore::{ChangeKind, Store, StoreError, TOOLS, Tool, WatchSet};

#[test]
fn change_sets_hold_exactly_what_changed() -> Result<(), StoreError> {
    let store = Store::new();
    store.write(|tx| {
        tx.insert(&TOOLS, Tool::new("a", "1"))?;
        tx.insert(&TOOLS, Tool::new("b", "1"))
    })?;
    let info = store.write(|tx| {
        tx.update(&TOOLS, Tool::new("a", "2"))?; // updated
        tx.update(&TOOLS, Tool::new("a", "3"))?; // folded into one update
        tx.delete(&TOOLS, "b")?; // deleted
        tx.insert(&TOOLS, Tool::new("c", "1"))?; // inserted
        tx.insert(&TOOLS, Tool::new("d", "1"))?;
        tx.delete(&TOOLS, "d").map(|_| ()) // inserted then deleted: no change
    })?;
    let got: Vec<(String, String, ChangeKind)> = info
        .changes
        .changes
        .iter()
        .map(|c| (c.table.to_string(), c.key.to_string(), c.kind))
        .collect();
    assert_eq!(
        got,
        [
            ("tools".into(), "a".into(), ChangeKind::Updated),
            ("tools".into(), "b".into(), ChangeKind::Deleted),
            ("tools".into(), "c".into(), ChangeKind::Inserted),
        ]
    );
    let a = &info.changes.changes[0];
    assert_eq!(a.before(&TOOLS).map(|t| t.description.as_str()), Some("1"));
    assert_eq!(a.after(&TOOLS).map(|t| t.description.as_str()), Some("3"));
    let b = &info.changes.changes[1];
    assert_eq!(b.before(&TOOLS).map(|t| t.name.as_str()), Some("b"));
    assert!(b.after(&TOOLS).is_none());
    assert_eq!(info.changes.version, 2);
    Ok(())
}

#[test]
fn subscribers_get_every_commit_in_order_and_none_for_aborts() -> Result<(), StoreError> {
    let store = Store::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let (l1, l2) = (Arc::clone(&log), Arc::clone(&log));
    let s1 = store.subscribe(move |c| l1.lock().expect("lock").push(("one", c.version)));
    let _s2 = store.subscribe(move |c| l2.lock().expect("lock").push(("two", c.version)));

    store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "x")))?;
    let mut tx = store.begin();
    tx.insert(&TOOLS, Tool::new("b", "x"))?;
    tx.abort(); // no event
    store.begin().commit(); // empty commit: no event
    s1.unsubscribe();
    store.write(|tx| tx.insert(&TOOLS, Tool::new("c", "x")))?;

    assert_eq!(
        *log.lock().expect("lock"),
        [("one", 1), ("two", 1), ("two", 2)]
    );
    assert_eq!(store.subscriber_count(), 1);
    Ok(())
}

#[test]
fn a_panicking_subscriber_is_contained() -> Result<(), StoreError> {
    let store = Store::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let _bad = store.subscribe(|_| panic!("subscriber bug"));
    let _good = store.subscribe(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "x")))?;
    store.write(|tx| tx.insert(&TOOLS, Tool::new("b", "x")))?;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(store.listener_panics(), 2);
    assert_eq!(store.snapshot().count(&TOOLS)?, 2);
    Ok(())
}

#[test]
fn subscriptions_can_be_added_and_removed_from_many_threads() {
    let store = Store::new();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                for _ in 0..100 {
                    let sub = store.subscribe(|_| {});
                    drop(sub);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    assert_eq!(store.subscriber_count(), 0);
}

#[tokio::test]
async fn async_receivers_get_change_sets_and_versions() -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::new();
    let mut changes = store.changes();
    let writer = store.clone();
    let handle = std::thread::spawn(move || {
        for i in 0..3 {
            writer
                .write(|tx| tx.insert(&TOOLS, Tool::new(format!("t{i}"), "x")))
                .expect("write");
        }
    });
    for want in 1..=3 {
        let set = changes.recv().await?;
        assert_eq!(set.version, want);
        assert_eq!(set.changes.len(), 1);
    }
    let snap = store.wait_for_version(3).await;
    assert_eq!(snap.count(&TOOLS)?, 3);
    handle.join().expect("writer");
    Ok(())
}

#[test]
fn watchers_fire_only_for_commits_that_may_change_their_results() -> Result<(), StoreError> {
    let store = Store::new();
    store.write(|tx| {
        tx.insert(
            &TOOLS,
            Tool::new("fetch", "x")
                .with_source("web")
                .with_tags(["http"]),
        )?;
        tx.insert(
            &TOOLS,
            Tool::new("read", "x")
                .with_source("fs")
                .with_tags(["files"]),
        )
    })?;
    let v = store.version();
    let by_tag = store.watch(&WatchSet::new().index(&TOOLS, "tags", "http"), v)?;
    let by_key = store.watch(&WatchSet::new().key(&TOOLS, "fs/read"), v)?;
    let by_prefix = store.watch(&WatchSet::new().index_prefix(&TOOLS, "id", "web/"), v)?;
    let by_table = store.watch(&WatchSet::new().table(&TOOLS), v)?;
    let empty = store.watch(&WatchSet::new(), v)?;

    // A tool losing the watched tag fires the tag watcher (it matched before).
    store.write(|tx| {
        tx.update(
            &TOOLS,
            Tool::new("fetch", "x")
                .with_source("web")
                .with_tags(["web"]),
        )
    })?;
    assert!(by_tag.is_fired());
    assert!(by_prefix.is_fired());
    assert!(by_table.is_fired());
    assert!(!by_key.is_fired());
    assert!(!empty.is_fired());

    store.write(|tx| tx.delete(&TOOLS, "fs/read").map(|_| ()))?;
    assert!(by_key.wait_timeout(Duration::from_secs(5)));
    assert!(!empty.is_fired());
    Ok(())
}

#[test]
fn a_watcher_registered_late_fires_at_once() -> Result<(), StoreError> {
    let store = Store::new();
    let old = store.snapshot();
    store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "x")))?;
    let w = store.watch(&WatchSet::new().key(&TOOLS, "zzz"), old.version())?;
    assert!(
        w.is_fired(),
        "conservative: a commit since the read version may matter"
    );
    let fresh = store.watch(&WatchSet::new().key(&TOOLS, "zzz"), store.version())?;
    assert!(!fresh.is_fired());
    Ok(())
}

#[test]
fn watching_an_unknown_index_is_an_error() {
    let store = Store::new();
    let err = store
        .watch(&WatchSet::new().index(&TOOLS, "colour", "red"), 0)
        .unwrap_err();
    assert_eq!(err.to_string(), "table `tools` has no index `colour`");
}

/// Each table's version moves with the commits that change it and with no other: a write to
/// one table, a write that changes nothing, a removal that takes a following table's rows.
#[test]
fn each_table_says_at_which_version_it_last_changed() -> Result<(), StoreError> {
    use capstore::usage::{TurnUse, learn};
    use capstore::{SKILLS, Skill, USAGE};
    let store = Store::new();
    let at = |store: &Store| -> Result<(u64, u64, u64, u64), StoreError> {
        let snap = store.snapshot();
        Ok((
            snap.version(),
            snap.table_version(&TOOLS)?,
            snap.table_version(&USAGE)?,
            snap.table_version(&SKILLS)?,
        ))
    };
    assert_eq!(at(&store)?, (0, 0, 0, 0));
    store.write(|tx| {
        tx.insert(&TOOLS, Tool::new("cd", "Change directory"))?;
        tx.insert(&TOOLS, Tool::new("mv", "Move"))
    })?;
    assert_eq!(at(&store)?, (1, 1, 0, 0));
    store.write(|tx| learn(tx, &TurnUse::new(["cd", "mv"])))?;
    assert_eq!(at(&store)?, (2, 1, 2, 0));
    // Nothing changed (inserted then deleted): no version at all.
    store.write(|tx| {
        tx.insert(&SKILLS, Skill::new("files", "Files"))?;
        tx.delete(&SKILLS, "files").map(drop)
    })?;
    assert_eq!(at(&store)?, (2, 1, 2, 0));
    // A tool removed takes its usage row: both tables changed.
    store.write(|tx| tx.delete(&TOOLS, "mv").map(drop))?;
    assert_eq!(at(&store)?, (3, 3, 3, 0));
    // An older snapshot keeps its own.
    let old = store.snapshot();
    store.write(|tx| tx.insert(&SKILLS, Skill::new("files", "Files")))?;
    assert_eq!(old.table_version(&SKILLS)?, 0);
    assert_eq!(at(&store)?, (4, 3, 3, 4));
    Ok(())
}

/// A watch on the tools table, or a follower of its versions, is not woken by usage written
/// after it, nor fired for it when registered late; a tool change wakes both.
#[test]
fn a_watch_on_the_tools_table_does_not_wake_for_usage() -> Result<(), StoreError> {
    use capstore::usage::{TurnUse, learn};
    let store = Store::new();
    store.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory")))?;
    let read = store.snapshot();
    let early = store.watch(&WatchSet::new().table(&TOOLS), read.version())?;
    let mut versions = store.table_versions(&TOOLS)?;
    store.write(|tx| learn(tx, &TurnUse::new(["cd"])))?;
    assert_eq!(store.version(), read.version() + 1);
    assert!(!early.is_fired(), "woken by a usage write");
    assert!(!versions.has_changed().expect("store alive"));
    // Registered after the usage write, relative to the snapshot read before it.
    let late = store.watch(&WatchSet::new().table(&TOOLS), read.version())?;
    assert!(!late.is_fired(), "fired for a usage write it missed");
    let key = store.watch(&WatchSet::new().key(&TOOLS, "cd"), read.version())?;
    assert!(!key.is_fired());
    // A tool change wakes them all.
    store.write(|tx| tx.insert(&TOOLS, Tool::new("mv", "Move")))?;
    assert!(early.is_fired() && late.is_fired());
    assert!(!key.is_fired(), "another key of the table");
    assert!(versions.has_changed().expect("store alive"));
    assert_eq!(*versions.borrow_and_update(), store.version());
    // Registered late after a tool change it missed: fires at once.
    let missed = store.watch(&WatchSet::new().table(&TOOLS), read.version())?;
    assert!(missed.is_fired());
    Ok(())
}
