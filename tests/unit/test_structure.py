"""Structure the codebase keeps: no import cycles between famulus modules, and
the database schema the migrations build is the one pinned in tests/data.

The schema pin makes every schema change a visible, reviewed diff: after a new
migration, regenerate the pin with
``.venv/bin/python -m tests.unit.test_structure > tests/data/schema.sql``.
"""

from __future__ import annotations

import ast
import sqlite3
import tempfile
from pathlib import Path

from famulus.store.db import Database

SRC = Path(__file__).resolve().parents[2] / "src" / "famulus"
PINNED = Path(__file__).resolve().parents[1] / "data" / "schema.sql"


def _module(path: Path) -> str:
    name = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _imports(path: Path) -> set[str]:
    """famulus modules imported at module level (imports under TYPE_CHECKING and
    inside functions are deliberate ways to depend without a cycle)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("famulus"):
            found.add(str(node.module))
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("famulus")}
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in graph:
                continue
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if state.get(dep) is None and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if state.get(node) is None and (found := visit(node)):
            return found
    return None


def test_no_import_cycles() -> None:
    graph = {_module(p): _imports(p) for p in SRC.rglob("*.py")}
    assert len(graph) > 100
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _every_import(path: Path) -> set[str]:
    """famulus modules imported anywhere in the file, TYPE_CHECKING and function
    bodies included: a dependency there is still a dependency of the design."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("famulus"):
            found.add(str(node.module))
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("famulus")}
    return found


def test_the_chat_area_has_no_cycles_even_for_type_checking() -> None:
    """A run and the context service do not call back into the run manager, and
    sessions (which chat builds on) know nothing of chat."""
    area = [p for p in SRC.rglob("*.py") if p.parent.name in ("chat", "sessions")]
    graph = {_module(p): _every_import(p) for p in area}
    assert "famulus.chat.run" in graph and "famulus.sessions.service" in graph
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])
    for name, deps in graph.items():
        if name.startswith("famulus.sessions"):
            assert not {d for d in deps if d.startswith("famulus.chat")}, name
    for name in ("famulus.chat.run", "famulus.chat.context", "famulus.chat.turns"):
        assert "famulus.chat.manager" not in graph[name], name


def current_schema() -> str:
    """The schema after every migration, one statement per line, sorted."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "famulus.db")
        db.open()
        db.close()
        conn = sqlite3.connect(Path(tmp) / "famulus.db")
        rows = conn.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
            " AND NOT (type = 'table' AND sql LIKE 'CREATE TABLE ''%')"  # FTS5's shadow
            " ORDER BY type, name"  # tables: SQLite's own, they vary by its version
        ).fetchall()
        conn.close()
    return "".join(" ".join(str(r[0]).split()) + ";\n" for r in rows)


def test_schema_matches_the_pinned_copy() -> None:
    assert current_schema() == PINNED.read_text(encoding="utf-8"), (
        "the database schema changed; if that is intended, regenerate "
        "tests/data/schema.sql (see this module's docstring)"
    )


if __name__ == "__main__":
    print(current_schema(), end="")
