//! Arbitrary bytes as a tool's JSON: parse, validate, insert. No panic; a tool that validates
//! is stored and found; one that does not is refused and the store is unchanged.
#![no_main]

use capstore::{Store, TOOLS, Tool};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(tool) = serde_json::from_slice::<Tool>(data) else {
        return;
    };
    let valid = tool.validate().is_ok();
    let store = Store::new();
    let key = tool.qualified_name();
    let result = store.write(|tx| tx.insert(&TOOLS, tool.clone()));
    let snap = store.snapshot();
    match result {
        Ok(_) => {
            assert!(valid, "stored a tool that does not validate");
            assert_eq!(snap.get(&TOOLS, &key).expect("tools table"), Some(&tool));
            let text = format!("{} {}", tool.name, tool.description);
            let hits = snap.search(&TOOLS, &text, 3).expect("search");
            assert!(hits.iter().all(|h| h.score.is_finite()));
            let back: Tool = serde_json::from_value(serde_json::to_value(&tool).expect("to json"))
                .expect("a stored tool round-trips through JSON");
            assert_eq!(back, tool);
        }
        Err(_) => {
            assert!(!valid, "refused a tool that validates");
            assert_eq!(snap.version(), 0);
            assert_eq!(snap.count(&TOOLS).expect("tools table"), 0);
        }
    }
});
