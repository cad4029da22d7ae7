//! The bulk load against the one-record-at-a-time writes it replaced: the same snapshot
//! contents, search results, change sets and errors.

use std::sync::Arc;

use crate::catalog::check::check;
use crate::catalog::load::{one_by_one, resolve, write};
use crate::catalog::synthetic::{Spec, write_catalog};
use crate::catalog::{Catalog, CatalogError, CatalogSkill};
use crate::skills::{SKILLS, Skill};
use crate::store::{ChangeSet, CommitInfo, Record, Snapshot, Store, Table};
use crate::tools::{TOOLS, Tool};

/// A generated catalog of `tools` tools, 25 a skill, with standalone tools, `uses`,
/// dependencies and pinned tools added, some of them naming what `preloaded` puts in a store.
fn catalog(tools: usize) -> Catalog {
    let mut json = Vec::new();
    let spec = Spec {
        tools,
        tools_per_skill: 25,
        seed: 3,
    };
    write_catalog(&spec, &mut json).expect("writing to a Vec");
    let mut catalog =
        Catalog::from_json_str(std::str::from_utf8(&json).expect("utf-8")).expect("valid");
    catalog.tools = (0..20)
        .map(|i| {
            Tool::new(
                format!("standalone_{i}"),
                format!("Standalone tool number {i}"),
            )
        })
        .collect();
    let n = catalog.skills.len();
    let first_tool = catalog.skills[n - 1].tools[0].qualified_name();
    catalog.skills[0].uses = vec!["standalone_3".into(), first_tool, "old/tool".into()];
    // Dependencies on later skills and on the store's: registration order is not file order.
    catalog.skills[0].dependencies = vec![catalog.skills[n - 1].name.clone()];
    catalog.skills[1].dependencies = vec![catalog.skills[0].name.clone(), "old-skill".into()];
    catalog.pinned = vec!["standalone_0".into()];
    catalog
}

/// A store holding a tool and a skill the catalog refers to.
fn preloaded() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert(&TOOLS, Tool::new("tool", "An old tool").with_source("old"))?;
            tx.insert(&SKILLS, Skill::new("old-skill", "An old skill"))
        })
        .expect("preload");
    store
}

/// `apply` with the writes done one record at a time.
fn apply_one_by_one(catalog: &Catalog, store: &Store) -> Result<CommitInfo, CatalogError> {
    let mut tx = store.begin();
    let checked = check(catalog)?;
    resolve(catalog, &checked, tx.view())?;
    tx.all_or_nothing(|tx| one_by_one(catalog, &checked, tx))?;
    Ok(tx.commit())
}

fn apply_bulk(catalog: &Catalog, store: &Store) -> Result<CommitInfo, CatalogError> {
    let mut tx = store.begin();
    catalog.apply(&mut tx)?;
    Ok(tx.commit())
}

fn rows<R: Record + PartialEq + std::fmt::Debug>(
    a: &Snapshot,
    b: &Snapshot,
    table: &Table<R>,
    indexes: &[&str],
) {
    let left: Vec<(&Arc<str>, &R)> = a.iter(table).expect("table").collect();
    let right: Vec<(&Arc<str>, &R)> = b.iter(table).expect("table").collect();
    assert_eq!(left, right);
    for index in indexes {
        let values: Vec<(&Arc<str>, usize)> =
            a.index_values(table, index).expect("index").collect();
        let others: Vec<(&Arc<str>, usize)> =
            b.index_values(table, index).expect("index").collect();
        assert_eq!(values, others, "index {index}");
        for (value, _) in values {
            let keys = |s: &Snapshot| -> Vec<Arc<str>> {
                s.by_index(table, index, value)
                    .expect("index")
                    .map(|(k, _)| Arc::clone(k))
                    .collect()
            };
            assert_eq!(keys(a), keys(b), "index {index} value {value}");
        }
    }
    let (ia, ib) = (
        a.text_index(table).expect("text"),
        b.text_index(table).expect("text"),
    );
    assert_eq!(ia.stats(), ib.stats());
    for query in [
        "get file",
        "list the open issues of a repository",
        "kalo mirutesa",
        "sync",
    ] {
        let hits = |s: &Snapshot| -> Vec<(Arc<str>, f32)> {
            s.search(table, query, 20)
                .expect("search")
                .into_iter()
                .map(|h| (h.key, h.score))
                .collect()
        };
        assert_eq!(hits(a), hits(b), "query {query:?}");
    }
}

/// The tools and skills tables of `a` and `b` hold the same rows, indexes and text index.
fn same_tables(a: &Snapshot, b: &Snapshot) {
    rows(a, b, &TOOLS, &["name", "source", "tags", "skill"]);
    rows(a, b, &SKILLS, &["category", "tags", "tool", "dependency"]);
}

fn same_changes(a: &ChangeSet, b: &ChangeSet) {
    assert_eq!(a.version, b.version);
    assert_eq!(a.changes.len(), b.changes.len());
    for (x, y) in a.changes.iter().zip(&b.changes) {
        assert_eq!((&x.table, &x.key, x.kind), (&y.table, &y.key, y.kind));
        assert_eq!(x.after(&TOOLS), y.after(&TOOLS));
        assert_eq!(x.after(&SKILLS), y.after(&SKILLS));
        assert!(x.before(&TOOLS).is_none() && y.before(&TOOLS).is_none());
    }
}

#[test]
fn bulk_load_writes_what_one_record_at_a_time_writes() {
    let catalog = catalog(2_000);
    let (bulk, plain) = (preloaded(), preloaded());
    let a = apply_bulk(&catalog, &bulk).expect("bulk load");
    let b = apply_one_by_one(&catalog, &plain).expect("plain load");
    assert_eq!(a.version, b.version);
    same_changes(&a.changes, &b.changes);
    let (sa, sb) = (bulk.snapshot(), plain.snapshot());
    same_tables(&sa, &sb);
    // The bulk load left the tools' text index in one segment.
    assert_eq!(sa.text_index(&TOOLS).expect("text").segment_count(), 1);
}

#[test]
fn moving_the_catalog_in_writes_what_cloning_it_in_writes() {
    let catalog = catalog(1_000);
    let (cloned, moved) = (preloaded(), preloaded());
    let a = catalog.load_into(&cloned).expect("load_into");
    let changes = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = Arc::clone(&changes);
    let subscription = moved.subscribe(move |c| seen.lock().push(c.clone()));
    let b = catalog.clone().move_into(&moved).expect("move_into");
    assert_eq!(a, b);
    drop(subscription);
    let loaded_again = apply_bulk(&catalog, &preloaded()).expect("apply");
    same_changes(&changes.lock()[0], &loaded_again.changes);
    let (sa, sb) = (cloned.snapshot(), moved.snapshot());
    same_tables(&sa, &sb);
    // A failing catalog: the same error, and the store as it was.
    let mut clash = catalog.clone();
    clash
        .tools
        .push(Tool::new("tool", "again").with_source("old"));
    let (x, y) = (preloaded(), preloaded());
    let err_a = clash.load_into(&x).expect_err("the tool exists");
    let err_b = clash.move_into(&y).expect_err("the tool exists");
    assert_eq!(err_a, err_b);
    assert_eq!(
        (y.version(), y.snapshot().count(&TOOLS).expect("tools")),
        (1, 1)
    );
}

#[test]
fn loading_a_file_writes_what_parsing_then_moving_writes() {
    let catalog = catalog(500);
    let file = std::env::temp_dir().join(format!("capstore-load-file-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_string(&catalog).expect("json")).expect("write");
    let (two_steps, one_step) = (preloaded(), preloaded());
    let changes = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = Arc::clone(&changes);
    let subscription = one_step.subscribe(move |c| seen.lock().push(c.clone()));
    let a = Catalog::from_path(&file)
        .and_then(|c| c.move_into(&two_steps))
        .expect("from_path, move_into");
    let b = Catalog::load_file(&file, &one_step).expect("load_file");
    std::fs::remove_file(&file).expect("clean up");
    drop(subscription);
    assert_eq!(a, b);
    let loaded_again = apply_bulk(&catalog, &preloaded()).expect("apply");
    same_changes(&changes.lock()[0], &loaded_again.changes);
    same_tables(&two_steps.snapshot(), &one_step.snapshot());
}

#[test]
fn a_bulk_load_then_single_writes_matches_too() {
    let catalog = catalog(300);
    let (bulk, plain) = (preloaded(), preloaded());
    apply_bulk(&catalog, &bulk).expect("bulk load");
    apply_one_by_one(&catalog, &plain).expect("plain load");
    for store in [&bulk, &plain] {
        store
            .write(|tx| {
                tx.insert(&TOOLS, Tool::new("later", "A file tool written later"))?;
                let key = catalog.skills[5].tools[3].qualified_name();
                tx.delete(&TOOLS, &key)?;
                let key = catalog.skills[6].tools[0].qualified_name();
                let mut tool = (*tx.view().get(&TOOLS, &key)?.expect("tool")).clone();
                tool.description = "Now it syncs files".into();
                tx.update(&TOOLS, tool).map(|_| ())
            })
            .expect("single writes");
    }
    rows(
        &bulk.snapshot(),
        &plain.snapshot(),
        &TOOLS,
        &["name", "source", "tags", "skill"],
    );
}

#[test]
fn a_failing_catalog_leaves_the_store_as_it_was() {
    let store = preloaded();
    let mut tx = store.begin();
    tx.insert(&TOOLS, Tool::new("kept", "written before the load"))
        .expect("insert");
    let tool_keys = |tx: &crate::store::WriteTxn| -> Vec<Arc<str>> {
        let tools = tx.view().iter(&TOOLS).expect("tools");
        tools.map(|(k, _)| Arc::clone(k)).collect()
    };
    let before = tool_keys(&tx);
    // The last tool of the catalog clashes with the store's: found before anything is written.
    let mut clash = catalog(200);
    clash
        .tools
        .push(Tool::new("tool", "again").with_source("old"));
    let err = clash.apply(&mut tx).expect_err("the tool exists");
    let plain = apply_one_by_one(&clash, &preloaded()).expect_err("the tool exists");
    assert_eq!(err.to_string(), plain.to_string());
    assert_eq!(before, tool_keys(&tx));
    assert_eq!(tx.view().count(&SKILLS).expect("skills"), 1);
    assert_eq!(tx.commit().changes.changes.len(), 1);
}

#[test]
fn a_store_error_during_the_writes_names_the_same_entry() {
    // After `check` and `resolve` the writes fail only if the store changed in between: here
    // a tool the catalog bundles is written into the transaction after the checks. Both
    // paths report the same entry and undo their writes.
    let catalog = Catalog {
        skills: vec![CatalogSkill {
            tools: vec![Tool::new("a", "first"), Tool::new("b", "second")],
            ..CatalogSkill::new("s", "a skill")
        }],
        ..Catalog::default()
    };
    let run = |bulk: bool| {
        let store = Store::new();
        let mut tx = store.begin();
        let (report, plan) = catalog.prepare(tx.view()).expect("valid");
        let checked = check(&catalog).expect("valid");
        tx.insert(&TOOLS, Tool::new("b", "in the way"))
            .expect("insert");
        let err = tx
            .all_or_nothing(|tx| {
                if bulk {
                    let tools = catalog.skills[0].tools.iter().map(|tool| Tool {
                        skills: vec!["s".into()],
                        ..tool.clone()
                    });
                    write(&catalog.skills, &plan, &report.tools, tools, tx)
                } else {
                    one_by_one(&catalog, &checked, tx)
                }
            })
            .expect_err("b exists");
        assert_eq!(tx.view().count(&TOOLS).expect("tools"), 1);
        err.to_string()
    };
    assert_eq!(run(true), run(false));
}
