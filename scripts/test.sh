#!/usr/bin/env bash
# The test command of README.md: installs what the tests run against when it is missing (real
# MCP servers, pinned: scripts/test-deps.sh), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
# `models`: the model adapters and their tests against a local HTTP server (tests/models_http.rs).
cargo test --release --features models "$@"
