#!/usr/bin/env python3
"""Generate tests/fixtures/bm25s_sealtools.json: Python bm25s reference scores for the cross-check
test tests/bm25_crosscheck.rs.

Regenerate (from the repository root, with the shared data checked out at ../shared):

    python3 -m venv /tmp/fixture-venv
    /tmp/fixture-venv/bin/pip install -r scripts/requirements-fixture.txt
    /tmp/fixture-venv/bin/python scripts/gen_bm25s_fixture.py
    cargo test --test bm25_crosscheck

Options: --data DIR (default ../shared/data/sealtools), --out FILE (default
tests/fixtures/bm25s_sealtools.json), --stride S (keep every S-th query of queries.jsonl, default 6).
The output is deterministic: running the script twice gives the same bytes.

What it does
- Tokens: the *plain* tokenizer, defined identically in tests/bm25_crosscheck.rs: ASCII-lower-case
  the text, then take maximal runs of [a-z0-9]; every other character (punctuation, spaces,
  non-ASCII) separates tokens. Lower-casing is ASCII-only on purpose: Python's str.lower() and
  Rust's to_lowercase() agree on this data, but ASCII-only leaves no room for Unicode-table
  differences between the two languages (e.g. the Kelvin sign lower-cases to an ASCII 'k').
- Document per tool: name, description, then for each entry of parameters.properties its name and
  its description (in the file's key order; order does not matter for BM25's bag of words).
- Index: bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64") indexed on the pre-tokenised
  corpus (a list of lists of str; bm25s then builds its own vocabulary and skips its tokenizer).
  float64 makes the reference exact to ~1e-12; the script also checks that bm25s's default float32
  scores agree with it to 1e-5 relative, so the fixture stands for bm25s as shipped too.
- Queries: bm25s does NOT deduplicate query tokens: retrieve() maps each token to its id (dropping
  only out-of-vocabulary tokens) and sums the precomputed per-(term, doc) scores once per token
  occurrence, so a token that appears twice in the query counts twice. The fixture stores the
  tokens with their repeats, in query order, and capstore must sum over occurrences too.
- Scale: bm25s "lucene" uses idf = ln(1 + (N - n + 0.5)/(n + 0.5)) and the term-frequency part
  tf / (tf + k1*(1 - b + b*dl/avgdl)), i.e. Okapi BM25 without the constant factor (k1 + 1). The
  script verifies this: it rescores every fixture hit with a plain Okapi BM25 written out below
  (with the (k1 + 1) factor) and asserts plain == bm25s * (k1 + 1) to 1e-9 relative. The fixture
  stores bm25s's own scores; the Rust test multiplies them by (k1 + 1).
- Per query it keeps bm25s's top-10 (tool id, score), only hits with a positive score (bm25s fills
  up the top-k with zero-score documents; capstore returns only documents that match a term), and,
  in "cut_ties", the ids of any documents ranked below 10th whose score ties the 10th score within
  1e-4 relative: those could legitimately take the 10th place, and the test accepts them there.
- Corpus facts (documents, total tokens, vocabulary size) let the Rust test detect a tokenizer or
  document-text mismatch before it compares any score.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import Counter

import bm25s
import numpy as np

K1 = 1.2
B = 0.75
TOP_K = 10
TIE_REL = 1e-4

TOKEN_RE = re.compile(r"[a-z0-9]+")


def ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def tokenize(text: str) -> list[str]:
    """Plain tokenizer: ASCII lower-case, then maximal runs of [a-z0-9]."""
    return TOKEN_RE.findall(ascii_lower(text))


def tool_text_tokens(tool: dict) -> list[str]:
    tokens = tokenize(tool["name"]) + tokenize(tool["description"] or "")
    params = tool.get("parameters") or {}
    props = params.get("properties") or {}
    for pname, pschema in props.items():
        tokens += tokenize(pname)
        if isinstance(pschema, dict) and isinstance(pschema.get("description"), str):
            tokens += tokenize(pschema["description"])
    return tokens


def read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class PlainOkapi:
    """Textbook Okapi BM25 with the (k1 + 1) factor and Lucene's idf, summed over query tokens."""

    def __init__(self, corpus: list[list[str]]):
        self.counts = [Counter(doc) for doc in corpus]
        self.df: Counter = Counter()
        for c in self.counts:
            self.df.update(c.keys())
        self.lengths = [len(doc) for doc in corpus]
        self.total_tokens = sum(self.lengths)
        self.avgdl = self.total_tokens / len(corpus)

    def score(self, query: list[str], doc: int) -> float:
        n_docs = len(self.counts)
        norm = K1 * (1.0 - B + B * self.lengths[doc] / self.avgdl)
        score = 0.0
        for term in query:
            tf = self.counts[doc].get(term, 0)
            if tf == 0:
                continue
            n = self.df[term]
            idf = math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5))
            score += idf * tf * (K1 + 1.0) / (tf + norm)
        return score


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(root, "..", "shared", "data", "sealtools"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "fixtures", "bm25s_sealtools.json"))
    ap.add_argument("--stride", type=int, default=6)
    args = ap.parse_args()

    tools = read_jsonl(os.path.join(args.data, "tools.jsonl"))
    queries = read_jsonl(os.path.join(args.data, "queries.jsonl"))
    ids = [t["id"] for t in tools]
    assert len(set(ids)) == len(ids), "tool ids must be unique"
    corpus = [tool_text_tokens(t) for t in tools]

    row_of = {tool_id: row for row, tool_id in enumerate(ids)}
    okapi = PlainOkapi(corpus)

    retriever = bm25s.BM25(method="lucene", k1=K1, b=B, dtype="float64")
    retriever.index(corpus, show_progress=False)
    retriever32 = bm25s.BM25(method="lucene", k1=K1, b=B)  # float32, bm25s's default dtype
    retriever32.index(corpus, show_progress=False)
    # bm25s adds an empty token "" (document frequency 0, idf 0) to its vocabulary.
    bm25s_vocab = set(retriever.vocab_dict) - {""}
    assert bm25s_vocab == set(okapi.df), (len(bm25s_vocab), len(okapi.df))

    selected = queries[:: args.stride]
    out_queries = []
    checked_hits = 0
    for q in selected:
        qtokens = tokenize(q["query"])
        if not any(t in retriever.vocab_dict for t in qtokens):
            continue  # nothing to rank; bm25s would raise
        scores = retriever.get_scores(qtokens)
        scores32 = retriever32.get_scores(qtokens)
        docs, top_scores = retriever.retrieve([qtokens], k=TOP_K, show_progress=False)
        top = []
        for d, s in zip(docs[0].tolist(), top_scores[0].tolist()):
            if s <= 0.0:
                continue
            assert abs(s - scores[d]) <= 1e-12 * max(1.0, s)
            # bm25s as shipped (float32) agrees with the float64 reference.
            assert abs(scores32[d] - s) <= 1e-5 * s, (q["id"], d, scores32[d], s)
            # The (k1+1) factor: a plain Okapi BM25 equals bm25s's score times (k1 + 1).
            plain = okapi.score(qtokens, d)
            assert abs(plain - s * (K1 + 1.0)) <= 1e-9 * plain, (q["id"], d, plain, s)
            checked_hits += 1
            top.append([ids[d], float(f"{s:.7g}")])
        if not top:
            continue
        cut_ties = []
        if len(top) == TOP_K:
            tenth = top_scores[0][TOP_K - 1]
            in_top = {row_of[t[0]] for t in top}
            near = np.nonzero(np.abs(scores - tenth) <= TIE_REL * tenth)[0]
            cut_ties = sorted(ids[d] for d in near.tolist() if d not in in_top)
        out_queries.append(
            {"id": q["id"], "tokens": qtokens, "top": top, "cut_ties": cut_ties}
        )

    fixture = {
        "generator": "scripts/gen_bm25s_fixture.py (see its docstring to regenerate)",
        "bm25s_version": bm25s.__version__,
        "method": "lucene",
        "k1": K1,
        "b": B,
        "dtype": "float64",
        "score_scale": "bm25s omits Okapi's constant (k1 + 1) factor: capstore = bm25s * (k1 + 1)",
        "query_tokens_deduplicated": False,
        "tokenizer": "ASCII lower-case, then maximal runs of [a-z0-9]",
        "document": "name, description, then each parameters.properties entry's name and description",
        "query_selection": f"every {args.stride}th line of queries.jsonl, starting with the first",
        "corpus": {
            "n_docs": len(corpus),
            "total_tokens": okapi.total_tokens,
            "vocab_size": len(okapi.df),
        },
        "queries": out_queries,
    }
    # One query per line: small, and readable in a diff.
    head = {k: v for k, v in fixture.items() if k != "queries"}
    lines = json.dumps(head, indent=1)[:-2] + ',\n "queries": [\n'
    lines += ",\n".join("  " + json.dumps(q, separators=(",", ":")) for q in out_queries)
    lines += "\n ]\n}\n"
    json.loads(lines)  # well-formed
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(lines)
    print(
        f"wrote {args.out}: {len(out_queries)} queries, {checked_hits} hits checked, "
        f"{os.path.getsize(args.out)} bytes; corpus {fixture['corpus']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
