//! Arbitrary bytes as an MCP `tools/list` result: parse, import under server "s", import the
//! same list again, remove the server. No panic; a refused import leaves the store as it was;
//! a re-import changes nothing and commits nothing; removing the server leaves no tool.
#![no_main]

#[allow(dead_code)] // each target uses one check
#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::mcp_list(data));
