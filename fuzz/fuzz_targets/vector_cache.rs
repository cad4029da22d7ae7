//! Arbitrary bytes as a vector cache file (`embed::VectorCache`): opened, or refused with
//! `EmbedError::Cache` and left as it was; a file that opens saves and opens again.
#![no_main]

#[allow(dead_code)] // each target uses one check
#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::vector_cache(data));
