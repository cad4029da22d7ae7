//! Arbitrary bytes as an MCP `tools/list` result: parse, import under server "s", import the
//! same list again, remove the server. No panic; a refused import leaves the store as it was;
//! a re-import changes nothing and commits nothing; removing the server leaves no tool.
#![no_main]

use capstore::mcp::{McpToolList, import_server, remove_server};
use capstore::{Snapshot, Store, TOOLS, Tool};
use libfuzzer_sys::fuzz_target;

fn tools(snap: &Snapshot) -> Vec<(String, Tool)> {
    let rows = snap.iter(&TOOLS).expect("tools table");
    rows.map(|(k, t)| (k.to_string(), t.clone())).collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(list) = McpToolList::from_json(text) else {
        return;
    };
    let store = Store::new();
    let first = match import_server(&store, "s", &list) {
        Ok(report) => report,
        Err(_) => {
            let snap = store.snapshot();
            assert_eq!(snap.version(), 0, "a refused import published a version");
            assert!(tools(&snap).is_empty(), "a refused import wrote tools");
            return;
        }
    };
    assert_eq!(
        first.added.len(),
        list.len(),
        "every tool of the list is added"
    );
    assert_eq!(first.version, (!list.is_empty()).then_some(1));
    let before = store.snapshot();
    let again = import_server(&store, "s", &list).expect("the same list imports again");
    assert!(again.added.is_empty() && again.removed.is_empty() && again.changed.is_empty());
    assert_eq!((again.unchanged, again.version), (list.len(), None));
    let after = store.snapshot();
    assert_eq!(
        after.version(),
        before.version(),
        "a no-op re-import committed"
    );
    assert_eq!(tools(&after), tools(&before));
    let removed = remove_server(&store, "s").expect("remove the server");
    assert_eq!(removed.removed.len(), list.len());
    assert!(
        tools(&store.snapshot()).is_empty(),
        "tools left after remove_server"
    );
});
