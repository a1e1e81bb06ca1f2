"""Two-way Telegram end to end: a real ``famulus serve``, a scripted model and a
fake Bot API (tests/support/fake_telegram.py) on loopback.

Each test talks from its own chat id, so the tests share one server. The last
test restarts that server.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.support.fake_telegram import FakeTelegram, visible_text
from tests.support.live import ServerProcess
from tests.support.scripted_openai import ScriptedOpenAI, Turn

KEY = "e2e-telegram-key-abcdefghijklmnopqrstuvwxyz01"
AUTH = {"Authorization": f"Bearer {KEY}"}
MODEL = "scripted-model"
TOKEN = "4242:AAFakeTelegramTokenForTheE2ETests_xyz"


class Live:
    """The module's server; the restart test replaces it."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.server.base_url, headers=AUTH, timeout=10)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI([MODEL]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def bot() -> Iterator[FakeTelegram]:
    fake = FakeTelegram(TOKEN).start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model: ScriptedOpenAI, bot: FakeTelegram
) -> Iterator[Live]:
    home = tmp_path_factory.mktemp("telegram-e2e") / "home"
    skill = home / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greet\ndescription: Greets.\n---\nGreet the person warmly.\n"
    )
    env = {
        "FAMULUS_API_KEY": KEY,
        "FAMULUS_TELEGRAM_BASE_URL": bot.url,
        "FAMULUS_LOG_LEVEL": "info",
    }
    holder = Live(ServerProcess(home, env=env).start())
    with holder.http() as http:
        r = http.post(
            "/models/custom",
            json={
                "model_id": MODEL,
                "base_url": model.base_url,
                "context_window": 8000,
                "max_output_tokens": 500,
                "vision": True,
            },
        )
        assert r.status_code == 201, r.text
        assert http.patch("/config", json={"chat_model": MODEL}).status_code == 200
        r = http.post("/services/telegram/connect", json={"api_key": TOKEN})
        assert r.status_code == 200, r.text
        wait_status(http, "polling")
    yield holder
    holder.server.stop()


@pytest.fixture
def http(live: Live, model: ScriptedOpenAI) -> Iterator[httpx.Client]:
    model.reset()
    with live.http() as client:
        yield client


def wait_status(http: httpx.Client, status: str, timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    state: dict[str, Any] = {}
    while time.monotonic() < deadline:
        state = http.get("/channels/telegram").json()
        if state["status"] == status:
            return state
        time.sleep(0.05)
    raise AssertionError(f"the channel did not become {status}: {state}")


def pair(http: httpx.Client, bot: FakeTelegram, chat_id: int) -> None:
    """The owner approves ``chat_id`` the way a person would."""
    bot.message(chat_id, "hello?")
    code = code_in(bot.wait_text(chat_id, "give them this code").text)
    r = http.post("/channels/telegram/pairings", json={"code": code.lower()})
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "approved", "chat_id": chat_id, "title": "Ada"}
    bot.wait_text(chat_id, "Your chat is approved")


def code_in(text: str) -> str:
    found = re.search(r"\n([A-Z2-9]{8})\n", text)
    assert found, text
    return found.group(1)


def answered(bot: FakeTelegram, chat_id: int, text: str, timeout: float = 15.0) -> Any:
    """The bot's message showing exactly ``text`` (when it does)."""
    return bot.wait(
        lambda: next(
            (
                s
                for s in bot.chat_messages(chat_id)
                if visible_text(s.text, s.parse_mode)[0] == text
            ),
            None,
        ),
        timeout,
    )


def test_a_stranger_gets_a_code_and_nothing_reaches_the_agent(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    bot.message(501, "please run rm -rf /")
    first = bot.wait_text(501, "give them this code")
    code = code_in(first.text)
    bot.message(501, "again")  # within the minute: no second answer, no new code
    state = wait_status(http, "polling")
    assert state["bot_username"] == "famulus_test_bot"
    mine = [p for p in state["pairings"] if p["chat_id"] == 501]
    assert [p["code"] for p in mine] == [code] and mine[0]["title"] == "Ada"
    time.sleep(0.5)
    assert len(bot.chat_messages(501)) == 1 and model.requests == []
    # A stranger's button press does nothing either.
    bot.press(501, first.message_id, "ap:whatever:y")
    bot.wait(lambda: bot.calls_of("answerCallbackQuery"))
    assert bot.calls_of("answerCallbackQuery")[-1]["text"] == "Not allowed."

    assert http.post("/channels/telegram/pairings", json={"code": "NOPE2345"}).status_code == 404
    r = http.post("/channels/telegram/pairings", json={"code": f" {code.lower()} "})
    assert r.status_code == 200, r.text
    bot.wait_text(501, "Your chat is approved")
    state = http.get("/channels/telegram").json()
    assert not [p for p in state["pairings"] if p["chat_id"] == 501]
    assert [c["title"] for c in state["chats"] if c["chat_id"] == 501] == ["Ada"]

    model.push(Turn(text="Hello from famulus."))
    bot.message(501, "hi there")
    answered(bot, 501, "Hello from famulus.")
    assert model.requests[-1]["messages"][-1]["content"] == "hi there"


def test_deny_and_remove(http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI) -> None:
    bot.message(509, "let me in")
    code = code_in(bot.wait_text(509, "give them this code").text)
    assert http.delete(f"/channels/telegram/pairings/{code}").json() == {"status": "denied"}
    assert http.delete(f"/channels/telegram/pairings/{code}").status_code == 404
    pair(http, bot, 510)
    assert http.delete("/channels/telegram/chats/510").json() == {"status": "removed"}
    assert http.delete("/channels/telegram/chats/510").status_code == 404
    model.push(Turn(text="Should never be said."))
    update = bot.message(510, "still there?")
    # Handled (the offset moved past it), but as a stranger's: within a minute
    # of its last code the chat is not answered at all, and the model never asked.
    bot.wait(lambda: any(int(p["offset"]) > update for p in bot.calls_of("getUpdates")))
    assert len(bot.chat_messages(510)) == 2 and model.requests == []
    assert 510 not in [c["chat_id"] for c in http.get("/channels/telegram").json()["chats"]]


def test_streamed_answer_is_edited_in_place_as_html(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 502)
    words = " ".join(f"w{i}" for i in range(24))
    model.push(Turn(text=f"**Bold** and `a<b` then {words}", chunk_delay=0.07))
    bot.message(502, "stream please")
    shown = answered(bot, 502, f"Bold and a<b then {words}")
    assert shown.parse_mode == "HTML" and shown.edits >= 1
    assert shown.text.startswith("<b>Bold</b> and <code>a&lt;b</code> then w0")
    assert len(bot.chat_messages(502)) == 3  # code, welcome, this answer (one message)


def test_a_long_answer_is_split(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 503)
    text = " ".join(f"word{i:04d}" for i in range(900))  # 8,099 characters
    model.push(Turn(text=text))
    bot.message(503, "a long one")
    bot.wait(lambda: any(t.endswith("word0899") for t in bot.texts(503)))
    parts = bot.texts(503)[2:]
    assert len(parts) == 2 and all(len(p) <= 4096 for p in parts)
    assert " ".join(parts) == text


def test_a_message_during_a_run_is_queued_and_answered_below_it(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 513)
    model.push(
        Turn(text="Looking.", tool_calls=[("current_time", {})], delay=1.0),
        Turn(text="Answer to both."),
    )
    bot.message(513, "first")
    bot.wait(lambda: model.requests)  # the run is waiting for the model
    bot.message(513, "and second")
    answered(bot, 513, "Answer to both.")
    assert bot.texts(513)[2:] == [
        "Noted — I'll take this in at my next step.",
        "Looking.",
        "Answer to both.",
    ]
    second = model.requests[1]["messages"]
    assert any(m["role"] == "user" and m["content"] == "and second" for m in second)


def test_new_and_sessions(http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI) -> None:
    pair(http, bot, 504)
    model.push(Turn(text="First answer."))
    bot.message(504, "one")
    answered(bot, 504, "First answer.")
    first = chat_state(http, 504)["session_id"]
    bot.message(504, "/new")
    bot.wait_text(504, "Started a new session: Telegram: Ada")
    second = chat_state(http, 504)["session_id"]
    assert second != first
    model.push(Turn(text="Second answer."))
    bot.message(504, "two")
    answered(bot, 504, "Second answer.")
    history = http.get("/session/history", params={"session_id": second}).json()["messages"]
    assert [m["content"] for m in history] == ["two", "Second answer."]

    bot.message(504, "/sessions")
    listing = bot.wait_text(504, "Your sessions:")
    assert visible_text(listing.text, None)[0].count("Telegram: Ada") == 2
    assert "— current" in listing.text.split("\n")[1]
    targets = [b[0]["callback_data"] for b in listing.buttons or []]
    assert targets == [f"ss:{second}", f"ss:{first}"]
    bot.press(504, listing.message_id, f"ss:{first}")
    bot.wait(lambda: chat_state(http, 504)["session_id"] == first)
    bot.message(504, "/sessions 1")
    bot.wait(lambda: chat_state(http, 504)["session_id"] == second)
    bot.message(504, "/sessions 9")
    bot.wait_text(504, "Choose a number from 1 to 2.")
    bot.message(504, "/sessions ²")  # a digit, but no number
    bot.wait(lambda: sum("Choose a number" in t for t in bot.texts(504)) == 2)


def chat_state(http: httpx.Client, chat_id: int) -> dict[str, Any]:
    chats = http.get("/channels/telegram").json()["chats"]
    return next(c for c in chats if c["chat_id"] == chat_id)  # type: ignore[no-any-return]


def test_cancel(http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI) -> None:
    pair(http, bot, 505)
    model.push(Turn(text=" ".join(f"w{i}" for i in range(300)), chunk_delay=0.05))
    bot.message(505, "go on and on")
    bot.wait_text(505, "w0 w1")
    bot.message(505, "/cancel")
    bot.wait_text(505, "Cancelled.")
    ended = bot.wait_text(505, "w0 w1")
    bot.wait(lambda: visible_text(ended.text, ended.parse_mode)[0].endswith("Cancelled."))
    assert "w299" not in ended.text
    bot.message(505, "/cancel")
    bot.wait_text(505, "Nothing is running.")


def test_approval_with_buttons(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 506)
    rule = "Always answer from Telegram briefly."
    model.push(
        Turn(tool_calls=[("update_directives", {"mode": "append", "text": rule})]),
        Turn(text="Rule added."),
    )
    bot.message(506, "add a rule")
    asked = bot.wait_text(506, "May I use update_directives?")
    assert asked.buttons is not None
    approve, deny = asked.buttons[0]
    assert (approve["text"], deny["text"]) == ("Approve", "Deny")
    bot.press(506, asked.message_id, approve["callback_data"])
    answered(bot, 506, "Rule added.")
    assert rule in http.get("/directives").json()["content"]
    bot.wait(lambda: bot.texts(506)[2] == "✅ Approved: update_directives")
    assert {"callback_query_id": bot.calls_of("answerCallbackQuery")[-1]["callback_query_id"],
            "text": "Approved"} == bot.calls_of("answerCallbackQuery")[-1]  # fmt: skip
    # Pressed again: the request is no longer open.
    bot.press(506, asked.message_id, approve["callback_data"])
    bot.wait(lambda: bot.calls_of("answerCallbackQuery")[-1]["text"] != "Approved")
    assert bot.calls_of("answerCallbackQuery")[-1]["text"] == "This request is no longer open."


def test_an_approval_made_moot_loses_its_buttons(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 514)
    model.push(Turn(tool_calls=[("update_directives", {"mode": "append", "text": "Never."})]))
    bot.message(514, "add a rule")
    asked = bot.wait_text(514, "May I use update_directives?")
    bot.message(514, "/cancel")
    bot.wait(lambda: bot.chat_messages(514)[2].buttons is None)
    assert bot.texts(514)[2] == "No longer needed: update_directives"
    assert "Never." not in http.get("/directives").json()["content"]
    bot.press(514, asked.message_id, "ap:gone:y")
    bot.wait(lambda: bot.calls_of("answerCallbackQuery")[-1]["text"] != "Approved")
    assert bot.calls_of("answerCallbackQuery")[-1]["text"] == "This request is no longer open."


def test_a_photo_becomes_an_image(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 507)
    data = b"\xff\xd8\xff\xe0fake-jpeg-bytes"
    model.push(Turn(text="A nice photo."))
    bot.photo(507, data, caption="what is this?")
    answered(bot, 507, "A nice photo.")
    content = model.requests[-1]["messages"][-1]["content"]
    kinds = {part["type"]: part for part in content}
    assert kinds["text"]["text"] == "what is this?"
    assert kinds["image_url"]["image_url"]["url"] == (
        "data:image/jpeg;base64," + base64.b64encode(data).decode()
    )


def test_skills_run_as_commands(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 508)
    model.push(Turn(text="Hello, Bob!"))
    bot.message(508, "/greet Bob")
    answered(bot, 508, "Hello, Bob!")
    assert "Greet the person warmly." in str(model.requests[-1]["messages"])
    bot.message(508, "/nosuchskill")
    bot.wait_text(508, "Unknown skill '/nosuchskill'")
    bot.message(508, "/help")
    bot.wait_text(508, "/sessions — list your sessions")
    assert len(model.requests) == 1


def test_a_refused_token_shows_as_disconnected(
    live: Live, http: httpx.Client, bot: FakeTelegram
) -> None:
    bot.revoke()
    try:
        state = wait_status(http, "error")
        assert "HTTP 401" in state["reason"] and TOKEN not in state["reason"]
        services = {s["id"]: s for s in http.get("/services").json()["services"]}
        assert services["telegram"]["connected"] is False
        assert services["telegram"]["key_hint"]  # the token is still stored
        polls = len(bot.calls_of("getUpdates"))
        time.sleep(1.0)
        assert len(bot.calls_of("getUpdates")) == polls  # no retry loop
        assert http.get("/health").status_code == 200
    finally:
        bot.revoke(False)
    r = http.post("/services/telegram/connect", json={"api_key": TOKEN})
    assert r.status_code == 200
    wait_status(http, "polling")
    services = {s["id"]: s for s in http.get("/services").json()["services"]}
    assert services["telegram"]["connected"] is True
    assert TOKEN not in live.server.output()


def test_passing_trouble_is_retried(
    http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 512)
    bot.failing_polls = 2
    bot.revoke(False)  # wakes the waiting long poll, which then fails
    state = wait_status(http, "retrying")
    assert "Bad Gateway" in state["reason"] and "trying again in" in state["reason"]
    model.push(Turn(text="Still here."))
    bot.message(512, "are you there?")
    answered(bot, 512, "Still here.", timeout=20)  # after a 1 s and a 2 s wait
    assert http.get("/channels/telegram").json()["status"] == "polling"


def test_a_restart_keeps_the_offset(
    live: Live, http: httpx.Client, bot: FakeTelegram, model: ScriptedOpenAI
) -> None:
    pair(http, bot, 511)
    model.push(Turn(text="Before the restart."))
    bot.message(511, "before")
    answered(bot, 511, "Before the restart.")
    sent = len(bot.calls_of("sendMessage"))
    live.server.stop()
    live.server = ServerProcess(live.server.home, env=live.server.extra_env).start()
    with live.http() as again:
        wait_status(again, "polling")
    last = bot.updates[-1]["update_id"]
    bot.wait(lambda: any(int(p["offset"]) == last + 1 for p in bot.calls_of("getUpdates")[-2:]))
    assert len(bot.calls_of("sendMessage")) == sent  # nothing answered twice
    model.push(Turn(text="After the restart."))
    bot.message(511, "after")
    answered(bot, 511, "After the restart.")
    assert [t for t in bot.texts(511) if t.endswith("restart.")] == [
        "Before the restart.",
        "After the restart.",
    ]
