#!/usr/bin/env python3
"""How much recall any list policy could reach on a conversation set, and at what size.

For every turn of FILE this runs `capstore eval --conversations` with nothing carried across
turns (`keep_previous` and `keep_recently_used` off) and the turn's own K best tools sent, for
K in 16, 24 and 40, lexical and (with --embedder) hybrid, and reads each turn's list from
`--turns-out`. It prints:

- the recall of each turn's own K best (what a list of K tools a turn could hold at most,
  were nothing carried);
- the ceiling of a list holding the turn's 40 best by every ranking measured (the message with
  its history, lexical and hybrid; the message alone, hybrid) plus every tool gold in an
  earlier turn of the conversation (a perfect carry), with the tools that even this misses,
  and that list's size.

Usage: scripts/recall_ceiling.py CAPSTORE_BINARY CONVERSATIONS.jsonl [--embedder DIR]
Standard library only. BENCHMARKS.md, "Conversations", has the command; BENCHMARKS-LOG.md,
"Conversations", the figures of its last run.
"""

import json
import subprocess
import sys
import tempfile

NO_CARRY = {"keep_previous": False, "keep_recently_used": False}
ALONE = {"history_turns": 0, "recent_tool_weight": 0}


def run(binary, conversations, policy, embedder):
    """Each turn's sent list, and the run's summary lines, for one policy."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        args = [binary, "eval", "--conversations", conversations,
                "--policy", json.dumps(policy), "--turns-out", out.name]
        if embedder:
            args += ["--embedder", embedder]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(args)} failed:\n{done.stderr}")
        with open(out.name) as f:
            return [json.loads(line) for line in f]


def mean_recall(turns):
    """`capstore eval`'s recall: the share of a turn's gold tools sent, averaged over the turns
    that have gold tools, in percent."""
    shares = [sum(g in sent for g in gold) / len(gold) for gold, sent in turns if gold]
    return 100 * sum(shares) / len(shares)


def main():
    args = sys.argv[1:]
    embedder = None
    if "--embedder" in args:
        i = args.index("--embedder")
        if i + 1 >= len(args):
            sys.exit(__doc__)
        embedder = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    binary, conversations = args
    with open(conversations) as f:
        convs = {c["id"]: c for c in map(json.loads, f)}

    def gold_of(turn):
        return convs[turn["conversation"]]["turns"][turn["turn"]]["gold"]

    kinds = [("lexical", None)] + ([("hybrid", embedder)] if embedder else [])
    runs = {}
    for k in (16, 24, 40):
        policy = dict(NO_CARRY, max_turn_tools=k, max_tools=k)
        for name, emb in kinds:
            turns = run(binary, conversations, policy, emb)
            runs[(name, k)] = turns
            recall = mean_recall((gold_of(t), t["sent"]) for t in turns)
            size = sum(len(t["sent"]) for t in turns) / len(turns)
            tokens = sum(t["tokens"] for t in turns) / len(turns)
            print(f"{name:8} own {k:2} best: recall {recall:.1f}% "
                  f"({size:.1f} tools, {tokens:.0f} tokens a turn)")

    lists = [runs[(name, 40)] for name, _ in kinds]
    if embedder:
        lists.append(run(binary, conversations,
                         {**NO_CARRY, **ALONE, "max_turn_tools": 40, "max_tools": 40}, embedder))
    pools = []
    sizes = []
    missed = []
    for parts in zip(*lists):
        turn = parts[0]
        conv = convs[turn["conversation"]]["turns"]
        earlier = {g for t in conv[:turn["turn"]] for g in t["gold"]}
        pool = earlier.union(*(p["sent"] for p in parts))
        sizes.append(len(pool))
        pools.append((gold_of(turn), pool))
        missed += [(conv[turn["turn"]]["user"], g) for g in gold_of(turn) if g not in pool]
    print(f"ceiling: every ranking's 40 best + every earlier gold tool: recall "
          f"{mean_recall(pools):.1f}% ({sum(sizes) / len(sizes):.1f} tools a turn); "
          f"missed by all of them:")
    for message, tool in missed:
        print(f"  {tool}: {message}")


if __name__ == "__main__":
    main()
