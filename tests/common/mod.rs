//! Code shared by several test files (each includes it with `mod common;`).

// Each test file uses part of it.
#![allow(dead_code)]

pub mod bm25_reference;
// A scripted rig completion model (tests/rig_adapter.rs, examples/rig_agent.rs).
#[cfg(feature = "rig")]
pub mod rig_model;
pub mod tables;
