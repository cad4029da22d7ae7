//! Arbitrary bytes as a tool's JSON: parse, validate, insert. No panic; a tool that validates
//! is stored and found; one that does not is refused and the store is unchanged.
#![no_main]

#[allow(dead_code)] // each target uses one check
#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::tool_json(data));
