"""Every ```python block of the repository's README.md runs as written, in order, in one
namespace (as a reader pastes them into one session); none needs a network or an API key."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_the_readme_has_python_blocks() -> None:
    assert len(python_blocks()) >= 3


def test_readme_python_blocks_run() -> None:
    namespace: dict[str, object] = {"__name__": "__readme__"}
    out = io.StringIO()
    for number, block in enumerate(python_blocks(), start=1):
        code = compile(block, f"README.md python block {number}", "exec")
        with contextlib.redirect_stdout(out):
            exec(code, namespace)  # noqa: S102 - the README's own code
    printed = out.getvalue()
    assert "book_flight" in printed  # explain() of the first block
    assert "nothing matched" in printed  # the no-match guidance
