"""famulus as a person installs it: a wheel built from this tree, installed into a
fresh virtual environment, its ``famulus`` command answering ``--version`` and
serving ``/health``. Also: every third-party module the code imports is one the
package declares (so ``pipx install famulus`` gets it).

Nothing is fetched: the wheel is built without build isolation (hatchling is a
test dependency), installed with ``--no-deps --no-index``, and the new
environment sees the test environment's packages through a ``.pth`` file, as
if pip had installed the dependencies there too.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import sysconfig
import time
import tomllib
import venv
import zipfile
from importlib.metadata import packages_distributions, requires
from pathlib import Path

import httpx
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "famulus"
KEY = "packaging-key-0123456789abcdefghijklmnop"


def _declared() -> set[str]:
    """The distributions famulus depends on (its own optional extras but the
    test one included), with the ones their extras pull in
    (``pydantic-ai-slim[google]`` brings ``google-genai``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names: set[str] = set()
    # famulus's own optional extras count (``famulus[otel]`` declares what the
    # tracing module imports, and only then); the test extra does not.
    optional = [
        line
        for name, lines in project.get("optional-dependencies", {}).items()
        if name != "test"
        for line in lines
    ]
    for line in [*project["dependencies"], *optional]:
        req = Requirement(line)
        names.add(canonicalize_name(req.name))
        for extra in req.extras:
            for sub in requires(req.name) or []:
                subreq = Requirement(sub)
                if subreq.marker is not None and subreq.marker.evaluate({"extra": extra}):
                    names.add(canonicalize_name(subreq.name))
    return names


def _imported_modules() -> set[str]:
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "famulus"}


def test_every_imported_package_is_declared() -> None:
    providers = packages_distributions()
    declared = _declared()
    modules = _imported_modules()
    assert {"yaml", "fastapi", "numpy"} <= modules  # the scan sees the real imports
    undeclared = sorted(
        m for m in modules if not {canonicalize_name(d) for d in providers.get(m, [])} & declared
    )
    assert undeclared == [], f"imported but not declared in pyproject.toml: {undeclared}"


def _build_wheel(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (wheel,) = out.glob("famulus-*.whl")
    return wheel


def _check_contents(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert "famulus/web/static/index.html" in names
    assert any(n.startswith("famulus/web/static/js/") for n in names)
    assert "famulus/store/migrations/0001_core.sql" in names
    shipped = {n for n in names if n.startswith("famulus/store/migrations/") and n.endswith(".sql")}
    assert len(shipped) == len(list((SRC / "store" / "migrations").glob("*.sql")))
    assert "famulus/memory/data/minilm-tokenizer.json" in names
    assert "famulus/skills/builtin/init/SKILL.md" in names
    assert "famulus/ops/backup.py" in names
    assert any(re.fullmatch(r"famulus-[^/]+\.dist-info/entry_points\.txt", n) for n in names)


def _fresh_venv(where: Path) -> Path:
    """A new environment that sees the test environment's packages (last on its path)."""
    venv.EnvBuilder(with_pip=False).create(where)
    purelib = sysconfig.get_paths(vars={"base": str(where), "platbase": str(where)})["purelib"]
    Path(purelib, "test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return where / "bin"


def _clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH: the installed wheel, not this source tree, must answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "FAMULUS_"))}
    return {**env, **extra}


def _wait_for_port(log: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"famulus running on http://127\.0\.0\.1:(\d+)", log.read_text())
        if found:
            return int(found.group(1))
        assert proc.poll() is None, log.read_text()
        time.sleep(0.1)
    raise AssertionError(f"the installed famulus did not start:\n{log.read_text()}")


def test_the_wheel_installs_and_serves(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path / "dist")
    _check_contents(wheel)
    bin_dir = _fresh_venv(tmp_path / "venv")
    env = _clean_env()
    subprocess.run(
        [bin_dir / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel],
        check=True,
        env=env,
        timeout=120,
    )
    where = subprocess.run(
        [bin_dir / "python", "-c", "import famulus; print(famulus.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(tmp_path / "venv")), where
    version = subprocess.run(
        [bin_dir / "famulus", "--version"], env=env, capture_output=True, text=True, check=True
    )
    assert version.stdout.strip() == f"famulus {wheel.name.split('-')[1]}"
    unit = subprocess.run(
        [bin_dir / "famulus", "service", "install", "--dry-run"],
        env=_clean_env(HOME=str(tmp_path / "user")),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"ExecStart={(bin_dir / 'famulus').resolve()} serve\n" in unit  # this install's own

    log = tmp_path / "serve.log"
    serve_env = _clean_env(FAMULUS_HOME=str(tmp_path / "home"), FAMULUS_API_KEY=KEY)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [bin_dir / "famulus", "serve", "--host", "127.0.0.1", "--port", "0"],
            env=serve_env,
            stdout=out,
            stderr=out,
        )
    try:
        port = _wait_for_port(log, proc)
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10)
        assert health.status_code == 200 and health.json()["status"] == "ok"
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and "<html" in page.text.lower()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
