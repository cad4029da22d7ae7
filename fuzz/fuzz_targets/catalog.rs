//! Arbitrary bytes as a catalog file: parse and check, load into an empty store, export, load
//! the export into a second empty store. No panic; a refused load leaves the store as it was;
//! a loaded catalog round-trips (same tools and skills tables, and the same export again).
#![no_main]

use capstore::catalog::Catalog;
use capstore::{SKILLS, Skill, Snapshot, Store, TOOLS, Tool};
use libfuzzer_sys::fuzz_target;

fn tools(snap: &Snapshot) -> Vec<(String, Tool)> {
    let rows = snap.iter(&TOOLS).expect("tools table");
    rows.map(|(k, t)| (k.to_string(), t.clone())).collect()
}

fn skills(snap: &Snapshot) -> Vec<(String, Skill)> {
    let rows = snap.iter(&SKILLS).expect("skills table");
    rows.map(|(k, s)| (k.to_string(), s.clone())).collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(catalog) = Catalog::from_json_str(text) else {
        return;
    };
    let store = Store::new();
    let report = match catalog.load_into(&store) {
        Ok(report) => report,
        Err(_) => {
            let snap = store.snapshot();
            assert_eq!(snap.version(), 0, "a refused load published a version");
            assert!(tools(&snap).is_empty() && skills(&snap).is_empty());
            return;
        }
    };
    let snap = store.snapshot();
    let exported = Catalog::from_snapshot(&snap, &report.pinned).expect("export a loaded store");
    let json = exported.to_json_pretty().expect("export as JSON");
    let reparsed = Catalog::from_json_str(&json).expect("an export parses");
    let second = Store::new();
    reparsed
        .load_into(&second)
        .expect("an export loads into an empty store");
    let snap2 = second.snapshot();
    assert_eq!(
        tools(&snap),
        tools(&snap2),
        "tools differ after the round trip"
    );
    assert_eq!(
        skills(&snap),
        skills(&snap2),
        "skills differ after the round trip"
    );
    let again = Catalog::from_snapshot(&snap2, &report.pinned).expect("export again");
    assert_eq!(
        again.to_json_pretty().expect("JSON"),
        json,
        "export not stable"
    );
});
