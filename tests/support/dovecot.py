"""A real IMAP server for tests: Dovecot on a loopback port, configured in a temp dir.

The server runs in the foreground (``dovecot -F -c <conf>``) with everything
it writes (maildirs, sockets, state, its log) under one temp directory, no
SSL and plaintext logins, and one user from a passwd file. It runs as the
current user; as root (CI) the login and internal processes use the package's
``dovenull``/``dovecot`` users because Dovecot refuses to run them as root,
and so does the mail user (Dovecot refuses mail access as UID 0).

Without the ``dovecot`` binary the tests that need it skip, unless
``FAMULUS_REQUIRE_TEST_SERVERS=1`` (set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import grp
import imaplib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support.live import free_port

REQUIRE_ENV = "FAMULUS_REQUIRE_TEST_SERVERS"
USER = "alice@example.org"
PASSWORD = "dovecot-test-password"


def require_binary(name: str, install_hint: str) -> str:
    """The binary's path, or skip (fail when test servers are required)."""
    path = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/usr/local/sbin/{name}") if os.access(p, os.X_OK)),
        None,
    )
    if path:
        return path
    reason = f"{name} is not installed ({install_hint}); these tests need the real server"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires it", pytrace=False)
    pytest.skip(reason)


@dataclass
class Dovecot:
    host: str
    port: int
    user: str
    password: str
    root: Path

    def connect(self) -> imaplib.IMAP4:
        imap = imaplib.IMAP4(self.host, self.port, timeout=10)
        imap.login(self.user, self.password)
        return imap

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _config(root: Path, port: int, internal: tuple[str, str], login_user: str) -> str:
    return f"""\
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
instance_name = famulus-test-{port}
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {internal[0]}
default_internal_group = {internal[1]}
default_login_user = {login_user}
first_valid_uid = 1
mail_location = maildir:{root}/mail/%n
passdb {{
  driver = passwd-file
  args = scheme=PLAIN {root}/passwd
}}
userdb {{
  driver = passwd-file
  args = {root}/passwd
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
"""


@contextmanager
def running_dovecot() -> Iterator[Dovecot]:
    binary = require_binary("dovecot", "apt-get install dovecot-imapd")
    root = Path(tempfile.mkdtemp(prefix="famulus-dovecot-"))
    root.chmod(0o755)  # the unprivileged login processes must reach run/
    (root / "mail").mkdir()
    if os.geteuid() == 0:
        internal = pwd.getpwnam("dovecot")
        internal_ids = (internal.pw_name, grp.getgrgid(internal.pw_gid).gr_name)
        login_user = "dovenull"
        uid, gid = internal.pw_uid, internal.pw_gid
        os.chown(root / "mail", uid, gid)
    else:
        me = pwd.getpwuid(os.getuid())
        internal_ids = (me.pw_name, grp.getgrgid(os.getgid()).gr_name)
        login_user = me.pw_name
        uid, gid = os.getuid(), os.getgid()
    (root / "passwd").write_text(
        f"{USER}:{{PLAIN}}{PASSWORD}:{uid}:{gid}::{root}/mail/{USER.split('@')[0]}::\n"
    )
    port = free_port()
    conf = root / "dovecot.conf"
    conf.write_text(_config(root, port, internal_ids, login_user))
    server = Dovecot("127.0.0.1", port, USER, PASSWORD, root)
    with open(root / "stderr.log", "wb") as stderr:
        proc = subprocess.Popen(
            [binary, "-F", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        _wait_ready(server, proc)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(server: Dovecot, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with socket.create_connection((server.host, server.port), timeout=1) as s:
                if s.recv(64).startswith(b"* OK"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    errors = (server.root / "stderr.log").read_text(errors="replace")
    raise RuntimeError(
        f"dovecot did not start (exit code {proc.poll()}):\n{errors}\n{server.log()[-3000:]}"
    )
