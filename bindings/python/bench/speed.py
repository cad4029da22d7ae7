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
  through ``store.conversation(learn=False).select(message)``, against what it runs in Rust
  (``Conversation::next_turn``, ``select``, ``record_selection``, the turn's tools recorded);
- ``learning``, ``learning + definitions``: the same with learning on,
  ``store.conversation().select(message)``, against the same in Rust with each finished turn
  queued (``UsageQueue::push``) and the queue flushed when a conversation ends (untimed on both
  sides: Python flushes when the conversation is dropped).

Like for like: each Python mode against the same calls in Rust, learning on against learning
on. The targets (issues 52 and 57): Python within 1.5x of Rust in every mode, and a turn with
learning on within 1.2x of the same turn with learning off, in Python.
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
    times: list[list[float]] = [[] for _ in range(6)]
    for _ in range(rounds):
        for mode, definitions in [(0, False), (1, True)]:
            for message in messages:
                started = clock()
                selection = store.select(message)
                if definitions:
                    selection.definitions
                times[mode].append(clock() - started)
        for mode, definitions, learn in [(2, False, False), (3, True, False), (4, False, True), (5, True, True)]:
            for turns in convs:
                conversation = store.conversation(learn=learn)  # the last one dropped: flushed
                for message in turns:
                    started = clock()
                    selection = conversation.select(message)
                    if definitions:
                        selection.definitions
                    times[mode].append(clock() - started)
            del conversation
    return {name: statistics.median(t) * 1e6 for name, t in zip(KEYS, times)}


KEYS = [
    "select_us",
    "select_definitions_us",
    "conversation_us",
    "conversation_definitions_us",
    "learning_us",
    "learning_definitions_us",
]


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
        ("conversation, learning off", "conversation_us"),
        ("conversation + definitions, learning off", "conversation_definitions_us"),
        ("conversation, learning on", "learning_us"),
        ("conversation + definitions, learning on", "learning_definitions_us"),
    ]
    print(f"{in_rust['messages']} messages x {args.rounds} rounds, median call\n")
    print("| mode | Rust | Python | ratio |")
    print("|---|---|---|---|")
    worst = 0.0
    for label, key in rows:
        ratio = in_python[key] / in_rust[key]
        worst = max(worst, ratio)
        print(f"| {label} | {in_rust[key]:.1f} µs | {in_python[key]:.1f} µs | {ratio:.2f}x |")
    print(f"\nworst Python/Rust ratio {worst:.2f}x: {'within' if worst <= 1.5 else 'NOT within'} 1.5x")
    for side, figures in [("Python", in_python), ("Rust", in_rust)]:
        on_off = [figures[on] / figures[off] for on, off in [("learning_us", "conversation_us"), ("learning_definitions_us", "conversation_definitions_us")]]
        print(f"{side}: learning on / off {on_off[0]:.2f}x, with definitions {on_off[1]:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
