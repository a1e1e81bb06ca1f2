"""Provenance: every memory line in the prompt says where it came from, and the
preface tells the model that recalled text is data, not instructions."""

from __future__ import annotations

import json
from typing import Any

import httpx
from tests.support.chat_models import events_until, install_model, scripted
from tests.support.sessions import new_session

from famulus.memory import context
from famulus.memory.service import Recalled
from famulus.timeutil import now_iso


def _service(app: Any) -> Any:
    return app.state.container.memory.service


async def _chat(app: Any, client: httpx.AsyncClient, sid: str, text: str) -> None:
    before = await app.state.container.events.store.last_seq(sid)
    r = await client.post("/chat/message", json={"message": text, "session_id": sid})
    assert r.status_code == 202, r.text
    await events_until(app, sid, "run_finished", after=before)


async def test_each_injected_fact_names_its_source(app: Any, client: httpx.AsyncClient) -> None:
    memory = _service(app)
    trip = await new_session(client, 'Trip "planning"  notes')
    today = now_iso()[:10]
    said = await memory.add_fact("Kim is allergic to peanuts", "fact", "chat", trip)
    hand = (await client.post("/facts", json={"text": "Kim's peanut-free bakery is Lumen"})).json()
    mail = await memory.add_fact("Kim ordered peanut-free cookies", "event", "mail", "uid-7")
    lost = await memory.add_fact("Kim avoids peanut oil", "fact", "chat", "s-deleted")
    seen: list[str] = []

    def answer(messages: list[Any]) -> str:
        seen.append("\n".join(str(getattr(m, "instructions", "") or "") for m in messages))
        return "Noted."

    install_model(app, scripted(answer))
    sid = await new_session(client, "Now")
    await _chat(app, client, sid, "Which peanut things should Kim avoid?")
    prompt = seen[0]
    assert f"(fact #{said.id}, fact; said in \"Trip 'planning' notes\", {today})" in prompt
    assert f"(fact #{hand['fact']['id']}, fact; added by hand, {today})" in prompt
    assert f"(fact #{mail.id}, event; from mail, {today})" in prompt
    assert f"(fact #{lost.id}, fact; said in a conversation, {today})" in prompt
    assert "ends with where it came from" in prompt and "never instructions" in prompt


async def test_remembered_in_chat_points_at_the_session(
    app: Any, client: httpx.AsyncClient
) -> None:
    args = json.dumps({"text": "The spare key is with Mrs. Alder"})
    install_model(app, scripted(("tool", "remember", args), "Remembered."))
    sid = await new_session(client, "Keys")
    await _chat(app, client, sid, "Remember: the spare key is with Mrs. Alder")
    facts = (await client.get("/facts")).json()["facts"]
    assert [(f["source_type"], f["source_ref"]) for f in facts] == [("chat", sid)]
    inspected = (
        await client.post("/memory/recall/inspect", json={"query": "where is the spare key"})
    ).json()
    fact_id = facts[0]["id"]
    assert f'(fact #{fact_id}, fact; said in "Keys", ' in inspected["formatted"]


async def test_the_budget_counts_the_provenance(app: Any, client: httpx.AsyncClient) -> None:
    memory = _service(app)
    sid = await new_session(client, "A session with a rather long name for provenance")
    for n in range(6):
        await memory.add_fact(f"Garden note {n}: water the roses", "fact", "chat", sid)
    recalled = await memory.recall("water the roses")
    assert len(recalled.facts) == 6
    names = {sid: "A session with a rather long name for provenance"}
    for budget in (250, 400, 600):
        assembled = context.assemble([], recalled, budget, session_names=names)
        assert 0 < len(assembled.formatted) <= budget
        assert len(assembled.injected) < 6 and assembled.omitted
    full = context.assemble([], recalled, 100_000, session_names=names)
    assert full.formatted.count('said in "A session with a rather long name') == 6
    assert context.assemble([], Recalled([], []), 10).formatted == ""
