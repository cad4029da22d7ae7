"""Selection through Python against the same selection in Rust, in one run.

    python bindings/python/bench/speed.py [--rounds N] [--conversations FILE]

Over the bundled catalog, default policy, lexical, OpenAI's shape, for every user message of
``bench/conversations/dev.jsonl`` (384), ``--rounds`` times (20): first the Rust side
(``cargo run --release -p capstore-python --example select_speed``: the library's calls
alone), then the same calls through the installed ``capstore`` package, each call timed with
``time.perf_counter``. Four modes, each the median call:

- ``select``: ``store.select(message)``, against ``ContextBuilder::select``;
- ``select + definitions``: ``store.select(message).definitions`` (the request's ``tools`` as
  dicts), against ``select`` and ``ToolExport::selection_json``;
- ``conversation``, ``conversation + definitions``: the same per turn of each conversation
  through ``store.conversation().select(message)``, against ``Conversation::next_turn``,
  ``select`` and ``record_selection``.

The target (issue 52): Python within 1.5x of Rust in every mode.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

import capstore

ROOT = Path(__file__).resolve().parents[3]


def rust(conversations: Path, rounds: int) -> dict[str, float]:
    run = subprocess.run(
        [
            "cargo", "run", "--quiet", "--release", "-p", "capstore-python",
            "--example", "select_speed", "--", str(conversations), str(rounds),
        ],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(run.stdout.strip().splitlines()[-1])


def python(conversations: Path, rounds: int) -> dict[str, float]:
    convs = [
        [turn["user"] for turn in json.loads(line)["turns"]]
        for line in conversations.read_text().splitlines()
        if line.strip()
    ]
    messages = [m for c in convs for m in c]
    store = capstore.Store.bundled()
    clock = time.perf_counter
    times: list[list[float]] = [[], [], [], []]
    for _ in range(rounds):
        for mode, definitions in [(0, False), (1, True)]:
            for message in messages:
                started = clock()
                selection = store.select(message)
                if definitions:
                    selection.definitions
                times[mode].append(clock() - started)
        for mode, definitions in [(2, False), (3, True)]:
            for turns in convs:
                conversation = store.conversation()
                for message in turns:
                    started = clock()
                    selection = conversation.select(message)
                    if definitions:
                        selection.definitions
                    times[mode].append(clock() - started)
    names = ["select_us", "select_definitions_us", "conversation_us", "conversation_definitions_us"]
    return {name: statistics.median(t) * 1e6 for name, t in zip(names, times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--conversations", type=Path, default=ROOT / "bench/conversations/dev.jsonl")
    args = parser.parse_args()
    in_rust = rust(args.conversations, args.rounds)
    in_python = python(args.conversations, args.rounds)
    rows = [
        ("select", "select_us"),
        ("select + definitions", "select_definitions_us"),
        ("conversation", "conversation_us"),
        ("conversation + definitions", "conversation_definitions_us"),
    ]
    print(f"{in_rust['messages']} messages x {args.rounds} rounds, median call\n")
    print("| mode | Rust | Python | ratio |")
    print("|---|---|---|---|")
    worst = 0.0
    for label, key in rows:
        ratio = in_python[key] / in_rust[key]
        worst = max(worst, ratio)
        print(f"| {label} | {in_rust[key]:.1f} µs | {in_python[key]:.1f} µs | {ratio:.2f}x |")
    print(f"\nworst ratio {worst:.2f}x: {'within' if worst <= 1.5 else 'NOT within'} 1.5x")


if __name__ == "__main__":
    main()
