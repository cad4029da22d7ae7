#!/usr/bin/env bash
# The test command of README.md: installs what the tests run against when it is missing (real
# MCP servers, pinned: scripts/test-deps.sh), starts a throwaway PostgreSQL on loopback for the
# replication tests (scripts/postgres.sh: installs the Debian package if missing, stops and
# removes the cluster after), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
# `models`: the model adapters and their tests against a local HTTP server (tests/models_http.rs).
# `rig`: capstore as a rig agent's tool index (tests/rig_adapter.rs, the `capstore::rig` docs).
bash scripts/postgres.sh run cargo test --release --features models,rig "$@"
