"""Structure the codebase keeps: no import cycles between famulus modules; HTTP
only in ``api/`` and ``app.py``; SQL only in ``store/``; the built services read
only by the HTTP layer; and the database schema the migrations build is the one
pinned in tests/data.

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
# The layer above every area: builds the services and serves them over HTTP.
_TOP = ("famulus.api", "famulus.app", "famulus.wiring", "famulus.serve", "famulus.cli")


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
    """Every module a file imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def _importers(prefixes: tuple[str, ...], allowed: tuple[str, ...]) -> list[str]:
    """Modules outside ``allowed`` that import a module starting with a prefix."""
    offenders = []
    for path in SRC.rglob("*.py"):
        name = _module(path)
        if name.startswith(allowed):
            continue
        imported = _every_import(path)
        if any(m == p or m.startswith(p + ".") for m in imported for p in prefixes):
            offenders.append(name)
    return sorted(offenders)


def test_only_the_http_layer_knows_http() -> None:
    offenders = _importers(("fastapi", "starlette"), ("famulus.api", "famulus.app"))
    assert offenders == [], f"import FastAPI/Starlette outside api/ and app.py: {offenders}"


def test_areas_never_reach_into_the_http_layer() -> None:
    offenders = _importers(("famulus.api", "famulus.app", "famulus.wiring"), _TOP)
    assert offenders == [], f"only api/, app.py and serve.py may import these: {offenders}"


def test_sql_stays_in_the_store() -> None:
    offenders = _importers(("sqlite3",), ("famulus.store",))
    assert offenders == [], f"sqlite3 used outside store/: {offenders}"


def test_the_import_finder_finds_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from fastapi import Request\n    import starlette.types\n")
    assert _every_import(source) == {"fastapi", "starlette.types"}


def test_the_chat_area_has_no_cycles_even_for_type_checking() -> None:
    """A run and the context service do not call back into the run manager, and
    sessions (which chat builds on) know nothing of chat. Imports under
    TYPE_CHECKING and in function bodies count here: they are still a
    dependency of the design."""
    area = [p for p in SRC.rglob("*.py") if p.parent.name in ("chat", "sessions")]
    graph = {_module(p): {m for m in _every_import(p) if m.startswith("famulus")} for p in area}
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
