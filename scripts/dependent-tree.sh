#!/usr/bin/env bash
# What a crate that adds `capstore` to its Cargo.toml with the defaults builds: a scratch crate
# depending on this checkout by path, its `cargo tree` (normal dependencies), checked to hold
# none of the heavy or protocol parts the library keeps behind features (candle, rmcp, hyper,
# tokio-postgres, reqwest, tokenizers, OpenTelemetry and prost). Prints the tree's crates; fails
# naming any found.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/capstore-dependent.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/src"
cat >"$scratch/Cargo.toml" <<TOML
[package]
name = "uses-capstore"
version = "0.1.0"
edition = "2024"

[dependencies]
capstore = { path = "$root" }
TOML
echo 'fn main() { let _ = capstore::Store::new(); }' >"$scratch/src/main.rs"
# The checkout's lock file: the same versions, resolved without the network.
cp Cargo.lock "$scratch/Cargo.lock"
tree=$(cd "$scratch" && cargo tree --offline -e normal --prefix none --format '{p}' | sed 's/ (.*//' | sort -u)
echo "a crate depending on capstore with its defaults builds $(echo "$tree" | wc -l) crates:"
echo "$tree" | tr '\n' ' '
echo
heavy=$(echo "$tree" | grep -E '^(candle-core|candle-nn|rmcp|hyper|hyper-util|tokio-postgres|reqwest|tokenizers|opentelemetry|opentelemetry_sdk|opentelemetry-otlp|prost) ' || true)
if [ -n "$heavy" ]; then
  echo "dependent-tree: the defaults build what only features should: $heavy" >&2
  exit 1
fi
echo "dependent-tree: none of candle, rmcp, hyper, tokio-postgres, reqwest, tokenizers, opentelemetry, prost"
