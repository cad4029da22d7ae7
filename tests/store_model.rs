//! Model-based property test of the store (in the style of imbl's `src/tests/ordset.rs`):
//! random sequences of insert / update / upsert / delete / commit / abort, applied both to the
//! store and to plain `BTreeMap`s, checking after every step that primary lookups, every
//! secondary index (single, multi, unique), prefix queries, counts and the text index agree, and
//! that snapshots taken earlier still show exactly what they showed.
//!
//! Cases: 1,000 by default (what CI runs); set `PROPTEST_CASES` for more.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use capstore::store::{IndexSchema, StoreBuilder, Table, TableSchema, TextSchema};
use capstore::{Snapshot, Store, StoreError};
use proptest::prelude::*;

#[derive(Debug, Clone, PartialEq)]
struct Item {
    id: String,
    email: Option<String>,
    group: String,
    tags: Vec<String>,
    text: String,
}

const IDS: [&str; 6] = ["a", "ab", "abc", "b", "ba", "c"];
const EMAILS: [&str; 3] = ["x@m", "y@m", "z@m"];
const GROUPS: [&str; 2] = ["g1", "g2"];
const TAGS: [&str; 3] = ["red", "green", "blue"];
const WORDS: [&str; 5] = ["search", "file", "weather", "email", "calendar"];

#[derive(Debug, Clone)]
enum Action {
    Insert(Item),
    Update(Item),
    Upsert(Item),
    Delete(String),
    Commit,
    Abort,
    /// Take a snapshot now and check later that it never changes.
    Pin,
}

fn item() -> impl Strategy<Value = Item> {
    (
        prop::sample::select(&IDS[..]),
        prop::option::of(prop::sample::select(&EMAILS[..])),
        prop::sample::select(&GROUPS[..]),
        prop::sample::subsequence(&TAGS[..], 0..=3),
        prop::collection::vec(prop::sample::select(&WORDS[..]), 0..4),
    )
        .prop_map(|(id, email, group, tags, words)| Item {
            id: id.to_string(),
            email: email.map(str::to_string),
            group: group.to_string(),
            tags: tags.into_iter().map(str::to_string).collect(),
            text: words.join(" "),
        })
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => item().prop_map(Action::Insert),
        2 => item().prop_map(Action::Update),
        2 => item().prop_map(Action::Upsert),
        2 => prop::sample::select(&IDS[..]).prop_map(|id| Action::Delete(id.to_string())),
        2 => Just(Action::Commit),
        1 => Just(Action::Abort),
        1 => Just(Action::Pin),
    ]
}

fn store() -> (Store, Table<Item>) {
    let mut builder = StoreBuilder::new();
    let items = builder
        .table(
            TableSchema::new("items", |i: &Item| i.id.clone())
                .index(IndexSchema::single("email", |i: &Item| i.email.clone()).unique())
                .index(IndexSchema::single("group", |i: &Item| {
                    Some(i.group.clone())
                }))
                .index(IndexSchema::multi("tags", |i: &Item| i.tags.clone()))
                .text_index(TextSchema::new(|i: &Item, f| f.add("text", &i.text))),
        )
        .expect("valid schema");
    (builder.build(), items)
}

type Model = BTreeMap<String, Item>;

/// The error the model expects for a write, if any.
fn expected_error(model: &Model, action: &Action) -> Option<&'static str> {
    let (item, must_exist) = match action {
        Action::Insert(i) => (i, Some(false)),
        Action::Update(i) => (i, Some(true)),
        Action::Upsert(i) => (i, None),
        Action::Delete(id) => {
            return (!model.contains_key(id)).then_some("not found");
        }
        _ => return None,
    };
    // Unique checks run before the existence check (both only read).
    if let Some(email) = &item.email {
        let taken = model
            .values()
            .any(|other| other.id != item.id && other.email.as_ref() == Some(email));
        if taken {
            return Some("unique");
        }
    }
    match (must_exist, model.contains_key(&item.id)) {
        (Some(false), true) => Some("duplicate"),
        (Some(true), false) => Some("not found"),
        _ => None,
    }
}

fn check(snap: &Snapshot, items: &Table<Item>, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(snap.count(items)?, model.len());
    let all: Vec<Item> = snap.iter(items)?.map(|(_, i)| i.clone()).collect();
    prop_assert_eq!(&all, &model.values().cloned().collect::<Vec<_>>());
    for id in IDS {
        prop_assert_eq!(snap.get(items, id)?, model.get(id));
        prop_assert_eq!(snap.contains(items, id)?, model.contains_key(id));
        let by_prefix: Vec<&str> = snap.key_prefix(items, id)?.map(|(k, _)| &**k).collect();
        let want: Vec<&str> = model
            .keys()
            .filter(|k| k.starts_with(id))
            .map(String::as_str)
            .collect();
        prop_assert_eq!(by_prefix, want);
    }
    let index_check = |index: &str, value: &str, want: Vec<&str>| -> Result<(), TestCaseError> {
        let got: Vec<&str> = snap
            .by_index(items, index, value)?
            .map(|(k, _)| &**k)
            .collect();
        prop_assert_eq!(&got, &want, "index {} value {}", index, value);
        prop_assert_eq!(snap.count_by_index(items, index, value)?, want.len());
        Ok(())
    };
    for email in EMAILS {
        let want = model
            .values()
            .filter(|i| i.email.as_deref() == Some(email))
            .map(|i| i.id.as_str())
            .collect::<Vec<_>>();
        prop_assert!(want.len() <= 1, "the model itself broke uniqueness");
        index_check("email", email, want)?;
    }
    for group in GROUPS {
        let want = model
            .values()
            .filter(|i| i.group == group)
            .map(|i| i.id.as_str())
            .collect();
        index_check("group", group, want)?;
    }
    for tag in TAGS {
        let want = model
            .values()
            .filter(|i| i.tags.iter().any(|t| t == tag))
            .map(|i| i.id.as_str())
            .collect();
        index_check("tags", tag, want)?;
    }
    // index_values lists exactly the values present, with their counts.
    let tag_values: BTreeMap<String, usize> = snap
        .index_values(items, "tags")?
        .map(|(v, n)| (v.to_string(), n))
        .collect();
    let mut want_values: BTreeMap<String, usize> = BTreeMap::new();
    for item in model.values() {
        for tag in item.tags.iter().collect::<BTreeSet<_>>() {
            *want_values.entry(tag.clone()).or_default() += 1;
        }
    }
    prop_assert_eq!(tag_values, want_values);
    // Prefix over a multi index: each record once.
    let got: Vec<&str> = snap
        .index_prefix(items, "tags", "gr")?
        .map(|(k, _)| &**k)
        .collect();
    let want: Vec<&str> = model
        .values()
        .filter(|i| i.tags.iter().any(|t| t.starts_with("gr")))
        .map(|i| i.id.as_str())
        .collect();
    prop_assert_eq!(got, want);
    // The text index holds exactly the table's records.
    let index = snap.text_index(items)?;
    prop_assert_eq!(index.len(), model.len());
    let keys: Vec<String> = index.keys().iter().map(|k| k.to_string()).collect();
    prop_assert_eq!(keys, model.keys().cloned().collect::<Vec<_>>());
    Ok(())
}

fn run(actions: Vec<Action>) -> Result<(), TestCaseError> {
    let (store, items) = store();
    let mut committed: Model = BTreeMap::new();
    let mut working: Model = BTreeMap::new();
    let mut tx = None;
    let mut pinned: Vec<(Arc<Snapshot>, Model)> = Vec::new();
    let mut version = 0;
    let mut touched: BTreeSet<String> = BTreeSet::new();

    for action in actions {
        match &action {
            Action::Commit => {
                if let Some(t) = tx.take() {
                    // The store publishes a version when any key written in the transaction
                    // existed before or exists after: rewriting an equal record is an update
                    // (the store does not compare records), insert-then-delete is nothing.
                    let changed = touched
                        .iter()
                        .any(|k| committed.contains_key(k) || working.contains_key(k));
                    let info = capstore::WriteTxn::commit(t);
                    if changed {
                        version += 1;
                    }
                    prop_assert_eq!(info.version, version);
                    committed = working.clone();
                }
                touched.clear();
            }
            Action::Abort => {
                if let Some(t) = tx.take() {
                    capstore::WriteTxn::abort(t);
                }
                working = committed.clone();
                touched.clear();
            }
            Action::Pin => pinned.push((store.snapshot(), committed.clone())),
            write => {
                let t = tx.get_or_insert_with(|| store.begin());
                let expected = expected_error(&working, write);
                let result: Result<(), StoreError> = match write {
                    Action::Insert(i) => t.insert(&items, i.clone()).map(|_| ()),
                    Action::Update(i) => t.update(&items, i.clone()).map(|_| ()),
                    Action::Upsert(i) => t.upsert(&items, i.clone()).map(|_| ()),
                    Action::Delete(id) => t.delete(&items, id).map(|_| ()),
                    _ => Ok(()),
                };
                match (expected, result) {
                    (None, Ok(())) => match write {
                        Action::Insert(i) | Action::Update(i) | Action::Upsert(i) => {
                            working.insert(i.id.clone(), i.clone());
                            touched.insert(i.id.clone());
                        }
                        Action::Delete(id) => {
                            working.remove(id);
                            touched.insert(id.clone());
                        }
                        _ => {}
                    },
                    (Some("unique"), Err(StoreError::UniqueViolation { .. }))
                    | (Some("duplicate"), Err(StoreError::DuplicateKey { .. }))
                    | (Some("not found"), Err(StoreError::NotFound { .. })) => {}
                    (expected, result) => {
                        return Err(TestCaseError::fail(format!(
                            "{write:?}: expected {expected:?}, got {result:?}"
                        )));
                    }
                }
                check(t.view(), &items, &working)?;
            }
        }
        let snap = store.snapshot();
        prop_assert_eq!(snap.version(), version);
        check(&snap, &items, &committed)?;
    }
    for (snap, model) in &pinned {
        check(snap, &items, model)?;
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]
    #[test]
    fn store_agrees_with_a_btreemap_model(actions in prop::collection::vec(action(), 1..60)) {
        run(actions)?;
    }
}
