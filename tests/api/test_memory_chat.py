"""Memory in the chat: the profile and recalled facts reach the model's request,
access events are recorded, and the forget tool asks for approval."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from tests.support.chat_models import events_until, install_model, scripted
from tests.support.sessions import new_session


def _capturing(seen: list[str], tool: tuple[str, str] | None = None) -> FunctionModel:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        text = [info.instructions or ""]
        for m in messages:
            text.append(str(getattr(m, "instructions", "") or ""))
            text.extend(str(getattr(p, "content", "")) for p in getattr(m, "parts", []))
        seen.append("\n".join(text))
        if tool is not None and len(seen) == 1:
            yield {0: DeltaToolCall(name=tool[0], json_args=tool[1], tool_call_id="call_1")}
            return
        yield "Noted."

    return FunctionModel(stream_function=stream)


async def test_profile_and_recalled_facts_reach_the_model(
    app: Any, client: httpx.AsyncClient
) -> None:
    await client.post("/memory/profile", json={"kind": "name", "summary": "Goes by Robbie"})
    fact = (await client.post("/facts", json={"text": "Robbie's dentist is Dr. Okafor"})).json()
    await client.post("/facts", json={"text": "The boiler was serviced in 2024"})
    seen: list[str] = []
    install_model(app, _capturing(seen))
    sid = await new_session(client)
    r = await client.post(
        "/chat/message",
        json={"message": "When is my dentist appointment with Okafor?", "session_id": sid},
    )
    assert r.status_code == 202, r.text
    await events_until(app, sid, "run_finished")
    prompt = seen[0]
    assert "Goes by Robbie" in prompt
    assert "Robbie's dentist is Dr. Okafor" in prompt
    assert "boiler" not in prompt
    access = (await client.get("/memory/access")).json()["events"]
    actions = {(e["owner_id"], e["action"]) for e in access}
    assert (fact["fact"]["id"], "injected") in actions and (
        fact["fact"]["id"],
        "retrieved",
    ) in actions
    assert (await client.get(f"/facts/{fact['fact']['id']}")).json()["fact"]["access_count"] == 1


async def test_memory_disabled_means_nothing_injected(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/memory/profile", json={"kind": "name", "summary": "Goes by Robbie"})
    await app.state.container.core.kv.set("config.memory_enabled", False)
    seen: list[str] = []
    install_model(app, _capturing(seen))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "hi", "session_id": sid})
    await events_until(app, sid, "run_finished")
    assert "Robbie" not in seen[0]


async def test_forget_tool_needs_approval(app: Any, client: httpx.AsyncClient) -> None:
    fact = (await client.post("/facts", json={"text": "Old locker code 4411"})).json()["fact"]
    seen: list[str] = []
    install_model(app, _capturing(seen, ("forget", f'{{"fact_id": {fact["id"]}}}')))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "forget my locker code", "session_id": sid})
    events = await events_until(app, sid, ("approval_needed", "run_finished", "run_error"))
    approval = next(e for e in events if e["type"] == "approval_needed")
    assert approval["name"] == "forget"
    assert (await client.get(f"/facts/{fact['id']}")).status_code == 200  # not before approval
    r = await client.post(
        "/tools/result",
        json={"run_id": approval["run_id"], "tool_id": approval["tool_id"], "approved": True},
    )
    assert r.status_code == 200, r.text
    await events_until(app, sid, "run_finished")
    assert (await client.get(f"/facts/{fact['id']}")).status_code == 404


async def test_remember_and_recall_tools(app: Any) -> None:
    memory = app.state.container.memory
    reading, writing = await memory.toolsets()
    assert reading.id == "read-only:memory"
    assert set(reading.tools) == {"recall", "search_conversations"}
    assert set(writing.tools) == {"remember", "forget"}
    toolset = writing
    toolset.tools["recall"] = reading.tools["recall"]
    assert toolset.tools["forget"].requires_approval is True
    assert "Remembered" in await toolset.tools["remember"].function("Mum's birthday is 3 May")
    assert "Already known" in await toolset.tools["remember"].function("Mum's birthday is 3 May")
    assert "3 May" in await toolset.tools["recall"].function("when is mum's birthday")


async def test_remember_keeps_provenance(app: Any, client: httpx.AsyncClient) -> None:
    memory = app.state.container.memory
    _, writing = await memory.toolsets()
    remember = writing.tools["remember"].function
    await remember("Dentist every March at Dr. Okafor", "event", "calendar", "uid-42")
    await remember("Works at the harbour office", "fact", "manual")  # not claimable: chat
    facts = {f["text"]: f for f in (await client.get("/facts")).json()["facts"]}
    dentist = facts["Dentist every March at Dr. Okafor"]
    assert (dentist["source_type"], dentist["source_ref"]) == ("calendar", "uid-42")
    assert facts["Works at the harbour office"]["source_type"] == "chat"


async def test_session_sources_name_what_the_agent_consulted(
    app: Any, client: httpx.AsyncClient
) -> None:
    await client.post("/facts", json={"text": "The spare key is under the blue pot"})
    seen: list[str] = []
    install_model(app, _capturing(seen, ("recall", '{"query": "spare key"}')))
    sid = await new_session(client)
    assert (await client.get("/session", params={"session_id": sid})).json()["sources"] == []
    await client.post("/chat/message", json={"message": "Where is the key?", "session_id": sid})
    first = await events_until(app, sid, "run_finished")
    brief = (await client.get("/session", params={"session_id": sid})).json()
    assert brief == {"session_id": sid, "name": "t", "sources": ["memory"]}
    listed = (await client.get("/sessions")).json()["sessions"]
    assert next(s for s in listed if s["session_id"] == sid)["sources"] == ["memory"]
    # A second use does not repeat it.
    seen.clear()
    await client.post("/chat/message", json={"message": "And again?", "session_id": sid})
    await events_until(app, sid, "run_finished", after=first[-1]["_seq"])
    assert (await client.get("/session", params={"session_id": sid})).json()["sources"] == [
        "memory"
    ]


async def test_sources_count_only_tools_that_succeeded(app: Any, client: httpx.AsyncClient) -> None:
    """A denied tool and a recall that found nothing draw on no source."""
    fact = (await client.post("/facts", json={"text": "Parking permit expires in May"})).json()
    sid = await new_session(client)
    install_model(app, _capturing([], ("forget", f'{{"fact_id": {fact["fact"]["id"]}}}')))
    await client.post("/chat/message", json={"message": "Forget it", "session_id": sid})
    events = await events_until(app, sid, "approval_needed")
    ask = next(e for e in events if e["type"] == "approval_needed")
    await client.post(
        "/tools/result",
        json={"run_id": ask["run_id"], "tool_id": ask["tool_id"], "approved": False},
    )
    done = await events_until(app, sid, "run_finished")
    assert (await client.get("/session", params={"session_id": sid})).json()["sources"] == []
    install_model(app, _capturing([], ("recall", '{"query": "zebra migration"}')))
    await client.post("/chat/message", json={"message": "Zebras?", "session_id": sid})
    await events_until(app, sid, "run_finished", after=done[-1]["_seq"])
    assert (await client.get("/session", params={"session_id": sid})).json()["sources"] == []


async def test_sources_include_what_the_research_subagent_used(
    app: Any, client: httpx.AsyncClient
) -> None:
    await client.post("/facts", json={"text": "The boat is moored at pier 7"})
    # The same scripted model serves the main agent and the research sub-agent,
    # in this order: main asks research; research recalls, then answers; main answers.
    model = scripted(
        ("tool", "research", '{"question": "Where is the boat?"}'),
        ("tool", "recall", '{"query": "boat pier"}'),
        "It is at pier 7.",
        "At pier 7.",
    )
    install_model(app, model)
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "Where is the boat?", "session_id": sid})
    events = await events_until(app, sid, "run_finished")
    deep = [e for e in events if e["type"] == "tool_call" and e["depth"] == 1]
    assert [e["name"] for e in deep] == ["recall"], [e["type"] for e in events]
    assert (await client.get("/session", params={"session_id": sid})).json()["sources"] == [
        "memory"
    ]


@pytest.mark.parametrize("text", ["", "   ", "x" * 10_001])
async def test_bad_remember_input_is_a_tool_result_not_a_crash(
    app: Any, client: httpx.AsyncClient, text: str
) -> None:
    import json

    install_model(app, _capturing([], ("remember", json.dumps({"text": text}))))
    sid = await new_session(client)
    await client.post("/chat/message", json={"message": "note it", "session_id": sid})
    events = await events_until(app, sid, ("run_finished", "run_error"))
    assert events[-1]["type"] == "run_finished"
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["result"].startswith("Not remembered")
    assert (await client.get("/stats")).json()["fact_count"] == 0


async def test_an_empty_memory_embeds_no_query(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing to compare with: recall skips the query embedding (5-10 ms of CPU
    per chat turn) and still runs the full-text side."""
    service = app.state.container.memory.service

    async def no_embedding(texts: Any) -> Any:
        raise AssertionError("the query was embedded")

    monkeypatch.setattr(service.space.embedder, "embed", no_embedding)
    recalled = await service.recall("when is my dentist appointment")
    assert recalled.facts == [] and recalled.observations == []


async def test_a_recall_is_recorded_in_one_transaction(
    app: Any, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The access events and the injected facts' access counts are one write, so a
    crash between them cannot leave the log and the counts disagreeing."""
    fact = await client.post("/facts", json={"text": "The spare key is under the blue pot"})
    fact_id = fact.json()["fact"]["id"]
    sid = await new_session(client)
    facade = app.state.container.memory
    db = facade.service.db
    real_write = db.write
    writes: list[Any] = []

    async def counting(fn: Any) -> Any:
        writes.append(fn)
        return await real_write(fn)

    monkeypatch.setattr(db, "write", counting)
    formatted = await facade.prompt_context(sid, "where is the spare key")
    monkeypatch.undo()
    assert "blue pot" in formatted
    assert len(writes) == 1
    access = (await client.get("/memory/access")).json()["events"]
    assert {(e["owner_id"], e["action"]) for e in access} >= {
        (fact_id, "retrieved"),
        (fact_id, "injected"),
    }
    assert (await client.get(f"/facts/{fact_id}")).json()["fact"]["access_count"] == 1
