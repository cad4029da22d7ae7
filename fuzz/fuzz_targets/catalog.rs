//! Arbitrary bytes as a catalog file: parse and check, load into an empty store, export, load
//! the export into a second empty store. No panic; a refused load leaves the store as it was;
//! a loaded catalog round-trips (same tools and skills tables, and the same export again).
#![no_main]

#[allow(dead_code)] // each target uses one check
#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::catalog(data));
