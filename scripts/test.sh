#!/usr/bin/env bash
# The test command of README.md: installs what the tests run against when it is missing (real
# MCP servers, pinned: scripts/test-deps.sh), starts a throwaway PostgreSQL on loopback for the
# replication tests (scripts/postgres.sh: installs the Debian package if missing, stops and
# removes the cluster after), then runs every test; then the Python package's (scripts/python.sh:
# builds the wheel, installs it into a fresh venv, runs its pytest suite).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
# `models`: the model adapters and their tests against a local HTTP server (tests/models_http.rs).
bash scripts/postgres.sh run cargo test --release --features models "$@"
# `rig`: capstore as a rig agent's tool index (tests/rig_adapter.rs, the `capstore::rig` docs),
# and the tests that check JSON bytes, in a build where rig turns on serde_json's
# `preserve_order` (the bytes must not change with it).
rig=(cargo test --release -p capstore --features rig)
"${rig[@]}" --lib --test rig_adapter --test provider_agent --test provider_defer --test agent_tapes \
  --test mcp_import --test exec_errors "$@"
"${rig[@]}" --doc "$@"
bash scripts/python.sh
