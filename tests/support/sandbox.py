"""Skip (or, in CI, fail) the tests that need a working bubblewrap sandbox.

The sandbox needs the ``bwrap`` binary and a kernel that lets it create
namespaces. A machine without them skips these tests with the reason, unless
``FAMULUS_REQUIRE_TEST_SERVERS=1`` (set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from tests.support.dovecot import REQUIRE_ENV


def require_bwrap() -> str:
    """The path of a ``bwrap`` that can make namespaces here, or skip/fail saying why."""
    path = shutil.which("bwrap")
    if path is None:
        reason = "bwrap is not installed (apt install bubblewrap)"
    else:
        probe = subprocess.run(
            [path, "--unshare-all", "--ro-bind", "/", "/", "--", "true"],
            capture_output=True,
            timeout=20,
            check=False,
        )
        if probe.returncode == 0:
            return path
        reason = f"bwrap cannot create namespaces here: {probe.stderr.decode(errors='replace')}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires it", pytrace=False)
    pytest.skip(reason)
