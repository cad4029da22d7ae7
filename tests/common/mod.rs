//! Code shared by several test files (each includes it with `mod common;`).

// Each test file uses part of it.
#![allow(dead_code)]

pub mod bm25_reference;
pub mod tables;
