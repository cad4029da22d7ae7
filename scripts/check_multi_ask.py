#!/usr/bin/env python3
"""Checks bench/conversations/multi_ask.jsonl against the bundled catalog.

Usage: python3 scripts/check_multi_ask.py [CONVERSATIONS.jsonl] [CATALOG.json]

Stdlib only. Verifies that every line parses as a JSON object, that ids are unique, that each
conversation has a known `kind` and exactly one turn with a `user` message, a non-empty `gold`
list without repeats and a `topic`, and that every gold key names a tool of the catalog. Tool
keys are formed as the catalog defines them: `SOURCE/NAME` when the tool has a `source`, else
`NAME`, over the tools bundled in skills and the top-level standalone tools. Prints counts by
kind; exits non-zero on any problem.
"""
import collections
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = {"one_ask", "two_asks", "three_asks"}


def tool_key(tool):
    name, source = tool["name"], tool.get("source")
    return f"{source}/{name}" if source else name


def catalog_keys(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    keys = set()
    for skill in doc.get("skills", []):
        for tool in skill.get("tools", []):
            keys.add(tool_key(tool))
    for tool in doc.get("tools", []):
        keys.add(tool_key(tool))
    return keys


def main():
    conv = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench/conversations/multi_ask.jsonl")
    cat = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "catalog/default.json")
    keys = catalog_keys(cat)
    errors = []
    ids = set()
    kinds = collections.Counter()
    gold_sizes = collections.defaultdict(collections.Counter)
    used = collections.Counter()
    lines = 0
    with open(conv, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                errors.append(f"line {n}: empty line")
                continue
            lines += 1
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"line {n}: does not parse: {e}")
                continue
            if not isinstance(obj, dict):
                errors.append(f"line {n}: not a JSON object")
                continue
            cid = obj.get("id")
            if not isinstance(cid, str) or not cid:
                errors.append(f"line {n}: missing id")
            elif cid in ids:
                errors.append(f"line {n}: duplicate id {cid!r}")
            else:
                ids.add(cid)
            kind = obj.get("kind")
            if kind not in KINDS:
                errors.append(f"line {n}: kind {kind!r} not one of {sorted(KINDS)}")
            kinds[kind] += 1
            turns = obj.get("turns")
            if not isinstance(turns, list) or len(turns) != 1:
                errors.append(f"line {n}: must have exactly one turn")
                continue
            turn = turns[0]
            if not isinstance(turn, dict):
                errors.append(f"line {n}: turn is not an object")
                continue
            if not isinstance(turn.get("user"), str) or not turn["user"].strip():
                errors.append(f"line {n}: turn has no user message")
            if not isinstance(turn.get("topic"), str) or not turn["topic"]:
                errors.append(f"line {n}: turn has no topic")
            gold = turn.get("gold")
            if not isinstance(gold, list) or not gold:
                errors.append(f"line {n}: gold must be a non-empty list")
                continue
            if len(set(gold)) != len(gold):
                errors.append(f"line {n}: gold repeats a key")
            for key in gold:
                if key not in keys:
                    errors.append(f"line {n}: gold key {key!r} is not a catalog tool")
                used[key] += 1
            gold_sizes[kind][len(gold)] += 1
    print(f"{conv}: {lines} lines, {len(ids)} unique ids; catalog {cat}: {len(keys)} tool keys")
    for kind in sorted(kinds, key=str):
        sizes = ", ".join(f"{k} tools: {v}" for k, v in sorted(gold_sizes[kind].items()))
        print(f"  {kind}: {kinds[kind]}  (gold sizes: {sizes})")
    sources = {k.split("/")[0] for k in used}
    print(f"  distinct gold tools: {len(used)}, sources: {len(sources)}")
    if errors:
        for e in errors:
            print("ERROR", e, file=sys.stderr)
        print(f"FAILED: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
