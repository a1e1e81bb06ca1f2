"""Where a skill's script runs: a bubblewrap (``bwrap``) sandbox.

A skill comes from the internet; its script runs on the machine that holds the
person's mail password and API keys. Run as the server's user it could read
``/proc/<server>/environ`` and ``$FAMULUS_HOME/secrets.json`` and then drive the
API. So a script sees a filesystem built for it: the system's read-only program
directories, its own skill folder and a private ``/tmp``, nothing of
``FAMULUS_HOME`` beyond that folder, a fresh PID namespace (no server process to
look at) and no network unless its SKILL.md asks for it (``network: true``).

Without bwrap, scripts are refused unless the owner opts in with
``FAMULUS_UNSANDBOXED_SCRIPTS=true``; the refusal says how to fix it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

# Read-only system directories a script's interpreter may need.
_SYSTEM_DIRS = ("/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf",
                "/etc/ld.so.conf.d", "/etc/localtime", "/etc/mime.types")  # fmt: skip
# Only for skills that asked for the network: name resolution and certificates.
_NETWORK_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl",
                  "/etc/ca-certificates", "/etc/pki")  # fmt: skip
_MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PATH = "/usr/local/bin:/usr/bin:/bin"
UNAVAILABLE = (
    "scripts run only inside a sandbox, and bubblewrap ('bwrap') is not usable on this "
    "machine ({reason}). Install it (Debian/Ubuntu: apt-get install bubblewrap), or let "
    "the server's owner set FAMULUS_UNSANDBOXED_SCRIPTS=true to run scripts without one."
)


@dataclass(frozen=True)
class Jail:
    """How to start one script: argv (bwrap's and then the script's) and env."""

    argv: list[str]
    env: dict[str, str]


class Sandbox:
    def __init__(self, bwrap: str, home: Path, allow_unsandboxed: bool) -> None:
        self.bwrap_name = bwrap
        self.home = home
        self.allow_unsandboxed = allow_unsandboxed
        self._usable: str | None | bool = None  # True, or the reason it is not

    async def problem(self) -> str | None:
        """None when scripts may run; else the sentence that refuses them."""
        if self._usable is None:
            self._usable = await self._self_check()
        if self._usable is True or self.allow_unsandboxed:
            return None
        return UNAVAILABLE.format(reason=self._usable)

    @property
    def active(self) -> bool:
        return self._usable is True

    async def _self_check(self) -> str | bool:
        """Start ``true`` in the sandbox once: bwrap can be installed yet unable to
        create namespaces (a container without user namespaces)."""
        program = shutil.which(self.bwrap_name)
        if program is None:
            return f"'{self.bwrap_name}' was not found"
        self.bwrap = program
        probe = self._argv(Path("/"), None, network=False) + ["true"]
        try:
            proc = await asyncio.create_subprocess_exec(
                *probe,
                env={"PATH": PATH},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), 10)
        except (OSError, TimeoutError) as exc:
            return f"it could not be started: {exc}"
        if proc.returncode != 0:
            return err.decode(errors="replace").strip()[:200] or f"exit {proc.returncode}"
        return True

    def jail(self, argv: list[str], skill_dir: Path, *, network: bool) -> Jail:
        """``argv`` wrapped in bwrap (or bare, when unsandboxed runs are allowed)."""
        env = {"PATH": PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
        env["SKILL_DIR"] = str(skill_dir)
        if not self.active:
            return Jail(argv, {**_passed_env(), "SKILL_DIR": str(skill_dir)})
        wrapped = self._argv(skill_dir, skill_dir, network=network)
        for key, value in env.items():
            wrapped += ["--setenv", key, value]
        return Jail([*wrapped, "--", *argv], {})  # bwrap itself holds no environment

    def _argv(self, cwd: Path, skill_dir: Path | None, *, network: bool) -> list[str]:
        args = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-all"]
        args += ["--clearenv", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        if network:
            args.append("--share-net")
        for path in _SYSTEM_DIRS + (_NETWORK_FILES if network else ()):
            args += ["--ro-bind-try", path, path]
        for link in _MERGED_USR:
            args += _merged_usr_link(link)
        for extra in _interpreter_dirs():
            args += ["--ro-bind", extra, extra]
        if skill_dir is not None:
            args += ["--bind", str(skill_dir), str(skill_dir)]
            # The folder lives in FAMULUS_HOME; nothing else of it may show.
        args += ["--chdir", str(cwd)]
        return args


def _merged_usr_link(path: str) -> list[str]:
    """/bin → usr/bin style links recreated, or the real directory bound read-only."""
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.isdir(path):
        return ["--ro-bind", path, path]
    return []


def _interpreter_dirs() -> list[str]:
    """The Python famulus runs on, when it lives outside /usr (pyenv, a venv's
    base), so ``.py`` scripts find their interpreter and its standard library."""
    base = os.path.realpath(sys.base_prefix)
    return [] if base == "/usr" or base.startswith("/usr/") else [base]


def python_interpreter() -> str:
    """The base interpreter (not the venv's, whose site-packages hold famulus)."""
    return os.path.realpath(sys.executable)


def _passed_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")
    return {k: os.environ[k] for k in keep if k in os.environ}
