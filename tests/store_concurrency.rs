//! One writer committing thousands of transactions while reader threads check that every
//! snapshot they take is internally consistent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use capstore::{Snapshot, Store, StoreError, TOOLS, Tool};

const COMMITS: u64 = 3_000;
const TAGS: [&str; 4] = ["web", "fs", "code", "mail"];

/// Every tool listed under a tag exists in the primary map and carries the tag; the tag counts
/// add up to the tag-bearing records; the text index holds exactly the table's keys; the
/// version's invariant (tool count = min(version, 100)) holds.
fn check_consistent(snap: &Snapshot) -> Result<(), StoreError> {
    let count = snap.count(&TOOLS)?;
    let mut tagged = 0;
    for tag in TAGS {
        for (key, tool) in snap.by_index(&TOOLS, "tags", tag)? {
            assert!(
                snap.contains(&TOOLS, key)?,
                "index points at a missing record"
            );
            assert!(
                tool.tags.iter().any(|t| t == tag),
                "index and record disagree"
            );
            tagged += 1;
        }
    }
    assert_eq!(tagged, count, "every tool has exactly one tag");
    let index = snap.text_index(&TOOLS)?;
    assert_eq!(index.len(), count, "text index and table disagree in size");
    assert_eq!(index.stats().n_docs as usize, count);
    // The writer keeps at most 100 tools and inserts one per commit until it has them.
    assert_eq!(count as u64, snap.version().min(100));
    Ok(())
}

#[test]
fn readers_always_see_consistent_snapshots_while_a_writer_commits() {
    let store = Store::new();
    let done = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicU64::new(0));

    let readers: Vec<_> = (0..3)
        .map(|_| {
            let store = store.clone();
            let done = Arc::clone(&done);
            let checks = Arc::clone(&checks);
            thread::spawn(move || -> Result<(), StoreError> {
                let mut last_version = 0;
                while !done.load(Ordering::Acquire) {
                    let snap = store.snapshot();
                    assert!(snap.version() >= last_version, "versions went backwards");
                    last_version = snap.version();
                    check_consistent(&snap)?;
                    checks.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();

    for i in 0..COMMITS {
        let key = format!("tool{}", i % 100);
        let tag = TAGS[(i % 4) as usize];
        store
            .write(|tx| {
                tx.upsert(
                    &TOOLS,
                    Tool::new(key.clone(), format!("does {tag} things {i}")).with_tags([tag]),
                )
            })
            .expect("write");
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        reader
            .join()
            .expect("reader panicked")
            .expect("reader error");
    }
    assert_eq!(store.version(), COMMITS);
    check_consistent(&store.snapshot()).expect("final snapshot");
    // The readers did real work (not a vacuous pass).
    assert!(checks.load(Ordering::Relaxed) > 0);
}

#[test]
fn writers_on_many_threads_are_serialised() {
    let store = Store::new();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            thread::spawn(move || {
                for i in 0..200 {
                    store
                        .write(|tx| {
                            tx.insert(
                                &TOOLS,
                                Tool::new(format!("w{w}-{i}"), "x").with_tags(["web"]),
                            )
                        })
                        .expect("write");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer panicked");
    }
    let snap = store.snapshot();
    assert_eq!(snap.version(), 800);
    assert_eq!(snap.count(&TOOLS).expect("count"), 800);
    assert_eq!(
        snap.count_by_index(&TOOLS, "tags", "web").expect("count"),
        800
    );
}
