"""End to end: a real ``famulus serve`` sends the installed skills' names and
descriptions (never their bodies) in the system prompt to an OpenAI-compatible
model, which loads one with ``load_skill`` and gets its instructions back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.e2e.test_chat_e2e import AUTH, KEY, new_session, register_scripted, send
from tests.support.live import ServerProcess
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.sse_collector import SSECollector

MODEL = "scripted-model"
BODY = "PLANT-BODY-MARKER: water the ferns on Mondays, the cacti monthly."


@pytest.fixture(scope="module")
def openai_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI([MODEL]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def famulus(
    tmp_path_factory: pytest.TempPathFactory, openai_server: ScriptedOpenAI
) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("skills-e2e") / "home"
    for name, description, body in (
        ("plant-care", "Plans watering\nfor house plants.", BODY),
        ("tax-receipts", "Sorts tax receipts by year.", "TAX-BODY-MARKER"),
    ):
        folder = home / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n{body}\n"
        )
    env = {"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}
    server = ServerProcess(home, env=env).start()
    with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
        register_scripted(http, openai_server)
    yield server
    server.stop()


def _system(request: dict[str, Any]) -> str:
    return "\n".join(
        str(m["content"]) for m in request["messages"] if m["role"] in ("system", "developer")
    )


def test_model_sees_skill_list_and_loads_one(
    famulus: ServerProcess, openai_server: ScriptedOpenAI
) -> None:
    openai_server.reset()
    openai_server.push(
        Turn(tool_calls=[("load_skill", {"name": "plant-care"})]), Turn(text="Ferns first.")
    )
    with httpx.Client(base_url=famulus.base_url, headers=AUTH, timeout=10) as http:
        sid = new_session(http)
        with SSECollector(famulus.base_url, AUTH, sid) as sse:
            send(http, sid, "When do I water my plants?")
            sse.wait_for("run_finished")
    first, second = openai_server.requests[0], openai_server.requests[1]
    system = _system(first)
    assert "- plant-care: Plans watering for house plants." in system
    assert "- tax-receipts: Sorts tax receipts by year." in system
    assert "PLANT-BODY-MARKER" not in system and "TAX-BODY-MARKER" not in system
    assert "load_skill" in {t["function"]["name"] for t in first["tools"]}
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and BODY in tool_message["content"]
    assert _system(second) == system  # the same prefix on the next request of the run
    result = sse.of("tool_result")[0]
    assert result["name"] == "load_skill" and not result["error"]
