//! Unit tests of schema validation, handles and bad input. Each bad input must give a typed
//! error and leave the store exactly as it was.

use std::sync::Arc;

use crate::bm25::{Bm25Params, IndexConfig};
use crate::hooks::{HOOKS, Hook, HookEvent};
use crate::skills::{SKILLS, Skill};
use crate::store::{
    IndexSchema, RecordError, SchemaError, Snapshot, Store, StoreBuilder, StoreError, Table,
    TableSchema, TextSchema,
};
use crate::tools::{TOOLS, Tool};

fn assert_unchanged(store: &Store, before: &Arc<Snapshot>) {
    let now = store.snapshot();
    assert_eq!(now.version(), before.version());
    let tools = |s: &Snapshot| -> Vec<Tool> {
        s.iter(&TOOLS)
            .expect("tools")
            .map(|(_, t)| t.clone())
            .collect()
    };
    assert_eq!(tools(&now), tools(before));
    assert_eq!(
        now.text_index(&TOOLS).expect("index").len(),
        before.text_index(&TOOLS).expect("index").len()
    );
}

fn seeded() -> Store {
    let store = Store::new();
    store
        .write(|tx| tx.insert(&TOOLS, Tool::new("read_file", "Read").with_source("fs")))
        .expect("seed");
    store
}

#[test]
fn schema_errors_name_the_table_and_index() {
    let mut b = StoreBuilder::new();
    let err = b
        .table(TableSchema::new("", |s: &String| s.clone()))
        .unwrap_err();
    assert!(matches!(err, SchemaError::InvalidName { index: None, .. }));

    let err = b
        .table(TableSchema::new("bad name", |s: &String| s.clone()))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid table name `bad name`: may hold only ASCII letters, digits, `_` and `-`"
    );

    let err = b
        .table(
            TableSchema::new("t", |s: &String| s.clone())
                .index(IndexSchema::single("x", |s: &String| Some(s.clone())))
                .index(IndexSchema::multi("x", |s: &String| vec![s.clone()])),
        )
        .unwrap_err();
    assert_eq!(
        err,
        SchemaError::DuplicateIndex {
            table: "t".into(),
            index: "x".into()
        }
    );

    let err = b
        .table(
            TableSchema::new("t", |s: &String| s.clone())
                .index(IndexSchema::single("id", |s: &String| Some(s.clone()))),
        )
        .unwrap_err();
    assert!(
        matches!(err, SchemaError::DuplicateIndex { .. }),
        "`id` is reserved"
    );

    let err = b
        .table(
            TableSchema::new("t", |s: &String| s.clone())
                .index(IndexSchema::single("", |s: &String| Some(s.clone()))),
        )
        .unwrap_err();
    assert!(matches!(
        err,
        SchemaError::InvalidName { index: Some(_), .. }
    ));

    let bad = IndexConfig {
        params: Bm25Params { k1: -1.0, b: 0.75 },
        ..IndexConfig::default()
    };
    let err = b
        .table(
            TableSchema::new("t", |s: &String| s.clone())
                .text_index(TextSchema::new(|s: &String, f| f.add("body", s)).config(bad)),
        )
        .unwrap_err();
    assert!(
        matches!(err, SchemaError::InvalidTextIndex { .. }),
        "{err:?}"
    );

    // After all those refusals the builder still works and holds no half-declared table.
    b.table(TableSchema::new("t", |s: &String| s.clone()))
        .expect("valid table");
    assert_eq!(
        b.build().snapshot().table_names().collect::<Vec<_>>(),
        ["t"]
    );
}

#[test]
fn duplicate_key_leaves_the_store_unchanged() {
    let store = seeded();
    let before = store.snapshot();
    let err = store
        .write(|tx| tx.insert(&TOOLS, Tool::new("read_file", "again").with_source("fs")))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "table `tools`: key `fs/read_file` already exists"
    );
    assert_unchanged(&store, &before);
}

/// A store with one table, users `(name, email)` keyed by name, whose `email` index is unique.
pub(super) fn users_store() -> (Store, Table<(String, String)>) {
    let mut b = StoreBuilder::new();
    let users = b
        .table(
            TableSchema::new("users", |u: &(String, String)| u.0.clone()).index(
                IndexSchema::single("email", |u: &(String, String)| Some(u.1.clone())).unique(),
            ),
        )
        .expect("schema");
    (b.build(), users)
}

#[test]
fn unique_violation_names_index_value_and_holder() {
    let (store, users) = users_store();
    store
        .write(|tx| tx.insert(&users, ("ana".into(), "a@x".into())))
        .expect("first");
    let before = store.version();
    let err = store
        .write(|tx| tx.insert(&users, ("bob".into(), "a@x".into())))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "table `users`: unique index `email` already maps `a@x` to `ana`"
    );
    assert_eq!(store.version(), before);
    assert_eq!(store.snapshot().count(&users).expect("count"), 1);
    // Updating the holder itself keeps its value: no violation.
    store
        .write(|tx| tx.update(&users, ("ana".into(), "a@x".into())))
        .expect("self update");
}

#[test]
fn empty_primary_key_is_refused() {
    let mut b = StoreBuilder::new();
    let notes = b
        .table(TableSchema::new("notes", |n: &String| n.clone()))
        .expect("schema");
    let store = b.build();
    let err = store
        .write(|tx| tx.insert(&notes, String::new()))
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::EmptyKey {
            table: "notes".into()
        }
    );
    assert_eq!(store.version(), 0);
}

#[test]
fn invalid_tool_names_are_typed_errors() {
    let store = seeded();
    let before = store.snapshot();
    for (name, source, reason) in [
        ("", None, "must not be empty"),
        (
            "a/b",
            None,
            "must not contain `/`, which separates source and name",
        ),
        ("tab\there", None, "must not contain control characters"),
        (" padded", None, "must not start or end with white space"),
        (
            "ok",
            Some("x/y"),
            "must not contain `/`, which separates source and name",
        ),
    ] {
        let mut tool = Tool::new(name, "x");
        tool.source = source.map(str::to_string);
        let err = store
            .write(|tx| tx.insert(&TOOLS, tool.clone()))
            .unwrap_err();
        match err {
            StoreError::InvalidRecord {
                table,
                error: RecordError::InvalidName { reason: got, .. },
                ..
            } => {
                assert_eq!(&*table, "tools");
                assert_eq!(got, reason, "{name:?}");
            }
            other => panic!("unexpected {other:?} for {name:?}"),
        }
    }
    let long = "x".repeat(300);
    assert!(matches!(
        store.write(|tx| tx.insert(&TOOLS, Tool::new(long.clone(), "x"))),
        Err(StoreError::InvalidRecord { .. })
    ));
    assert!(matches!(
        store.write(|tx| tx.insert(&TOOLS, Tool::new("t", "x").with_tags([""]))),
        Err(StoreError::InvalidRecord { .. })
    ));
    assert!(matches!(
        store.write(|tx| tx.insert(
            &TOOLS,
            Tool::new("t", "x").with_input_schema(serde_json::json!({"type": "string"}))
        )),
        Err(StoreError::InvalidRecord { .. })
    ));
    assert_unchanged(&store, &before);
}

#[test]
fn names_providers_reject_are_stored_as_they_are() -> Result<(), StoreError> {
    let store = Store::new();
    store.write(|tx| {
        tx.insert(&TOOLS, Tool::new("getPM2.5Level", "Air quality"))?;
        tx.insert(&TOOLS, Tool::new("PDF&URLTool", "PDFs"))?;
        tx.insert(&TOOLS, Tool::new("天气", "Weather in Chinese"))
    })?;
    let snap = store.snapshot();
    assert!(snap.get(&TOOLS, "getPM2.5Level")?.is_some());
    assert!(snap.get(&TOOLS, "天气")?.is_some());
    Ok(())
}

#[test]
fn unknown_table_and_index_are_typed_errors() {
    let store = Store::new();
    assert_eq!(
        store.table::<Tool>("agents").unwrap_err(),
        StoreError::UnknownTable {
            table: "agents".into()
        }
    );
    assert!(matches!(
        store.table::<Skill>("tools").unwrap_err(),
        StoreError::TableMismatch { .. }
    ));
    let snap = store.snapshot();
    assert!(matches!(
        snap.by_index(&TOOLS, "colour", "red").err(),
        Some(StoreError::UnknownIndex { .. })
    ));
    assert!(matches!(
        snap.search(&HOOKS, "x", 1).err(),
        Some(StoreError::NoTextIndex { .. })
    ));
}

#[test]
fn a_user_table_handle_does_not_fit_another_store() {
    let mut b1 = StoreBuilder::new();
    let t1 = b1
        .table(TableSchema::new("notes", |n: &String| n.clone()))
        .expect("schema");
    let mut b2 = StoreBuilder::new();
    b2.table(TableSchema::new("notes", |n: &String| n.clone()))
        .expect("schema");
    let other = b2.build();
    assert!(matches!(
        other.snapshot().count(&t1),
        Err(StoreError::TableMismatch { .. })
    ));
    assert!(matches!(
        other.write(|tx| tx.insert(&t1, "x".to_string())),
        Err(StoreError::TableMismatch { .. })
    ));
    assert_eq!(other.version(), 0);
}

#[test]
fn skills_and_hooks_tables_have_their_indexes() -> Result<(), StoreError> {
    let store = Store::new();
    store.write(|tx| {
        tx.insert(
            &SKILLS,
            Skill::new("calendar", "Meetings")
                .with_category("productivity")
                .with_tags(["time"])
                .with_tools(["cal/list"])
                .with_dependencies(["contacts"]),
        )?;
        tx.insert(&HOOKS, Hook::new("audit", HookEvent::PostToolUse, "*"))?;
        tx.insert(&HOOKS, Hook::new("guard", HookEvent::PreToolUse, "shell/*"))
    })?;
    let snap = store.snapshot();
    assert_eq!(snap.count_by_index(&SKILLS, "category", "productivity")?, 1);
    assert_eq!(snap.count_by_index(&SKILLS, "tool", "cal/list")?, 1);
    assert_eq!(snap.count_by_index(&SKILLS, "dependency", "contacts")?, 1);
    assert_eq!(snap.count_by_index(&SKILLS, "tags", "time")?, 1);
    assert_eq!(snap.count_by_index(&HOOKS, "event", "pre-tool-use")?, 1);
    assert_eq!(
        snap.first(&HOOKS, "matcher", "shell/*")?
            .map(|h| h.id.as_str()),
        Some("guard")
    );
    assert_eq!(snap.search(&SKILLS, "meetings", 1)?.len(), 1);
    // A skill depending on itself is refused by the validator.
    let err = store
        .write(|tx| tx.insert(&SKILLS, Skill::new("loop", "").with_dependencies(["loop"])))
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidRecord { .. }));
    Ok(())
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
    assert_send_sync::<Snapshot>();
    assert_send_sync::<crate::store::WriteTxn>();
    assert_send_sync::<crate::store::Watcher>();
    assert_send_sync::<crate::store::Subscription>();
    assert_send_sync::<crate::store::ChangeSet>();
}

#[test]
fn records_round_trip_through_json() {
    let tool = Tool::new("get_weather", "Weather")
        .with_source("wx")
        .with_tags(["web"])
        .with_annotations(serde_json::json!({"readOnlyHint": true}));
    let json = serde_json::to_string(&tool).expect("serialize");
    assert_eq!(serde_json::from_str::<Tool>(&json).expect("parse"), tool);
    let err = serde_json::from_str::<Tool>(r#"{"name": "a", "colour": "red"}"#).unwrap_err();
    assert!(err.to_string().contains("unknown field `colour`"));
    let hook = Hook::new("a", HookEvent::SessionStart, "*").with_priority(3);
    let json = serde_json::to_string(&hook).expect("serialize");
    assert_eq!(serde_json::from_str::<Hook>(&json).expect("parse"), hook);
    let skill = Skill::new("s", "d").with_examples(["x"]);
    let json = serde_json::to_string(&skill).expect("serialize");
    assert_eq!(serde_json::from_str::<Skill>(&json).expect("parse"), skill);
}
