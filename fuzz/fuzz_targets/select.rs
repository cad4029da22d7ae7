//! Arbitrary messages through `ContextBuilder::select` on a small store: no panic, no error,
//! finite scores, at most `max_tools` tools besides pinned ones.
#![no_main]

#[allow(dead_code)] // each target uses one check
#[path = "../checks.rs"]
mod checks;

use std::sync::OnceLock;

use capstore::Store;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    static STORE: OnceLock<Store> = OnceLock::new();
    checks::select(STORE.get_or_init(checks::select_store), data);
});
