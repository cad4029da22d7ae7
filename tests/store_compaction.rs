//! A write transaction that at least doubles a small table's text index (a bulk load) leaves
//! the index in one segment; single writes, and loads past `BULK_COMPACT_MAX_DOCS`, keep the
//! logarithmic merges. Either way the scores are the same to the bit.

use capstore::bm25::BULK_COMPACT_MAX_DOCS;
use capstore::{Store, StoreError, TOOLS, Tool};

const WORDS: [&str; 8] = [
    "files", "mail", "calendar", "search", "deploy", "weather", "notes", "sql",
];

fn tool(i: usize) -> Tool {
    let description = format!(
        "{} then {} for item {i}",
        WORDS[i % WORDS.len()],
        WORDS[(i * 3 + 1) % WORDS.len()]
    );
    Tool::new(format!("tool_{i}"), description)
}

fn segments(store: &Store) -> usize {
    store
        .snapshot()
        .text_index(&TOOLS)
        .expect("tools are text-indexed")
        .segment_count()
}

/// (key, score bits) of the top 20 for `query`.
fn top(store: &Store, query: &str) -> Vec<(String, u32)> {
    let snapshot = store.snapshot();
    snapshot
        .search(&TOOLS, query, 20)
        .expect("tools are text-indexed")
        .into_iter()
        .map(|hit| (hit.key.to_string(), hit.score.to_bits()))
        .collect()
}

#[test]
fn a_bulk_load_is_compacted_and_single_writes_are_not() -> Result<(), StoreError> {
    let bulk = Store::new();
    bulk.write(|tx| {
        for i in 0..60 {
            tx.insert(&TOOLS, tool(i))?;
        }
        Ok::<_, StoreError>(())
    })?;
    assert_eq!(segments(&bulk), 1);

    let single = Store::new();
    for i in 0..60 {
        single.write(|tx| tx.insert(&TOOLS, tool(i)))?;
    }
    assert!(segments(&single) > 1, "{} segments", segments(&single));

    for query in ["files", "mail and calendar", "deploy sql notes for item 7"] {
        let expected = top(&single, query);
        assert!(!expected.is_empty());
        assert_eq!(top(&bulk, query), expected, "{query}");
    }

    // One more tool into 60 is not a bulk write: it gets a segment of its own.
    bulk.write(|tx| tx.insert(&TOOLS, tool(60)))?;
    assert_eq!(segments(&bulk), 2);
    Ok(())
}

fn load(store: &Store, range: std::ops::Range<usize>) -> Result<(), StoreError> {
    store
        .write(|tx| {
            for i in range {
                tx.insert(&TOOLS, tool(i))?;
            }
            Ok::<_, StoreError>(())
        })
        .map(|_| ())
}

#[test]
fn a_second_load_that_doubles_the_index_is_compacted_again() -> Result<(), StoreError> {
    let store = Store::new();
    load(&store, 0..40)?;
    store.write(|tx| tx.insert(&TOOLS, tool(40)))?;
    assert_eq!(segments(&store), 2);
    // 41 → 81 documents is not quite double: left alone.
    load(&store, 41..81)?;
    assert!(segments(&store) > 1);
    // 81 → 162: doubled.
    load(&store, 81..162)?;
    assert_eq!(segments(&store), 1);
    Ok(())
}

#[test]
fn a_load_past_the_limit_keeps_its_segments() -> Result<(), StoreError> {
    let store = Store::new();
    load(&store, 0..BULK_COMPACT_MAX_DOCS + 1)?;
    assert!(segments(&store) > 1, "{} segments", segments(&store));

    let at_limit = Store::new();
    load(&at_limit, 0..BULK_COMPACT_MAX_DOCS)?;
    assert_eq!(segments(&at_limit), 1);
    Ok(())
}
