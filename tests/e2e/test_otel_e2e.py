"""OpenTelemetry traces end to end: a real ``famulus serve`` with
``FAMULUS_OTEL_ENDPOINT`` pointing at a small OTLP/HTTP receiver on loopback,
one chat turn that calls a tool, and the spans that arrive once the server stops;
plus the refusals when tracing is asked for wrongly, and the silence when it is not."""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from pydantic import ValidationError
from tests.e2e.test_chat_e2e import register_scripted
from tests.support.live import ServerProcess
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.sse_collector import SSECollector

from famulus import telemetry
from famulus.settings import Settings
from famulus.settings_errors import settings_errors

KEY = "e2e-otel-key-abcdefghijklmnopqrstuvwxyz0123"
AUTH = {"Authorization": f"Bearer {KEY}"}
SECRET_WORDS = "my pin is 4711 and my doctor is Dr Otelsky"
ANSWER = "It is quarter past nine."


class Receiver:
    """An OTLP/HTTP trace receiver: keeps every export request it is sent."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.paths.append(self.path)
                if self.path == "/v1/traces":
                    receiver.requests.append(ExportTraceServiceRequest.FromString(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[tuple[dict[str, str], Any]]:
        """Each span with its resource's attributes (as strings)."""
        found = []
        for request in self.requests:
            for rs in request.resource_spans:
                resource = {a.key: a.value.string_value for a in rs.resource.attributes}
                for scope in rs.scope_spans:
                    found.extend((resource, span) for span in scope.spans)
        return found


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


def test_run_and_tool_spans_arrive_without_content(tmp_path: Path, receiver: Receiver) -> None:
    with ScriptedOpenAI(["scripted-model"]) as model:
        env = {
            "FAMULUS_API_KEY": KEY,
            "FAMULUS_LOG_LEVEL": "warning",
            "FAMULUS_OTEL_ENDPOINT": receiver.url + "/",
        }
        server = ServerProcess(tmp_path / "home", env=env).start()
        try:
            with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
                register_scripted(http, model)
                model.push(Turn(tool_calls=[("current_time", {})]), Turn(text=ANSWER))
                sid = http.post("/sessions", json={"name": "otel"}).json()["session_id"]
                with SSECollector(server.base_url, AUTH, sid) as sse:
                    r = http.post(
                        "/chat/message", json={"message": SECRET_WORDS, "session_id": sid}
                    )
                    assert r.status_code == 202, r.text
                    sse.wait_for("run_finished")
                assert sse.of("tool_call")[0]["name"] == "current_time"
        finally:
            server.stop()  # the batch is flushed as the server ends
    spans = receiver.spans()
    names = [span.name for _, span in spans]
    assert set(receiver.paths) == {"/v1/traces"}, receiver.paths
    # pydantic-ai's spans: the run, its model requests, the tool call.
    assert "invoke_agent agent" in names and "execute_tool current_time" in names, names
    assert names.count("chat scripted-model") == 2, names
    assert {resource.get("service.name") for resource, _ in spans} == {"famulus"}
    dumped = b"".join(request.SerializeToString() for request in receiver.requests)
    assert SECRET_WORDS.encode() not in dumped and b"Otelsky" not in dumped
    assert ANSWER.encode() not in dumped


def test_unset_endpoint_loads_no_sdk() -> None:
    """Off by default: not even the SDK's modules are imported, and nothing is set up."""
    code = (
        "import sys\n"
        "from famulus import serve, telemetry\n"
        "from famulus.app import create_app\n"
        "from famulus.settings import Settings\n"
        "stop = telemetry.start(Settings())\n"
        "stop()\n"
        "from pydantic_ai import Agent\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')),"
        " Agent._instrument_default)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] False"


def test_missing_extra_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if not installed
    with pytest.raises(telemetry.TelemetryUnavailable) as caught:
        telemetry.start(Settings(otel_endpoint="http://127.0.0.1:4318"))
    assert str(caught.value) == (
        "FAMULUS_OTEL_ENDPOINT is set but the otel extra is not installed: "
        "pip install 'famulus[otel]'"
    )


@pytest.mark.parametrize("bad", ["127.0.0.1:4318", "ftp://collector", "http://host/v1?x=1"])
def test_bad_endpoint_is_a_settings_error(bad: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(otel_endpoint=bad)
    assert list(settings_errors(caught.value, {})) == [
        f"invalid setting FAMULUS_OTEL_ENDPOINT={bad!r}: must be the http(s) base URL "
        "of an OTLP/HTTP collector, such as http://127.0.0.1:4318"
    ]


def test_endpoint_is_normalised() -> None:
    assert Settings(otel_endpoint="https://otel.example/base/").otel_endpoint == (
        "https://otel.example/base"
    )
    assert Settings(otel_endpoint=" ").otel_endpoint is None


def test_serve_without_the_extra_refuses_in_one_line(tmp_path: Path) -> None:
    """The real ``famulus serve``, with the SDK hidden: one line, exit 3, home untouched."""
    code = (
        "import sys; sys.modules['opentelemetry.sdk.trace'] = None\n"
        "from famulus.cli import app\n"
        "app(['serve'])\n"
    )
    home = tmp_path / "home"
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": ":".join(sys.path),
        "FAMULUS_HOME": str(home),
        "FAMULUS_PORT": "0",
        "FAMULUS_OTEL_ENDPOINT": "http://127.0.0.1:4318",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [f"famulus: {telemetry.MISSING_EXTRA}"]
    assert not home.exists()
