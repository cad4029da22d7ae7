//! The catalog that ships in `catalog/default.json`: structural facts only (its size is the
//! catalog's business, not these tests').

use std::collections::BTreeSet;

use capstore::catalog::Catalog;
use capstore::context::{ContextBuilder, Turn};
use capstore::skills::dependency_closure;
use capstore::{SKILLS, Store, TOOLS};

fn bundled() -> Catalog {
    Catalog::bundled().unwrap_or_else(|e| panic!("the bundled catalog is invalid: {e}"))
}

#[test]
fn the_bundled_file_is_what_bundled_parses() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/catalog/default.json");
    assert_eq!(Catalog::from_path(path).expect("reads"), bundled());
}

#[test]
fn the_bundled_catalog_loads_into_an_empty_store() {
    let catalog = bundled();
    let store = Store::new();
    let report = catalog.load_into(&store).expect("loads");
    assert_eq!(report.version, 1);
    let snap = store.snapshot();
    let tool_count =
        catalog.tools.len() + catalog.skills.iter().map(|s| s.tools.len()).sum::<usize>();
    assert_eq!(snap.count(&TOOLS).expect("count"), tool_count);
    assert_eq!(snap.count(&SKILLS).expect("count"), catalog.skills.len());
    assert_eq!(report.tools.len(), tool_count);
}

#[test]
fn every_bundled_skill_has_tools_and_resolvable_dependencies() {
    let catalog = bundled();
    assert!(!catalog.skills.is_empty());
    let store = Store::new();
    catalog.load_into(&store).expect("loads");
    let snap = store.snapshot();
    for skill in &catalog.skills {
        assert!(
            !skill.tools.is_empty(),
            "skill {} bundles no tool",
            skill.name
        );
        assert!(
            !skill.description.is_empty(),
            "skill {} has no description",
            skill.name
        );
        let owned = snap
            .count_by_index(&TOOLS, "skill", &skill.name)
            .expect("index");
        assert_eq!(owned, skill.tools.len(), "tools owned by {}", skill.name);
    }
    let names: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
    let closure = dependency_closure(&snap, &names).expect("dependencies resolve");
    let closure: BTreeSet<&str> = closure.names().collect();
    assert_eq!(closure, names.iter().copied().collect());
}

#[test]
fn bundled_pinned_tools_exist_and_are_always_selected() {
    let catalog = bundled();
    assert!(!catalog.pinned.is_empty());
    let store = Store::new();
    catalog.load_into(&store).expect("loads");
    let snap = store.snapshot();
    for pinned in &catalog.pinned {
        assert!(
            snap.contains(&TOOLS, pinned).expect("read"),
            "pinned {pinned}"
        );
    }
    let selection = ContextBuilder::with_policy(catalog.policy())
        .expect("valid policy")
        .select(&snap, &Turn::new("zzqx unrelated gibberish"))
        .expect("selects");
    let selected: BTreeSet<&str> = selection.keys().collect();
    for pinned in &catalog.pinned {
        assert!(
            selected.contains(pinned.as_str()),
            "pinned {pinned} not selected"
        );
    }
}

#[test]
fn the_bundled_catalog_round_trips_through_a_store() {
    let catalog = bundled();
    let first = Store::new();
    catalog.load_into(&first).expect("loads");
    let export = Catalog::from_snapshot(&first.snapshot(), &catalog.pinned).expect("exports");
    let second = Store::new();
    export.load_into(&second).expect("export loads");
    let (a, b) = (first.snapshot(), second.snapshot());
    let tools = |s: &capstore::Snapshot| {
        s.iter(&TOOLS)
            .expect("tools")
            .records()
            .cloned()
            .collect::<Vec<_>>()
    };
    let skills = |s: &capstore::Snapshot| {
        s.iter(&SKILLS)
            .expect("skills")
            .records()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(tools(&b), tools(&a));
    assert_eq!(skills(&b), skills(&a));
    assert_eq!(
        Catalog::from_snapshot(&b, &catalog.pinned).expect("exports"),
        export
    );
}

/// The README states the bundled catalog's size; it must not drift from the file.
#[test]
fn the_readme_states_the_bundled_catalogs_size() {
    let catalog = capstore::catalog::Catalog::bundled().expect("bundled catalog parses");
    let tools = catalog.tools.len() + catalog.skills.iter().map(|s| s.tools.len()).sum::<usize>();
    let readme = include_str!("../README.md");
    let claim = format!("({} skills, {} tools", catalog.skills.len(), tools);
    assert!(readme.contains(&claim), "README should say {claim:?}");
}
