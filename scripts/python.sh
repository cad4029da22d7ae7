#!/usr/bin/env bash
# The Python package (bindings/python): builds it and tests it as a user would install it.
#   1. installs, when missing, the pinned build and test tools (maturin, pytest, langgraph,
#      langgraph-bigtool, langchain-core and their dependencies: bindings/python/requirements-dev.txt)
#      into .test-deps/py-venv, and what the tests run against (scripts/test-deps.sh: the MCP
#      server mcp-server-time, the MiniLM weights);
#   2. builds the wheel with maturin, release, into .test-deps/py-wheels;
#   3. installs it alone into a fresh venv (.test-deps/py-fresh, made anew each run) and runs a
#      short selection over the bundled catalog there: the wheel needs nothing else;
#   4. adds the pinned test dependencies to that venv and runs the pytest suite
#      (bindings/python/tests), which fails, never skips, when something is missing.
# scripts/test.sh runs it after the Rust tests. Needs Python 3.11 with pip and the Rust
# toolchain; cargo's target directory is CARGO_TARGET_DIR's, or target/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

deps=.test-deps
requirements=bindings/python/requirements-dev.txt
mkdir -p "$deps"
bash scripts/test-deps.sh

tools="$deps/py-venv"
stamp="$tools/.installed-$(sha256sum "$requirements" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "python.sh: installing the pinned build and test tools into $tools" >&2
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  touch "$stamp"
fi

echo "python.sh: building the wheel (maturin, release)" >&2
rm -rf "$deps/py-wheels"
"$tools/bin/maturin" build --release --quiet -m bindings/python/Cargo.toml -o "$deps/py-wheels" >&2
wheels=("$deps"/py-wheels/capstore-*.whl)
[ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] || {
  echo "python.sh: expected one wheel in $deps/py-wheels, found: ${wheels[*]}" >&2
  exit 1
}

fresh="$deps/py-fresh"
echo "python.sh: installing ${wheels[0]} into a fresh venv, $fresh" >&2
rm -rf "$fresh"
python3 -m venv "$fresh"
"$fresh/bin/pip" install --quiet --disable-pip-version-check "${wheels[0]}" >&2
# Run from elsewhere than the source tree, so that the installed package is the one imported.
(cd /tmp && "$root/$fresh/bin/python" - <<'PY'
import capstore
store = capstore.Store.bundled()
selection = store.select("book a flight to Lisbon next Friday and put it in my calendar", provider="anthropic")
assert "travel/book_flight" in selection.names and "calendar/create_event" in selection.names, selection.names
assert all("input_schema" in d for d in selection.definitions)
conversation = store.conversation()
first = conversation.select("flights from Berlin to Lisbon on Friday").names
assert conversation.select("and the weather there?").names[: len(first)] == first  # carried list
print(f"python.sh: capstore {capstore.__version__}: {len(store)} tools, {len(selection)} selected, {selection.tokens} tokens")
PY
)

"$fresh/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
echo "python.sh: pytest bindings/python/tests" >&2
"$fresh/bin/pytest" -q -p no:cacheprovider bindings/python/tests "$@"
