"""``famulus service install`` writes a systemd user unit for this famulus and
home, under a HOME / XDG_CONFIG_HOME pointed at a temp directory."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from famulus.ops.service_unit import ENABLE_COMMAND, famulus_command, unit_text


def _service(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FAMULUS_", "XDG_"))}
    clean |= {"HOME": str(tmp_path / "user"), **env}
    return subprocess.run(
        [sys.executable, "-m", "famulus.cli", "service", "install", *args],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _verify(unit: Path, tmp_path: Path) -> None:
    """systemd's own parser, where it is installed: no unknown key, no bad value."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return
    done = subprocess.run(
        [analyze, "verify", str(unit)],
        env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert str(unit) not in done.stderr, done.stderr


def test_install_writes_the_unit_and_prints_the_command(tmp_path: Path) -> None:
    home = tmp_path / "data home"
    done = _service(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "cfg"), FAMULUS_HOME=str(home))
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "famulus.service"
    text = unit.read_text()
    assert stat.S_IMODE(unit.stat().st_mode) == 0o600
    assert f"ExecStart={sys.executable} -m famulus.cli serve\n" in text
    assert f'Environment="FAMULUS_HOME={home}"\n' in text
    assert f"EnvironmentFile=-{tmp_path / 'cfg' / 'famulus' / 'env'}\n" in text
    assert "Restart=on-failure\n" in text and "WantedBy=default.target\n" in text
    assert ENABLE_COMMAND in done.stdout and str(unit) in done.stdout
    _verify(unit, tmp_path)

    again = _service(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "cfg"), FAMULUS_HOME=str(home))
    assert again.returncode == 0 and "already up to date" in again.stdout
    other = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "FAMULUS_HOME": str(tmp_path / "other")}
    refused = _service(tmp_path, **other)
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert unit.read_text() == text
    assert _service(tmp_path, "--force", **other).returncode == 0
    assert f"FAMULUS_HOME={tmp_path / 'other'}" in unit.read_text()


def test_dry_run_and_the_default_config_home(tmp_path: Path) -> None:
    done = _service(tmp_path, "--dry-run")
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "user" / ".config" / "systemd" / "user" / "famulus.service"
    assert f"# {unit} (not written: --dry-run)" in done.stdout
    assert f"FAMULUS_HOME={tmp_path / 'user' / '.famulus'}" in done.stdout
    assert not unit.exists()


def test_the_command_is_the_running_famulus(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "famulus"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert famulus_command(str(script)) == [str(script.resolve())]
    assert famulus_command("/somewhere/famulus/cli.py") == [sys.executable, "-m", "famulus.cli"]


@pytest.mark.parametrize(
    ("word", "written"),
    [("/opt/my apps/famulus", '"/opt/my apps/famulus"'), ("/x/100%/$HOME", "/x/100%%/$$HOME")],
)
def test_words_are_quoted_for_systemd(word: str, written: str) -> None:
    assert f"ExecStart={written} serve\n" in unit_text([word], Path("/h"), {"HOME": "/u"})
