"""``famulus service install``: a systemd user unit that runs ``famulus serve``.

The unit names the absolute path of the famulus that wrote it (a pipx or venv
install is not on systemd's PATH) and the resolved ``FAMULUS_HOME``, so the
service serves the same home the person just used. Further settings and
provider keys go in an optional environment file beside the unit's config
(``~/.config/famulus/env``), not in the unit, which other processes may read.

It writes the file and prints the ``systemctl --user`` command, but does not
run systemctl itself: enabling a service that starts at every login is a
decision the person should see and make, and the command fails in containers
and sessions without a user manager, where writing the file still helps.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

UNIT_NAME = "famulus.service"
# Exit statuses a restart cannot cure: the home or port is taken (1), a bad setting (2).
NO_RESTART_STATUSES = "1 2"


class ServiceError(Exception):
    """Why the unit was not written, as one sentence for the person."""


@dataclass(frozen=True)
class Installed:
    path: Path
    text: str
    written: bool  # False for --dry-run and for an identical file already there


def config_home(environ: Mapping[str, str]) -> Path:
    configured = environ.get("XDG_CONFIG_HOME", "")
    if configured and Path(configured).is_absolute():
        return Path(configured)
    return Path(environ.get("HOME") or Path.home()) / ".config"


def unit_path(environ: Mapping[str, str]) -> Path:
    return config_home(environ) / "systemd" / "user" / UNIT_NAME


def env_file(environ: Mapping[str, str]) -> Path:
    return config_home(environ) / "famulus" / "env"


def famulus_command(argv0: str | None = None) -> list[str]:
    """How to start this very famulus: its console script when it runs as one,
    else this interpreter with ``-m famulus.cli`` (``python -m famulus.cli``)."""
    first = Path(argv0 if argv0 is not None else sys.argv[0])
    if first.name == "famulus":
        found = first if first.parent != Path() else Path(shutil.which(str(first)) or first)
        if found.is_file():
            return [str(found.resolve())]
    return [str(Path(sys.executable).absolute()), "-m", "famulus.cli"]


def _quote(arg: str) -> str:
    """One word of a systemd command line or assignment: ``%`` and ``$`` doubled
    so systemd expands nothing, quoted when it holds a space or a quote."""
    escaped = arg.replace("%", "%%").replace("$", "$$")
    if any(c.isspace() or c in "\"'\\" for c in escaped):
        return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return escaped


def unit_text(command: list[str], home: Path, environ: Mapping[str, str]) -> str:
    exec_start = " ".join(_quote(a) for a in [*command, "serve"])
    return (
        "[Unit]\n"
        "Description=famulus, a self-hosted personal AI agent server\n"
        "\n"
        "[Service]\n"
        "Type=exec\n"
        f"ExecStart={exec_start}\n"
        f"Environment={_quote(f'FAMULUS_HOME={home}')}\n"
        f"EnvironmentFile=-{str(env_file(environ)).replace('%', '%%')}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        f"RestartPreventExitStatus={NO_RESTART_STATUSES}\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def install(
    home: Path,
    environ: Mapping[str, str] | None = None,
    *,
    dry_run: bool = False,
    force: bool = False,
    command: list[str] | None = None,
) -> Installed:
    """Write the unit (owner-only); an existing, different unit only with ``force``."""
    env = os.environ if environ is None else environ
    path = unit_path(env)
    text = unit_text(command or famulus_command(), home.expanduser().absolute(), env)
    if dry_run:
        return Installed(path, text, written=False)
    if path.exists():
        if path.read_text() == text:
            return Installed(path, text, written=False)
        if not force:
            raise ServiceError(
                f"{path} exists and differs; pass --force to replace it "
                "(or --dry-run to see the new one)"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{UNIT_NAME}.tmp")
    partial.write_text(text)
    partial.chmod(0o600)
    os.replace(partial, path)
    return Installed(path, text, written=True)


ENABLE_COMMAND = "systemctl --user daemon-reload && systemctl --user enable --now famulus"
