#!/usr/bin/env python3
"""Validate a capstore catalog file (format capstore.catalog/v1) and print its counts.

Usage: python3 scripts/check_catalog.py [catalog/default.json]

Checks everything the loader would refuse, plus a few rules that keep the bundled catalog
loadable and useful (no empty descriptions, `uses` only naming tools that exist when the skill
is registered). Exits 0 and prints a summary when the file is valid; exits 1 and prints every
violation otherwise (2 for a file that cannot be read or parsed). Standard library only.
"""

import json
import re
import sys
from collections import Counter

FORMAT = "capstore.catalog/v1"
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
TOP_KEYS = {"format", "skills", "tools", "pinned"}
SKILL_KEYS = {"name", "description", "category", "tags", "dependencies", "examples", "tools", "uses"}
TOOL_KEYS = {"name", "description", "input_schema", "inputSchema", "tags", "source", "annotations"}
JSON_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}


class Checker:
    def __init__(self):
        self.errors = []

    def fail(self, where, message):
        self.errors.append(f"{where}: {message}")

    # --- small field checks -------------------------------------------------------------

    def name(self, where, value):
        if not isinstance(value, str) or not NAME_RE.match(value):
            self.fail(where, f"{value!r} does not match {NAME_RE.pattern}")

    def text(self, where, value, required=True):
        if value is None and not required:
            return
        if not isinstance(value, str) or not value.strip():
            self.fail(where, "must be a non-empty string")

    def labels(self, where, value):
        """Tags and examples: a list of non-blank strings without duplicates."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(where, "must be a list of strings")
            return []
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                self.fail(f"{where}[{i}]", "must be a non-empty string")
            elif len(item.encode()) > 128 and where.endswith("tags"):
                self.fail(f"{where}[{i}]", "tag longer than 128 bytes")
            elif any(ord(c) < 32 for c in item):
                self.fail(f"{where}[{i}]", "contains control characters")
        for item, n in Counter(x for x in value if isinstance(x, str)).items():
            if n > 1:
                self.fail(where, f"{item!r} is listed {n} times")
        return [x for x in value if isinstance(x, str)]

    def unknown_keys(self, where, obj, allowed):
        for key in obj:
            if key not in allowed:
                self.fail(where, f"unknown field {key!r} (allowed: {', '.join(sorted(allowed))})")

    # --- schemas --------------------------------------------------------------------------

    def schema(self, where, schema, top=False):
        """An object schema's `required` must name its `properties`; recurse into nested ones."""
        if not isinstance(schema, dict):
            self.fail(where, "must be a JSON object (a JSON Schema)")
            return
        kind = schema.get("type")
        if top and kind != "object":
            self.fail(where, f'`type` must be "object" for a tool input, not {kind!r}')
        if kind is not None and kind not in JSON_TYPES:
            self.fail(where, f"unknown JSON Schema type {kind!r}")
        if "description" in schema and not isinstance(schema["description"], str):
            self.fail(where, "`description` must be a string")
        if "enum" in schema:
            enum = schema["enum"]
            if not isinstance(enum, list) or not enum:
                self.fail(where, "`enum` must be a non-empty list")
            elif "default" in schema and schema["default"] not in enum:
                self.fail(where, f"default {schema['default']!r} is not one of the enum values")
        props = schema.get("properties", {})
        if kind == "object" or "properties" in schema:
            if not isinstance(props, dict):
                self.fail(where, "`properties` must be an object")
                props = {}
            required = schema.get("required", [])
            if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
                self.fail(where, "`required` must be a list of property names")
                required = []
            for r in required:
                if r not in props:
                    self.fail(where, f"required property {r!r} is not in `properties`")
            for r, n in Counter(required).items():
                if n > 1:
                    self.fail(where, f"required property {r!r} is listed {n} times")
            for key, sub in props.items():
                self.schema(f"{where}.properties.{key}", sub)
                if top and isinstance(sub, dict) and not str(sub.get("description", "")).strip():
                    self.fail(f"{where}.properties.{key}", "top-level parameter has no description")
        if kind == "array":
            if "items" not in schema:
                self.fail(where, "array schema has no `items`")
            elif isinstance(schema["items"], dict) and schema["items"]:
                self.schema(f"{where}.items", schema["items"])

    # --- records --------------------------------------------------------------------------

    def tool(self, where, tool):
        """Checks one tool object; returns its qualified name or None."""
        if not isinstance(tool, dict):
            self.fail(where, "tool must be a JSON object")
            return None
        if "skills" in tool:
            self.fail(where, "`skills` must not appear in a catalog tool (registration fills it)")
        self.unknown_keys(where, tool, TOOL_KEYS)
        self.name(f"{where}.name", tool.get("name"))
        if "source" in tool:
            self.name(f"{where}.source", tool["source"])
        self.text(f"{where}.description", tool.get("description"))
        self.labels(f"{where}.tags", tool.get("tags"))
        if "input_schema" in tool and "inputSchema" in tool:
            self.fail(where, "has both `input_schema` and `inputSchema`")
        schema = tool.get("input_schema", tool.get("inputSchema"))
        if schema is None:
            self.fail(where, "has no input_schema")
        else:
            self.schema(f"{where}.input_schema", schema, top=True)
        if "annotations" in tool and not isinstance(tool["annotations"], dict):
            self.fail(f"{where}.annotations", "must be a JSON object")
        name, source = tool.get("name"), tool.get("source")
        if not isinstance(name, str):
            return None
        return f"{source}/{name}" if source else name

    def skill(self, where, skill):
        if not isinstance(skill, dict):
            self.fail(where, "skill must be a JSON object")
            return
        self.unknown_keys(where, skill, SKILL_KEYS)
        self.name(f"{where}.name", skill.get("name"))
        self.text(f"{where}.description", skill.get("description"))
        self.text(f"{where}.category", skill.get("category"), required=False)
        self.labels(f"{where}.tags", skill.get("tags"))
        self.labels(f"{where}.examples", skill.get("examples"))
        for dep in self.labels(f"{where}.dependencies", skill.get("dependencies")):
            self.name(f"{where}.dependencies", dep)
        self.labels(f"{where}.uses", skill.get("uses"))


def find_cycle(deps):
    """Returns one dependency cycle as a list of names, or None."""
    state = {}  # name -> 1 visiting, 2 done

    def visit(node, path):
        state[node] = 1
        for nxt in deps.get(node, []):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt in deps and state.get(nxt) is None:
                cycle = visit(nxt, path + [nxt])
                if cycle:
                    return cycle
        state[node] = 2
        return None

    for start in deps:
        if state.get(start) is None:
            cycle = visit(start, [start])
            if cycle:
                return cycle
    return None


def closure(name, deps):
    seen, stack = set(), list(deps.get(name, []))
    while stack:
        d = stack.pop()
        if d not in seen:
            seen.add(d)
            stack.extend(deps.get(d, []))
    return seen


def depth(name, deps, memo):
    if name not in memo:
        memo[name] = 0  # guards against cycles, which are reported separately
        memo[name] = 1 + max((depth(d, deps, memo) for d in deps.get(name, []) if d in deps), default=-1)
    return memo[name]


def check(doc):
    c = Checker()
    if not isinstance(doc, dict):
        c.fail("catalog", "top level must be a JSON object")
        return c, {}
    c.unknown_keys("catalog", doc, TOP_KEYS)
    if doc.get("format") != FORMAT:
        c.fail("catalog.format", f"must be exactly {FORMAT!r}, found {doc.get('format')!r}")
    skills = doc.get("skills", [])
    standalone = doc.get("tools", [])
    pinned = doc.get("pinned", [])
    for key, value in (("skills", skills), ("tools", standalone), ("pinned", pinned)):
        if not isinstance(value, list):
            c.fail(f"catalog.{key}", "must be a list")
    if not all(isinstance(v, list) for v in (skills, standalone, pinned)):
        return c, {}

    owner = {}  # qualified tool name -> owning skill name (None for standalone)
    where_of = {}

    def add_tool(where, tool, skill_name):
        qualified = c.tool(where, tool)
        if qualified is None:
            return
        if qualified in owner:
            c.fail(where, f"qualified name {qualified!r} is already used at {where_of[qualified]}")
        else:
            owner[qualified], where_of[qualified] = skill_name, where

    for i, tool in enumerate(standalone):
        add_tool(f"tools[{i}]", tool, None)

    deps, names = {}, Counter()
    for i, skill in enumerate(skills):
        c.skill(f"skills[{i}]", skill)
        if not isinstance(skill, dict):
            continue
        name = skill.get("name")
        label = f"skills[{i}] ({name})"
        names[name] += 1
        tools = skill.get("tools", [])
        if not isinstance(tools, list):
            c.fail(f"{label}.tools", "must be a list of tool objects")
            tools = []
        for j, tool in enumerate(tools):
            add_tool(f"{label}.tools[{j}]", tool, name)
        deps[name] = [d for d in skill.get("dependencies", []) or [] if isinstance(d, str)]
        if name in deps[name]:
            c.fail(label, "depends on itself")

    for name, n in names.items():
        if n > 1:
            c.fail("catalog.skills", f"skill name {name!r} is used {n} times")
    for name, ds in deps.items():
        for d in ds:
            if d not in deps:
                c.fail(f"skill {name}", f"dependency {d!r} is not a skill in this catalog")
    cycle = find_cycle(deps)
    if cycle:
        c.fail("catalog.skills", "dependency cycle: " + " -> ".join(cycle))

    listed = 0
    for skill in skills:
        if not isinstance(skill, dict):
            continue
        name = skill.get("name")
        needs = closure(name, deps) if not cycle else set()
        for used in skill.get("uses", []) or []:
            listed += 1
            if used not in owner:
                c.fail(f"skill {name}.uses", f"{used!r} is not a tool in this catalog")
            elif owner[used] == name:
                c.fail(f"skill {name}.uses", f"{used!r} is bundled by this skill already")
            elif owner[used] is not None and owner[used] not in needs and not cycle:
                # The loader registers skills in dependency order; a listed tool must already
                # be registered, so it must be standalone or owned by a (transitive) dependency.
                c.fail(f"skill {name}.uses",
                       f"{used!r} is owned by skill {owner[used]!r}, which {name!r} does not depend on")
    for i, p in enumerate(pinned):
        if p not in owner:
            c.fail(f"catalog.pinned[{i}]", f"{p!r} is not a tool in this catalog")
    for p, n in Counter(p for p in pinned if isinstance(p, str)).items():
        if n > 1:
            c.fail("catalog.pinned", f"{p!r} is pinned {n} times")

    all_tools = [t for s in skills if isinstance(s, dict) for t in s.get("tools", []) or []] + standalone
    plain = Counter(t.get("name") for t in all_tools if isinstance(t, dict))
    memo = {}
    stats = {
        "skills": len(skills),
        "tools": len(owner),
        "bundled tools": sum(1 for o in owner.values() if o is not None),
        "standalone tools": sum(1 for o in owner.values() if o is None),
        "sources": len({q.split("/")[0] for q in owner if "/" in q}),
        "categories": len({s.get("category") for s in skills if isinstance(s, dict) and s.get("category")}),
        "skills with dependencies": sum(1 for d in deps.values() if d),
        "deepest dependency chain": max((depth(n, deps, memo) for n in deps), default=0) if not cycle else "cycle",
        "listed (uses) entries": listed,
        "pinned": len(pinned),
        "examples": sum(len(s.get("examples", []) or []) for s in skills if isinstance(s, dict)),
        "tool names shared across sources": ", ".join(sorted(n for n, k in plain.items() if k > 1)) or "none",
    }
    return c, stats


def main(argv):
    path = argv[1] if len(argv) > 1 else "catalog/default.json"
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        print(f"error: cannot read {path}: {err}", file=sys.stderr)
        return 2
    checker, stats = check(doc)
    if checker.errors:
        print(f"{path}: {len(checker.errors)} problem(s):", file=sys.stderr)
        for error in checker.errors:
            print(f"  - {error}", file=sys.stderr)
        return 1
    print(f"{path}: valid {FORMAT}")
    for key, value in stats.items():
        print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
