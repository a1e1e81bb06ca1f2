"""Run the real app on a real loopback port, in-process (uvicorn in a thread),
or as a real ``famulus serve`` subprocess for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(base_url: str, timeout: float = 60.0) -> None:
    """Generous: a cold start on a loaded 2-core machine has taken 18 s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base_url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"server at {base_url} did not become healthy")


@contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in a background thread."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base)
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class ServerProcess:
    """A real ``famulus serve`` process with its own FAMULUS_HOME."""

    def __init__(
        self,
        home: Path,
        env: dict[str, str] | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        self.home = home
        self.preexec_fn = preexec_fn
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.extra_env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = home.parent / f"serve-{self.port}.log"

    def start(self) -> ServerProcess:
        env = {
            **os.environ,
            "FAMULUS_HOME": str(self.home),
            "FAMULUS_PORT": str(self.port),
            "FAMULUS_HOST": "127.0.0.1",
            **self.extra_env,
        }
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "famulus.cli", "serve"],
            env=env,
            stdout=log,
            stderr=log,
            preexec_fn=self.preexec_fn,  # noqa: PLW1509
        )
        wait_healthy(self.base_url)
        return self

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.proc = None

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
