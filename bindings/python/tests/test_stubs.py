"""The type stubs (capstore/_native.pyi) say what the native module has, with its docstrings."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import capstore
from capstore import _native

STUB = Path(_native.__file__).with_name("_native.pyi")


def words(doc: str | None) -> str:
    """A docstring compared by its words: reST's ``x`` and Rust's `x` alike."""
    return re.sub(r"\s+", " ", (doc or "").replace("``", "`")).strip()


def stub_tree() -> ast.Module:
    assert STUB.is_file(), f"no stubs beside the native module: {STUB}"
    assert STUB.with_name("py.typed").is_file()
    return ast.parse(STUB.read_text())


def public(obj: object) -> set[str]:
    return {n for n in vars(obj) if not n.startswith("_") or n in {"__call__", "__init__"}}


def stub_entries() -> list[tuple[str, str | None, ast.AST]]:
    """(class or "", member or None, node) for each stubbed class, function and member."""
    entries: list[tuple[str, str | None, ast.AST]] = []
    for node in stub_tree().body:
        if isinstance(node, ast.ClassDef):
            entries.append((node.name, None, node))
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    entries.append((node.name, member.name, member))
        elif isinstance(node, ast.FunctionDef):
            entries.append(("", node.name, node))
    return entries


def test_every_public_name_is_stubbed() -> None:
    stubbed = {node.name for node in stub_tree().body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    native = {n for n in dir(_native) if not n.startswith("_")}
    assert native == stubbed
    assert set(capstore.__all__) - {"__version__"} == stubbed
    for node in stub_tree().body:
        if isinstance(node, ast.ClassDef) and not node.name.endswith("Error"):
            runtime = public(getattr(_native, node.name)) - {"__init__"}
            members = {m.name for m in node.body if isinstance(m, ast.FunctionDef)} - {"__init__"}
            missing = runtime - members
            assert not missing, f"{node.name}: not in the stubs: {missing}"
            extra = {m for m in members - runtime if not m.startswith("__")}
            assert not extra, f"{node.name}: stubbed but not in the module: {extra}"


@pytest.mark.parametrize(("owner", "member", "node"), stub_entries(), ids=lambda v: v if isinstance(v, str) else "")
def test_docstrings_match(owner: str, member: str | None, node: ast.AST) -> None:
    stub_doc = ast.get_docstring(node)  # type: ignore[arg-type]
    if member is not None and member.startswith("__"):
        return  # `__init__`, `__call__`, `__len__`, ...: CPython's slot wrappers carry their own
    assert stub_doc, f"{owner}.{member}: no docstring in the stubs"
    if member is None:
        runtime = getattr(_native, owner)
    elif owner:
        cls = getattr(_native, owner)
        raw = inspect.getattr_static(cls, member)
        runtime = getattr(cls, member) if isinstance(raw, staticmethod) else raw
    else:
        runtime = getattr(_native, member)
    assert words(runtime.__doc__), f"{owner}.{member}: no docstring in the module"
    assert words(stub_doc) == words(runtime.__doc__), f"{owner}.{member}"


@pytest.mark.parametrize(
    ("owner", "member"),
    [(o, m) for o, m, n in stub_entries() if m and not m.startswith("__") and isinstance(n, ast.FunctionDef) and not any(isinstance(d, ast.Name) and d.id == "property" for d in n.decorator_list)],
)
def test_signatures_match(owner: str, member: str) -> None:
    target = getattr(_native, owner) if owner else _native
    node = next(n for o, m, n in stub_entries() if o == owner and m == member)
    assert isinstance(node, ast.FunctionDef)
    runtime = inspect.signature(getattr(target, member))
    runtime = runtime.replace(parameters=[p for n, p in runtime.parameters.items() if n != "self"])
    stubbed = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs] if a.arg != "self"]
    assert list(runtime.parameters) == stubbed, f"{owner}.{member}"
    defaults = {
        a.arg: ast.literal_eval(d)
        for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults)
        if d is not None
    }
    positional = [*node.args.posonlyargs, *node.args.args]
    defaults |= {a.arg: ast.literal_eval(d) for a, d in zip(positional[len(positional) - len(node.args.defaults) :], node.args.defaults)}
    for name, parameter in runtime.parameters.items():
        if parameter.default is not inspect.Parameter.empty:
            assert defaults.get(name, "<missing>") == parameter.default, f"{owner}.{member}({name})"
        assert (parameter.kind == inspect.Parameter.KEYWORD_ONLY) == any(a.arg == name for a in node.args.kwonlyargs), f"{owner}.{member}({name})"
