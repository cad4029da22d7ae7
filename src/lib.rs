#![forbid(unsafe_code)]
pub mod bm25;
