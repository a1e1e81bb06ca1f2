"""The agent tools behind the builtin skills, driven through chat with scripted models:
add_custom_model, install_skill, list_skills and run_skill_script."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import API_KEY
from tests.support.chat_models import events_until, install_model, scripted
from tests.support.fake_codehost import fake_codehost
from tests.support.sessions import new_session

from famulus.settings import Settings
from famulus.skills import tools as skill_tools
from famulus.skills.skill import Skill, find_scripts

SECRET = "sk-live-DO-NOT-LEAK-4f9c2a7e"
ENV_SECRET = "env-secret-must-not-reach-scripts"

REPORT_PY = b"""import os, sys
print("sunny", sys.argv[1:])
print("cwd", os.path.basename(os.getcwd()))
print("env", sorted(os.environ))
print("leak", os.environ.get("FAMULUS_TEST_SECRET"))
print("stdin", repr(sys.stdin.read()))
sys.stderr.write("a warning\\n")
sys.exit(3)
"""

REPOS: dict[str, dict[str, Any]] = {
    "acme/skills": {
        "weather/SKILL.md": b"---\nname: weather\ndescription: Tells the weather.\n---\nRun it.\n",
        "weather/report.py": REPORT_PY,
        "slow/SKILL.md": b"---\nname: slow\ndescription: Never ends.\n---\nWait.\n",
        "slow/wait.sh": b"#!/bin/sh\necho started\nsleep 30\necho never\n",
        "chatty/SKILL.md": b"---\nname: chatty\ndescription: Talks a lot.\n---\nTalk.\n",
        "chatty/talk.sh": b"#!/bin/sh\nyes 0123456789abcdef | head -c 100000\n",
    }
}


@pytest.fixture
def host() -> Iterator[str]:
    with fake_codehost(REPOS) as url:
        yield url


@pytest.fixture
def settings(home: Path, tmp_path: Path, host: str) -> Settings:
    return Settings(
        home=home,
        api_key=API_KEY,  # type: ignore[arg-type]
        project_dir=tmp_path / "project",
        skills_host_url=host,
    )


async def _chat(
    app: Any, client: httpx.AsyncClient, message: str, *, approve: bool | None
) -> tuple[str, list[dict[str, Any]]]:
    """Send ``message``; answer the one approval (None: skip approvals); all events."""
    sid = await new_session(client)
    r = await client.post(
        "/chat/message",
        json={"message": message, "session_id": sid, "skip_approvals": approve is None},
    )
    assert r.status_code == 202, r.text
    if approve is not None:
        events = await events_until(app, sid, ("approval_needed", "run_error", "run_finished"))
        need = events[-1]
        assert need["type"] == "approval_needed", events
        r = await client.post(
            "/tools/result",
            json={"run_id": r.json()["run_id"], "tool_id": need["tool_id"], "approved": approve},
        )
        assert r.status_code == 200, r.text
    events = await events_until(app, sid, ("run_finished", "run_error"), timeout=15.0)
    assert events[-1]["type"] == "run_finished", events[-1]
    return sid, events


def _tool_result(events: list[dict[str, Any]], name: str) -> str:
    return str(
        next(e for e in events if e["type"] == "tool_result" and e["name"] == name)["result"]
    )


async def _custom_ids(client: httpx.AsyncClient) -> list[str]:
    groups = (await client.get("/models")).json()["groups"]
    return [m["id"] for g in groups if g["provider"] == "custom" for m in g["models"]]


def _add_model_call(**overrides: Any) -> tuple[str, str, str]:
    args = {
        "model_id": "llama3.1:8b",
        "base_url": "http://127.0.0.1:11434/v1",
        "context_window": 8192,
        "max_output_tokens": 2048,
        "api_key": SECRET,
    } | overrides
    return ("tool", "add_custom_model", json.dumps(args))


# -- add_custom_model --------------------------------------------------------


async def test_add_model_approved_adds_and_never_shows_key(
    app: Any, client: httpx.AsyncClient
) -> None:
    prompts: list[str] = []

    def first(messages: list[Any]) -> tuple[str, str, str]:
        prompts.append(str(messages[-1]))
        return _add_model_call()

    install_model(app, scripted(first, "Added it."))
    sid, events = await _chat(app, client, "/add-model", approve=True)
    assert "add_custom_model" in prompts[0]  # the builtin skill's instructions were the prompt
    need = next(e for e in events if e["type"] == "approval_needed")
    assert need["name"] == "add_custom_model" and need["args"]["api_key"] == "[redacted]"
    assert need["args"]["model_id"] == "llama3.1:8b"
    result = _tool_result(events, "add_custom_model")
    assert "Added the custom model 'llama3.1:8b'" in result and "with an API key" in result
    assert "llama3.1:8b" in await _custom_ids(client)
    llm = app.state.container.llm
    assert llm.credentials.stored("custom", "llama3.1:8b") == SECRET  # the tool got the real key
    history = (await client.get("/session/history", params={"session_id": sid})).text
    assert "llama3.1:8b" in history and SECRET not in history
    assert SECRET not in json.dumps(events)
    replay = await app.state.container.events.replay(sid, 0)
    assert SECRET not in json.dumps([e.data for e in replay], default=str)


async def test_add_model_denied_adds_nothing(app: Any, client: httpx.AsyncClient) -> None:
    install_model(app, scripted(_add_model_call(), "Alright."))
    sid, events = await _chat(app, client, "/add-model", approve=False)
    assert "declined" in _tool_result(events, "add_custom_model")
    assert await _custom_ids(client) == []
    assert app.state.container.llm.credentials.stored("custom", "llama3.1:8b") is None
    assert SECRET not in json.dumps(events)


async def test_add_model_refusals_come_back_as_sentences(
    app: Any, client: httpx.AsyncClient
) -> None:
    install_model(app, scripted(_add_model_call(base_url="ftp://x/v1"), "Sorry."))
    _, events = await _chat(app, client, "/add-model", approve=None)
    assert _tool_result(events, "add_custom_model").startswith("Not added: base_url")
    install_model(app, scripted(_add_model_call(max_output_tokens=9000), "Sorry."))
    _, events = await _chat(app, client, "/add-model", approve=None)
    assert "smaller than context_window" in _tool_result(events, "add_custom_model")
    install_model(app, scripted(_add_model_call(model_id="bad id!"), "Sorry."))
    _, events = await _chat(app, client, "/add-model", approve=None)
    assert _tool_result(events, "add_custom_model").startswith("Not added: model_id")
    assert await _custom_ids(client) == []
    install_model(app, scripted(_add_model_call(api_key=None), "Added."))
    await _chat(app, client, "/add-model", approve=None)
    install_model(app, scripted(_add_model_call(api_key=None), "Hm."))
    _, events = await _chat(app, client, "/add-model", approve=None)
    assert "already exists" in _tool_result(events, "add_custom_model")


# -- install_skill and list_skills -------------------------------------------


async def test_install_skill_via_chat(app: Any, client: httpx.AsyncClient) -> None:
    call = ("tool", "install_skill", '{"source": "acme/skills/weather"}')
    install_model(app, scripted(call, "Installed."))
    _, events = await _chat(app, client, "/add-tool acme/skills/weather", approve=True)
    result = _tool_result(events, "install_skill")
    assert "Installed the skill /weather" in result and "report.py" in result
    skills = {s["name"]: s for s in (await client.get("/skills")).json()["skills"]}
    assert skills["weather"]["location"] == "global" and skills["weather"]["has_script"] is True
    install_model(app, scripted(call, "Hm."))  # the same again: a 409 becomes a sentence
    _, events = await _chat(app, client, "/add-tool", approve=None)
    assert "already exists" in _tool_result(events, "install_skill")
    install_model(
        app, scripted(("tool", "install_skill", '{"source": "acme/nope/x"}'), "Not found.")
    )
    _, events = await _chat(app, client, "/add-tool", approve=None)
    assert _tool_result(events, "install_skill").startswith("Not installed: Repository")
    install_model(app, scripted(("tool", "list_skills", "{}"), "Here."))
    _, events = await _chat(app, client, "what skills?", approve=None)
    listed = _tool_result(events, "list_skills")
    assert "/weather (global)" in listed and "/add-model (builtin)" in listed
    assert not any(e["type"] == "approval_needed" for e in events)  # read-only


async def test_install_skill_denied_installs_nothing(app: Any, client: httpx.AsyncClient) -> None:
    install_model(
        app, scripted(("tool", "install_skill", '{"source": "acme/skills/weather"}'), "Ok")
    )
    await _chat(app, client, "/add-tool", approve=False)
    names = [s["name"] for s in (await client.get("/skills")).json()["skills"]]
    assert "weather" not in names


# -- run_skill_script --------------------------------------------------------


async def _install(client: httpx.AsyncClient, name: str) -> None:
    r = await client.post("/skills/install", json={"source": f"acme/skills/{name}"})
    assert r.status_code == 201, r.text


async def test_run_skill_script_output_and_exit_code(
    app: Any, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAMULUS_TEST_SECRET", ENV_SECRET)
    await _install(client, "weather")
    args = {"name": "weather", "args": ["Paris", "--unit=c", "$(touch pwned)"]}
    prompts: list[str] = []

    def first(messages: list[Any]) -> tuple[str, str, str]:
        prompts.append(str(messages[-1]))
        return ("tool", "run_skill_script", json.dumps(args))

    install_model(app, scripted(first, "It is sunny."))
    _, events = await _chat(app, client, "/weather Paris", approve=True)
    assert "run_skill_script" in prompts[0] and "report.py" in prompts[0]
    result = _tool_result(events, "run_skill_script")
    assert result.startswith("report.py exited with code 3.")
    assert "sunny ['Paris', '--unit=c', '$(touch pwned)']" in result  # no shell
    assert "cwd weather" in result and "a warning" in result and "stdin ''" in result
    assert ENV_SECRET not in result and "leak None" in result
    assert not (app.state.container.settings.skills_dir / "weather" / "pwned").exists()


async def test_run_skill_script_denied_does_not_run(
    app: Any, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    folder = tmp_path / "project" / ".skills" / "marker"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: marker\ndescription: Marks.\n---\nGo.\n")
    (folder / "mark.sh").write_text("#!/bin/sh\ntouch ran\n")
    install_model(app, scripted(("tool", "run_skill_script", '{"name": "marker"}'), "Ok"))
    _, events = await _chat(app, client, "/marker", approve=False)
    assert "declined" in _tool_result(events, "run_skill_script")
    assert not (folder / "ran").exists()
    install_model(app, scripted(("tool", "run_skill_script", '{"name": "marker"}'), "Ok"))
    _, events = await _chat(app, client, "/marker", approve=True)
    assert "mark.sh exited with code 0." in _tool_result(events, "run_skill_script")
    assert (folder / "ran").exists()  # the .sh without an executable bit ran through sh


async def test_run_skill_script_timeout_kills(
    app: Any, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(skill_tools, "SCRIPT_TIMEOUT_S", 0.5)
    await _install(client, "slow")
    install_model(app, scripted(("tool", "run_skill_script", '{"name": "slow"}'), "Too slow."))
    began = time.monotonic()
    _, events = await _chat(app, client, "/slow", approve=None)
    assert time.monotonic() - began < 5.0
    result = _tool_result(events, "run_skill_script")
    assert "wait.sh was stopped after 0.5 s" in result
    assert "started" in result and "never" not in result


async def test_run_skill_script_output_truncated(app: Any, client: httpx.AsyncClient) -> None:
    await _install(client, "chatty")
    install_model(app, scripted(("tool", "run_skill_script", '{"name": "chatty"}'), "Ok."))
    _, events = await _chat(app, client, "/chatty", approve=None)
    result = _tool_result(events, "run_skill_script")
    assert "talk.sh exited with code 0." in result
    assert "[output truncated: 100000 bytes, the first 16384 shown]" in result
    assert len(result) < 17_000


async def test_run_skill_script_refusals(
    app: Any, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.sh"
    outside.write_text("#!/bin/sh\ntouch escaped\n")
    folder = tmp_path / "project" / ".skills" / "sneaky"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: sneaky\ndescription: Links out.\n---\nGo.\n")
    (folder / "run.sh").symlink_to(outside)
    cases = [
        ('{"name": "nope"}', "Not run: no skill named 'nope'."),
        ('{"name": "init"}', "Not run: The skill 'init' has no script to run."),
        ('{"name": "sneaky", "script": "other.sh"}', "Not run: 'other.sh' is not a script"),
        ('{"name": "sneaky"}', "Not run: 'run.sh' points outside the skill's folder"),
    ]
    for args, expected in cases:
        install_model(app, scripted(("tool", "run_skill_script", args), "Ok."))
        _, events = await _chat(app, client, "go", approve=None)
        assert _tool_result(events, "run_skill_script").startswith(expected)
        result = next(e for e in events if e["type"] == "tool_result")
        assert result["error"] is True
    assert not (tmp_path / "escaped").exists() and not (folder / "escaped").exists()


def test_choose_script_needs_a_name_when_there_are_several(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    (tmp_path / "b.sh").write_text("echo 2\n")
    skill = Skill("two", "Two.", "global", tmp_path, "", scripts=find_scripts(tmp_path))
    assert "name one with the script argument" in str(skill_tools.choose_script(skill, None))
    assert skill_tools.choose_script(skill, "b.sh") == (tmp_path / "b.sh").resolve()
