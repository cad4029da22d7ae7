#!/usr/bin/env bash
# Installs what the admin page's browser test (tests/gateway_page.rs) drives, when missing:
# Debian's Chromium and its driver (apt: /usr/bin/chromium, /usr/bin/chromedriver), and
# playwright-core, pinned, from the npm registry into .test-deps/browser/ (only the library:
# it downloads no browser of its own; the test points it at /usr/bin/chromium).
# Needs root for apt-get (CI runs as root) and node 20 with npm. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PLAYWRIGHT="playwright-core@1.65.1"

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "chromium: installing Debian's chromium and chromium-driver" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium chromium-driver >&2
fi

deps=.test-deps/browser
stamp="$deps/.installed-$(echo "$PLAYWRIGHT" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "chromium: installing $PLAYWRIGHT" >&2
  rm -rf "$deps" && mkdir -p "$deps"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$deps" --no-audit --no-fund \
    --loglevel=error "$PLAYWRIGHT" >&2
  touch "$stamp"
fi
