"""What the gateway's client scripts share: one line per check, a closing count, and the text of
a tool result. A script (run as `python tests/gateway/NAME.py`) imports it from its own folder."""

import sys

RESULTS = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok    " if condition else "FAIL  ") + name + ("" if condition else f": {detail}"), flush=True)


def text(result):
    return "\n".join(block.text for block in result.content if getattr(block, "text", None))


def finish(label):
    """Prints `LABEL: N passed, M failed` and exits 1 if any check failed."""
    print(f"{label}: {RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)
