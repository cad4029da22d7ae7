#!/usr/bin/env python3
"""Plain retrieval peers on a conversations file: what capstore's tool lists are compared with.

For every turn of a capstore conversations file (`{"id", "turns": [{"user", "gold", "topic"}]}`
a line) this picks the tools a plain retriever would send, from the message alone (no history,
nothing carried across turns), and prints one markdown row per selection:

  bm25s       bm25s 0.3.16's BM25 (method "lucene", its defaults k1 1.5, b 0.75, float32) over one
              document per tool; the K best tools with a positive score (ties by key). A turn
              whose message matches fewer than K documents sends fewer: bm25s itself would pad
              the top K with zero-score documents, in index order, which is noise, not retrieval.
  MiniLM      all-MiniLM-L6-v2 (the repository's numpy reference, scripts/minilm_reference.py:
              BERT tokenizer, float64 forward pass, mean pooling, L2 normalisation); the K tools
              of highest cosine with the message (ties by key).
  RRF         reciprocal-rank fusion of the two rankings, each cut to its first DEPTH tools
              (bm25s: positive scores only): score = sum of 1 / (RRF_K + rank), rank from 1;
              the K best (ties by key).
  BFCL        BFCL's own setting: every tool of the API classes the turn's `topic` names
              (`topic` = the classes joined by "+", mapped to catalog skills by CLASS_TO_SKILL;
              an unknown class is an error). Only for a catalog that has all of BFCL's skills.
  servers     MCP-Bench's setting, for conversations that name their `gold_servers`: every
              tool of the task's own servers (an oracle of servers as units).
  bounds      With --tokens, for each ceiling: the turn's needed tools alone, cheapest first,
              while they fit (what no selection passes at that ceiling); and, for conversations
              that name their `gold_servers`, those servers known: each whole while it fits, then
              the tools of those that did not, in MiniLM's order (what servers as units reach
              when the servers are found without a miss).

With --tokens C1,C2,... each retriever (bm25s, MiniLM, RRF) is also given each token ceiling
instead of a count: it sends its ranked tools in order, each while it fits in the ceiling (a
tool that does not fit is skipped, as capstore's token budget skips it), so its rows stand
beside capstore's at the same tokens a turn.

Texts
- bm25s document of a tool, exactly: "\\n".join([words(name), description] +
  [words(param) + " " + param_description for each top-level property of input_schema, in
  file order]) where words() cuts an identifier into words at "_" (any non-alphanumeric) and
  camel case ("pressBrakePedal" -> "press Brake Pedal", "get_user_id" -> "get user id"), and a
  property without a description contributes its words alone. Tokenised, as the query is, by
  bm25s's default tokenizer: lower case, regex (?u)\\b\\w\\w+\\b (so one-character words are
  dropped, and "final_report" in a message stays one token, "_" being a word character),
  bm25s's English stop words, no stemming.
- MiniLM tool text: by default the bm25s document above, exactly (the longest is 177 word
  pieces, under the reference's 256); with --minilm-text name-description, words(name) + ": " +
  description instead (capstore's own embedding_text). The query is the message.

Metrics (as `capstore eval --conversations`): per turn with gold, recall = share of its gold
tools sent, complete = all of them sent; both averaged over the turns with gold, in percent.
Tools a turn and tokens a turn are averaged over all turns. Tokens are capstore's estimate per
tool: ceil((len(name) + len(description) + len(schema_json) + 40) / 4), UTF-8 bytes, schema_json
the compact JSON of input_schema ({"type":"object","properties":{}} if it has none).

Pins (scripts/requirements-peers.txt): bm25s==0.3.16, numpy==2.4.6; the model is
scripts/minilm.sh's pinned all-MiniLM-L6-v2. Embeddings are cached in
.test-deps/peers-cache/minilm.npz, keyed by SHA-256 of the model's weights and the text, so a
second run skips the (slow, float64, one text at a time) forward passes. Deterministic.

Run (from anywhere; makes .test-deps/peers-venv when missing):
    bash scripts/peers_conversations.sh [--catalog FILE] [--conversations FILE] [--k 15]
        [--depth 40] [--rrf-k 60] [--tokens 2000,4000] [--json OUT]
        [--minilm-text document|name-description] [--model DIR]
Defaults: ../shared/data/bfcl_multi_turn/{catalog.json,conversations.jsonl}, the model
directory scripts/minilm.sh prints.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time

import bm25s
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import minilm_reference  # noqa: E402  (the repository's numpy all-MiniLM-L6-v2)

# BFCL's API classes (a conversation's `involved_classes`, its turns' `topic`) -> catalog skill,
# as ../shared/data/bfcl_multi_turn/convert.py names the skills. The car's class is
# "VehicleControlAPI" in the data (convert.py's table says "VehicleControl", a key it never
# looks up in the conversations).
CLASS_TO_SKILL = {
    "GorillaFileSystem": "filesystem",
    "MathAPI": "math",
    "MessageAPI": "message",
    "TwitterAPI": "twitter",
    "TicketAPI": "ticket",
    "TradingBot": "trading",
    "TravelAPI": "travel",
    "VehicleControlAPI": "vehicle",
}
EMPTY_SCHEMA = {"type": "object", "properties": {}}
WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
CACHE = os.path.join(ROOT, ".test-deps", "peers-cache", "minilm.npz")


def words(identifier: str) -> str:
    """An identifier cut into words at non-alphanumerics, camel case and letter/digit changes."""
    return " ".join(w for part in re.split(r"[^A-Za-z0-9]+", identifier) for w in WORD_RE.findall(part))


def schema_of(tool: dict) -> dict:
    schema = tool.get("input_schema", tool.get("inputSchema"))
    return EMPTY_SCHEMA if schema is None else schema


def estimate_tokens(tool: dict) -> int:
    """capstore::context::estimate_tokens: (name + description + compact schema + 40) / 4, up."""
    schema = json.dumps(schema_of(tool), separators=(",", ":"), ensure_ascii=False)
    size = sum(len(s.encode("utf-8")) for s in (tool["name"], tool.get("description") or "", schema))
    return math.ceil((size + 40) / 4)


def bm25_document(tool: dict) -> str:
    lines = [words(tool["name"]), tool.get("description") or ""]
    props = schema_of(tool).get("properties") or {}
    for pname, pschema in props.items():
        desc = pschema.get("description") if isinstance(pschema, dict) else None
        lines.append(words(pname) + (" " + desc if isinstance(desc, str) else ""))
    return "\n".join(lines)


def embedding_text(tool: dict) -> str:
    return words(tool["name"]) + ": " + (tool.get("description") or "")


def bm25_tokens(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def ranked(keys: list[str], scores, positive_only: bool) -> list[str]:
    order = sorted(range(len(keys)), key=lambda i: (-float(scores[i]), keys[i]))
    return [keys[i] for i in order if not positive_only or scores[i] > 0]


def rrf(rankings: list[list[str]], depth: int, k: float) -> list[str]:
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking[:depth], start=1):
            score[key] = score.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda key: (-score[key], key))


class Embedder:
    """minilm_reference's embed(), one text at a time, with an on-disk cache by text hash."""

    def __init__(self, model: str):
        self.model = model
        with open(os.path.join(model, "model.safetensors"), "rb") as f:
            self.fingerprint = hashlib.sha256(f.read()).hexdigest()
        self.weights = self.vocab = None
        self.cache: dict[str, np.ndarray] = {}
        if os.path.exists(CACHE):
            with np.load(CACHE) as data:
                self.cache = dict(zip(data["keys"].tolist(), data["vectors"]))
        self.computed = 0

    def key(self, text: str) -> str:
        return hashlib.sha256((self.fingerprint + "\0" + text).encode("utf-8")).hexdigest()

    def embed_all(self, texts: list[str]) -> np.ndarray:
        missing = sorted({t for t in texts if self.key(t) not in self.cache})
        if missing:
            if self.weights is None:
                with open(os.path.join(self.model, "vocab.txt"), encoding="utf-8") as f:
                    self.vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
                self.weights = minilm_reference.load_weights(os.path.join(self.model, "model.safetensors"))
            start = time.monotonic()
            for n, text in enumerate(missing, start=1):
                ids = minilm_reference.tokenize(text, self.vocab)
                self.cache[self.key(text)] = minilm_reference.embed(ids, self.weights)
                if n % 25 == 0 or n == len(missing):
                    print(f"  MiniLM: {n}/{len(missing)} texts embedded, {time.monotonic() - start:.0f} s",
                          file=sys.stderr, flush=True)
            self.computed += len(missing)
            self.save()
        return np.array([self.cache[self.key(t)] for t in texts])

    def save(self):
        os.makedirs(os.path.dirname(CACHE), exist_ok=True)
        keys = sorted(self.cache)
        tmp = CACHE + ".tmp.npz"
        np.savez(tmp, keys=np.array(keys), vectors=np.array([self.cache[k] for k in keys]))
        os.replace(tmp, CACHE)


def default_model() -> str:
    done = subprocess.run(["bash", os.path.join(HERE, "minilm.sh")], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"scripts/minilm.sh failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def main() -> int:
    data = os.path.join(ROOT, "..", "shared", "data", "bfcl_multi_turn")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog", default=os.path.join(data, "catalog.json"))
    ap.add_argument("--conversations", default=os.path.join(data, "conversations.jsonl"))
    ap.add_argument("--k", type=int, default=15, help="tools a turn (default 15)")
    ap.add_argument("--depth", type=int, default=40, help="each ranking's depth in RRF (default 40)")
    ap.add_argument("--rrf-k", type=float, default=60, help="RRF's constant (default 60)")
    ap.add_argument("--tokens", default="",
                    help="token ceilings a turn, comma-separated: each retriever also sends its ranked tools "
                         "while they fit in each (e.g. 2000,4000,8000)")
    ap.add_argument("--json", metavar="OUT", help="also write the figures as JSON to OUT")
    ap.add_argument("--minilm-text", choices=["document", "name-description"], default="document",
                    help="the text MiniLM embeds per tool (default: the bm25s document)")
    ap.add_argument("--model", help="all-MiniLM-L6-v2 directory (default: what scripts/minilm.sh prints)")
    args = ap.parse_args()
    started = time.monotonic()

    with open(args.catalog, encoding="utf-8") as f:
        catalog = json.load(f)
    tools: dict[str, dict] = {}
    by_skill: dict[str, list[str]] = {}
    for skill in catalog["skills"]:
        for tool in skill["tools"]:
            key = f"{tool.get('source') or skill['name']}/{tool['name']}"
            if key in tools:
                sys.exit(f"duplicate tool {key}")
            tools[key] = tool
            by_skill.setdefault(skill["name"], []).append(key)
    keys = sorted(tools)
    tokens = {key: estimate_tokens(tools[key]) for key in keys}
    no_schema = [k for k in keys if schema_of(tools[k]) is EMPTY_SCHEMA]
    # BFCL's setting needs BFCL's skills, every one (another catalog may share a name or two).
    bfcl_skills = all(skill in by_skill for skill in CLASS_TO_SKILL.values())
    ceilings = [int(c) for c in args.tokens.split(",") if c.strip()]
    if any(c <= 0 for c in ceilings):
        sys.exit(f"--tokens wants positive numbers, got {args.tokens!r}")

    with open(args.conversations, encoding="utf-8") as f:
        conversations = [json.loads(line) for line in f if line.strip()]
    turns = [t for c in conversations for t in c["turns"]]
    # Each turn's conversation's servers (MCP-Bench), when it names them.
    servers_of = [c.get("gold_servers") for c in conversations for _ in c["turns"]]
    for names in servers_of:
        for name in names or []:
            if name not in by_skill:
                sys.exit(f"gold server {name!r} is not a skill of the catalog")
    for t in turns:
        for g in t["gold"]:
            if g not in tools:
                sys.exit(f"gold tool {g} is not in the catalog")
    messages = [t["user"] for t in turns]

    # bm25s over the tool documents (index order = sorted keys).
    retriever = bm25s.BM25(method="lucene")
    retriever.index(bm25_tokens([bm25_document(tools[k]) for k in keys]), show_progress=False)
    bm25_rankings = []
    for query in bm25_tokens(messages):
        scores = retriever.get_scores(query) if query else np.zeros(len(keys))
        bm25_rankings.append(ranked(keys, scores, positive_only=True))

    # MiniLM.
    embedder = Embedder(args.model or default_model())
    tool_text = bm25_document if args.minilm_text == "document" else embedding_text
    tool_vectors = embedder.embed_all([tool_text(tools[k]) for k in keys])
    message_vectors = embedder.embed_all(messages)
    cosines = message_vectors @ tool_vectors.T
    minilm_rankings = [ranked(keys, row, positive_only=False) for row in cosines]

    def bfcl(turn):
        out = []
        for cls in turn["topic"].split("+"):
            if cls not in CLASS_TO_SKILL:
                sys.exit(f"unknown BFCL class {cls!r} in topic {turn['topic']!r}: add it to CLASS_TO_SKILL")
            out += by_skill[CLASS_TO_SKILL[cls]]
        return out

    def within(ranking, ceiling):
        """The ranking's tools in order, each while it fits in `ceiling` tokens."""
        out, used = [], 0
        for key in ranking:
            if used + tokens[key] <= ceiling:
                out.append(key)
                used += tokens[key]
        return out

    rrf_rankings = [rrf([b, m], args.depth, args.rrf_k) for b, m in zip(bm25_rankings, minilm_rankings)]
    retrievers = {
        "bm25s": bm25_rankings,
        f"MiniLM ({args.minilm_text})": minilm_rankings,
        f"RRF of the two (k {args.rrf_k:g}, depth {args.depth})": rrf_rankings,
    }
    selections = {}
    for name, rankings in retrievers.items():
        selections[f"{name}, message alone, top {args.k}"] = [r[: args.k] for r in rankings]
    for ceiling in ceilings:
        for name, rankings in retrievers.items():
            selections[f"{name}, message alone, within {ceiling:,} tokens"] = [within(r, ceiling) for r in rankings]
    if bfcl_skills:
        selections["BFCL's own setting: every tool of the conversation's API classes"] = [bfcl(t) for t in turns]
    if all(servers_of):
        selections["every tool of the task's own servers"] = [
            [k for name in names for k in by_skill[name]] for names in servers_of]
    for ceiling in ceilings:
        # What no selection can pass at this ceiling: the needed tools alone, cheapest first.
        selections[f"bound: the needed tools alone, cheapest first, within {ceiling:,} tokens"] = [
            within(sorted(t["gold"], key=lambda k: (tokens[k], k)), ceiling) for t in turns]
        if all(servers_of):
            # The servers known (an oracle of servers as units): the task's own servers, whole
            # while they fit, then the tools of those that did not, in MiniLM's order.
            def servers_known(names, ranking, ceiling=ceiling):
                out, used = [], 0
                for name in names:
                    cost = sum(tokens[k] for k in by_skill[name])
                    if used + cost <= ceiling:
                        out += by_skill[name]
                        used += cost
                own, sent = {k for name in names for k in by_skill[name]}, set(out)
                for key in ranking:
                    if key in own and key not in sent and used + tokens[key] <= ceiling:
                        out.append(key)
                        sent.add(key)
                        used += tokens[key]
                return out
            selections[f"bound: the task's own servers known, whole while they fit, then their tools "
                       f"in MiniLM's order, within {ceiling:,} tokens"] = [
                servers_known(names, r) for names, r in zip(servers_of, minilm_rankings)]

    rows = []
    for name, sent_lists in selections.items():
        recalls, complete = [], []
        for turn, sent in zip(turns, sent_lists):
            gold = set(turn["gold"])
            if gold:
                hit = len(gold & set(sent))
                recalls.append(hit / len(gold))
                complete.append(hit == len(gold))
        rows.append({
            "selection": name,
            "recall": 100 * sum(recalls) / len(recalls),
            "complete": 100 * sum(complete) / len(complete),
            "tools_per_turn": sum(len(s) for s in sent_lists) / len(sent_lists),
            "tokens_per_turn": sum(tokens[k] for s in sent_lists for k in s) / len(sent_lists),
        })

    gold_turns = sum(1 for t in turns if t["gold"])
    print(f"{len(conversations)} conversations, {len(turns)} turns, {gold_turns} with gold; "
          f"catalog {len(keys)} tools, {sum(tokens.values())} tokens in all")
    print()
    print("| selection | recall | every needed tool sent | tools/turn | tokens/turn |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['selection']} | {r['recall']:.1f}% | {r['complete']:.1f}% | "
              f"{r['tools_per_turn']:.1f} | {r['tokens_per_turn']:,.0f} |")
    short = sum(1 for r in bm25_rankings if len(r) < args.k)
    print()
    print(f"bm25s: {short} of {len(turns)} turns matched fewer than {args.k} tools; "
          f"tools without an input_schema: {len(no_schema)}; "
          f"MiniLM texts embedded this run: {embedder.computed}; {time.monotonic() - started:.0f} s")

    if args.json:
        out = {
            "catalog": os.path.relpath(args.catalog, ROOT), "conversations": os.path.relpath(args.conversations, ROOT),
            "k": args.k, "tokens": ceilings, "depth": args.depth, "rrf_k": args.rrf_k, "minilm_text": args.minilm_text,
            "conversations_count": len(conversations), "turns": len(turns), "turns_with_gold": gold_turns,
            "rows": [{**r, "recall": round(r["recall"], 2), "complete": round(r["complete"], 2),
                      "tools_per_turn": round(r["tools_per_turn"], 2),
                      "tokens_per_turn": round(r["tokens_per_turn"], 1)} for r in rows],
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
