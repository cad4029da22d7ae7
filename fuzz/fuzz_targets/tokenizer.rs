//! Arbitrary text through every tokenizer configuration: no panic, every token non-empty,
//! lowercase and free of white space.
#![no_main]

#[allow(dead_code)] // each target uses one check
#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::tokenizer(data));
