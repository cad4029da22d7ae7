//! Faults around the store: threads that panic while holding a snapshot or the write
//! transaction, transactions dropped half-way, a subscriber that blocks, user callbacks (key,
//! index and text functions of a user table) that panic in the middle of a write. After each,
//! the store must be usable, show nothing partial, and stay internally consistent.
//!
//! Handler and hook panics and errors are covered by tests/exec_errors.rs
//! (`handler_panic_is_caught_and_the_executor_still_works`, `hook_failures_leave_no_trace_either`)
//! and a panicking subscriber by tests/store_changes.rs (`a_panicking_subscriber_is_contained`);
//! they are not repeated here.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use capstore::exec::{register_hook, register_tool};
use capstore::skills::{SkillError, register_skill};
use capstore::store::{IndexSchema, StoreBuilder, Table, TableSchema, TextSchema};
use capstore::{HANDLERS, HOOKS, Hook, HookEvent, HookOutcome, SKILLS, Skill, Store, TOOLS, Tool};

/// Watchdog for a step that must not hang: fails with `what` if `rx` gets nothing in 30 s.
fn within<T>(rx: &mpsc::Receiver<T>, what: &str) -> T {
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("deadlock? {what} did not finish within 30 s"))
}

fn seeded() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("get_weather", "Weather"),
                |v| async move { Ok(v) },
            )?;
            register_skill(
                tx,
                Skill::new("files", "Files"),
                vec![Tool::new("read_file", "Read")],
            )?;
            Ok::<_, SkillError>(())
        })
        .expect("seed");
    store
}

/// Every tool's owners exist, every listed tool exists, the text index matches the table.
fn assert_consistent(store: &Store) {
    let snap = store.snapshot();
    let count = snap.count(&TOOLS).expect("tools");
    assert_eq!(snap.text_index(&TOOLS).expect("text").len(), count);
    for (_, tool) in snap.iter(&TOOLS).expect("tools") {
        for owner in &tool.skills {
            assert!(snap.contains(&SKILLS, owner).expect("skills"), "{owner}");
        }
    }
    for (_, skill) in snap.iter(&SKILLS).expect("skills") {
        for tool in &skill.tools {
            assert!(snap.contains(&TOOLS, tool).expect("tools"), "{tool}");
        }
    }
}

#[test]
fn a_thread_that_panics_holding_the_write_txn_releases_it_and_leaves_nothing() {
    let store = seeded();
    let before = store.snapshot();
    let writer = {
        let store = store.clone();
        thread::spawn(move || {
            let mut tx = store.begin();
            tx.insert(&TOOLS, Tool::new("half_done", ""))
                .expect("insert");
            register_skill(
                &mut tx,
                Skill::new("half", ""),
                vec![Tool::new("half_tool", "")],
            )
            .expect("register");
            panic!("writer dies mid-transaction");
        })
    };
    assert!(writer.join().is_err(), "the writer thread panicked");
    // parking_lot's mutex is not poisoned: the lock is simply free again.
    let next = store
        .try_begin()
        .expect("the writer lock was released by the unwind");
    drop(next);
    let snap = store.snapshot();
    assert_eq!(snap.version(), before.version());
    assert!(!snap.contains(&TOOLS, "half_done").expect("tools"));
    assert!(!snap.contains(&SKILLS, "half").expect("skills"));
    let info = store
        .write(|tx| tx.insert(&TOOLS, Tool::new("after", "")))
        .expect("the next writer proceeds");
    assert_eq!(info.version, before.version() + 1);
    assert_consistent(&store);
}

#[test]
fn a_write_closure_that_panics_commits_nothing() {
    let store = seeded();
    let before = store.version();
    let commits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&commits);
    let _sub = store.subscribe(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let result = catch_unwind(AssertUnwindSafe(|| {
        store.write(|tx| {
            tx.insert(&TOOLS, Tool::new("ghost", ""))?;
            if tx.view().contains(&TOOLS, "ghost")? {
                panic!("closure dies after a write");
            }
            Ok::<_, capstore::StoreError>(())
        })
    }));
    assert!(result.is_err());
    assert_eq!(store.version(), before);
    assert_eq!(
        commits.load(Ordering::SeqCst),
        0,
        "no change set for a panicked write"
    );
    store
        .write(|tx| tx.insert(&TOOLS, Tool::new("ghost", "now for real")))
        .expect("the same write succeeds afterwards");
    assert_eq!(commits.load(Ordering::SeqCst), 1);
    assert_consistent(&store);
}

#[test]
fn a_thread_that_panics_holding_a_snapshot_harms_nothing() {
    let store = seeded();
    let (tx, rx) = mpsc::channel();
    let reader = {
        let store = store.clone();
        thread::spawn(move || {
            let snap = store.snapshot();
            tx.send(snap.version()).expect("send");
            let _held = snap.get(&TOOLS, "get_weather").expect("get");
            panic!("reader dies holding a snapshot");
        })
    };
    let seen = within(&rx, "the reader");
    assert!(reader.join().is_err());
    store
        .write(|tx| tx.insert(&TOOLS, Tool::new("later", "")))
        .expect("writes go on");
    assert_eq!(store.version(), seen + 1);
    assert_consistent(&store);
}

#[test]
fn a_transaction_dropped_half_way_leaves_no_trace() {
    let store = seeded();
    let before = store.snapshot();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let _sub = store.subscribe(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    {
        let mut tx = store.begin();
        register_tool(&mut tx, Tool::new("t1", "one"), |v| async move { Ok(v) }).expect("tool");
        register_skill(
            &mut tx,
            Skill::new("s1", "").with_dependencies(["files"]),
            vec![Tool::new("t2", "")],
        )
        .expect("skill");
        register_hook(
            &mut tx,
            Hook::new("h1", HookEvent::PreToolUse, "*"),
            |_| async { Ok(HookOutcome::Continue) },
        )
        .expect("hook");
        tx.delete(&TOOLS, "get_weather").expect("delete");
        assert_eq!(tx.view().count(&TOOLS).expect("count"), 3);
        // Dropped here, without commit.
    }
    let after = store.snapshot();
    assert_eq!(after.version(), before.version());
    for (table_count, was) in [
        (
            after.count(&TOOLS).expect("tools"),
            before.count(&TOOLS).expect("tools"),
        ),
        (
            after.count(&SKILLS).expect("skills"),
            before.count(&SKILLS).expect("skills"),
        ),
        (
            after.count(&HOOKS).expect("hooks"),
            before.count(&HOOKS).expect("hooks"),
        ),
        (
            after.count(&HANDLERS).expect("h"),
            before.count(&HANDLERS).expect("h"),
        ),
    ] {
        assert_eq!(table_count, was);
    }
    assert!(after.contains(&TOOLS, "get_weather").expect("tools"));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_consistent(&store);
}

#[test]
fn a_blocked_subscriber_holds_the_writer_but_never_the_readers() {
    let store = seeded();
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let released = std::sync::Mutex::new(released);
    let _slow = store.subscribe(move |_| {
        let _ = entered_tx.send(());
        // Blocks until the test lets it go (bounded, so a broken test cannot hang CI).
        let _ = released
            .lock()
            .map(|r| r.recv_timeout(Duration::from_secs(30)));
    });
    let (done_tx, done) = mpsc::channel();
    let writer = {
        let store = store.clone();
        thread::spawn(move || {
            let info = store
                .write(|tx| tx.insert(&TOOLS, Tool::new("slowly", "")))
                .expect("commit");
            done_tx.send(info.version).expect("send");
        })
    };
    within(&entered, "the commit reaching the subscriber");
    // The commit is published before listeners run: readers see it and are not blocked.
    let snap = store.snapshot();
    assert!(snap.contains(&TOOLS, "slowly").expect("tools"));
    assert!(snap.search(&TOOLS, "slowly", 1).expect("search").len() == 1);
    // Listeners run under the writer lock (that is what keeps them in version order).
    assert!(store.try_begin().is_none(), "the writer lock is still held");
    release.send(()).expect("release");
    let version = within(&done, "the commit after the subscriber returned");
    writer.join().expect("writer");
    assert_eq!(version, store.version());
    assert!(store.try_begin().is_some());
}

/// A user table whose callbacks panic on records named "boom-*".
#[derive(Debug, Clone, PartialEq)]
struct Note {
    id: String,
    text: String,
}

fn notes_store(fault: &'static str) -> (Store, Table<Note>) {
    let mut builder = StoreBuilder::new();
    let notes = builder
        .table(
            TableSchema::new("notes", move |n: &Note| {
                assert!(
                    !(fault == "key" && n.id.starts_with("boom")),
                    "key function fault"
                );
                n.id.clone()
            })
            .index(IndexSchema::multi("words", move |n: &Note| {
                assert!(
                    !(fault == "index" && n.id.starts_with("boom")),
                    "index function fault"
                );
                n.text.split(' ').map(str::to_string).collect()
            }))
            .text_index(TextSchema::new(move |n: &Note, f| {
                assert!(
                    !(fault == "text" && n.id.starts_with("boom")),
                    "text function fault"
                );
                f.add("text", &n.text);
            })),
        )
        .expect("schema");
    (builder.build(), notes)
}

#[test]
fn a_panicking_table_callback_leaves_the_transaction_as_it_was() {
    for fault in ["key", "index", "text"] {
        let (store, notes) = notes_store(fault);
        let note = |id: &str, text: &str| Note {
            id: id.into(),
            text: text.into(),
        };
        store
            .write(|tx| tx.insert(&notes, note("a", "red apple")))
            .expect("seed");
        let mut tx = store.begin();
        tx.insert(&notes, note("b", "green apple")).expect("insert");
        let caught = catch_unwind(AssertUnwindSafe(|| {
            tx.insert(&notes, note("boom-1", "red"))
        }));
        assert!(caught.is_err(), "{fault}: the callback panicked");
        // The transaction goes on, and holds exactly what it held before the panic.
        let view = tx.view();
        assert_eq!(view.count(&notes).expect("count"), 2, "{fault}");
        assert!(
            !view.contains(&notes, "boom-1").expect("contains"),
            "{fault}"
        );
        assert_eq!(
            view.count_by_index(&notes, "words", "red").expect("idx"),
            1,
            "{fault}"
        );
        assert_eq!(
            view.text_index(&notes).expect("text").len(),
            2,
            "{fault}: text index"
        );
        tx.insert(&notes, note("c", "blue"))
            .expect("insert after the panic");
        tx.commit();
        let snap = store.snapshot();
        assert_eq!(snap.count(&notes).expect("count"), 3);
        assert_eq!(snap.text_index(&notes).expect("text").len(), 3, "{fault}");
        let keys: Vec<String> = snap
            .text_index(&notes)
            .expect("text")
            .keys()
            .iter()
            .map(|k| k.to_string())
            .collect();
        assert_eq!(keys, ["a", "b", "c"], "{fault}");
    }
}
