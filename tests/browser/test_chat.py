"""The chat view in a real browser against a real server and the scripted model:
streaming, Markdown that runs nothing, the sessions sidebar, tool calls with the
research sub-agent nested, approvals, cancel, background, queued messages, skill
completion, the context meter, and recovery from a server restart."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable
from pathlib import Path

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from tests.browser.conftest import Famulus, assistant_texts, open_session, say
from tests.support.browser import all_of, console_errors, text_of, wait_for, wait_text, wait_until
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.tcp_proxy import TcpProxy

from famulus.store.db import Database
from famulus.store.sessions import SessionStore


def wait_until_true(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.1)


def test_answer_streams_as_markdown_and_enter_sends(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "streaming")
    model.push(Turn(text="Hello **world** from the scripted model", chunk_delay=0.15))
    box = wait_for(signed_in, "#message")
    box.send_keys("line one")
    box.send_keys(Keys.SHIFT, Keys.ENTER)  # a new line, not a send
    box.send_keys("line two")
    assert all_of(signed_in, "#transcript .msg.user") == []
    box.send_keys(Keys.ENTER)
    wait_for(signed_in, "#transcript .msg.assistant.streaming")  # token by token
    wait_text(signed_in, "#transcript .msg.assistant strong", "world")
    wait_until(signed_in, "!document.querySelector('#transcript .streaming')")
    assert assistant_texts(signed_in) == ["Hello world from the scripted model"]
    assert text_of(signed_in, "#transcript .msg.user") == "line one\nline two"
    assert model.requests[-1]["messages"][-1]["content"] == "line one\nline two"
    assert box.get_attribute("value") == ""
    assert console_errors(signed_in) == []


def test_model_output_runs_no_script(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "hostile")
    console_errors(signed_in)
    hostile = (
        "<img src=x onerror=alert(1)> <script>alert(2)</script> "
        '[click me](javascript:alert(3)) <a href="javascript:alert(4)">and me</a> '
        '<iframe src="javascript:alert(5)"></iframe> <b onmouseover=alert(6)>bold</b>'
    )
    model.push(Turn(text=hostile))
    say(signed_in, "be hostile")
    wait_text(signed_in, "#transcript .msg.assistant", "click me")
    wait_until(signed_in, "!document.querySelector('#transcript .streaming')")
    bubble = signed_in.find_element(By.CSS_SELECTOR, "#transcript .msg.assistant")
    dangerous = signed_in.execute_script(
        "return [...arguments[0].querySelectorAll('*')].filter(e =>"
        " ['SCRIPT', 'IFRAME', 'IMG'].includes(e.tagName) || [...e.attributes].some(a =>"
        " a.name.startsWith('on') || /javascript:/i.test(a.value))).map(e => e.outerHTML)",
        bubble,
    )
    assert dangerous == []
    for link in bubble.find_elements(By.TAG_NAME, "a"):
        link.click()  # no href: goes nowhere, runs nothing
    try:
        signed_in.switch_to.alert.dismiss()
        raise AssertionError("an alert ran")
    except NoAlertPresentException:
        pass
    assert len(signed_in.window_handles) == 1
    # raw HTML is shown as the text it is, never parsed (so not even blocked by CSP)
    assert "<img src=x onerror=alert(1)>" in bubble.text
    assert all_of(signed_in, "#transcript .msg.assistant img") == []
    assert console_errors(signed_in) == []


def test_links_open_safely(signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI) -> None:
    open_session(signed_in, famulus, "links")
    model.push(Turn(text="See [the docs](https://example.org/docs) or `code`."))
    say(signed_in, "link please")
    link = wait_for(signed_in, "#transcript .msg.assistant a")
    assert link.get_attribute("href") == "https://example.org/docs"
    assert link.get_attribute("rel") == "noopener noreferrer"
    assert link.get_attribute("target") == "_blank"
    assert text_of(signed_in, "#transcript .msg.assistant code") == "code"


def test_code_blocks_are_highlighted(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "code")
    model.push(Turn(text="Here:\n\n```python\ndef double(x):\n    return 2 * x\n```\n"))
    say(signed_in, "some code")
    keyword = wait_for(signed_in, "#transcript pre code.hljs .hljs-keyword")
    assert keyword.text == "def"
    assert "return 2 * x" in text_of(signed_in, "#transcript pre code")
    assert console_errors(signed_in) == []


def test_sessions_new_rename_archive_restore_delete(signed_in: WebDriver, famulus: Famulus) -> None:
    wait_for(signed_in, "#new-session").click()
    wait_text(signed_in, "#session-name", "New session")
    sid = signed_in.current_url.split("#/chat/")[1]
    wait_for(signed_in, f'.session-list a.active[data-sid="{sid}"]')

    signed_in.find_element(By.CSS_SELECTOR, "#rename").click()
    field = wait_for(signed_in, "#rename-input")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("Trip planning", Keys.ENTER)
    wait_text(signed_in, "#session-name", "Trip planning")
    wait_text(signed_in, f'.session-list a[data-sid="{sid}"]', "Trip planning")
    assert (
        famulus.http.get("/session", params={"session_id": sid}).json()["name"] == "Trip planning"
    )

    signed_in.find_element(By.CSS_SELECTOR, "#archive").click()
    wait_for(signed_in, "#restore")
    wait_until(signed_in, f"!document.querySelector('.session-list a[data-sid=\"{sid}\"]')")
    signed_in.find_element(By.CSS_SELECTOR, "#toggle-archived").click()
    wait_for(signed_in, f'.session-list a[data-sid="{sid}"]')
    signed_in.find_element(By.CSS_SELECTOR, "#restore").click()
    wait_for(signed_in, "#archive")
    signed_in.find_element(By.CSS_SELECTOR, "#toggle-archived").click()  # back to active
    wait_for(signed_in, f'.session-list a[data-sid="{sid}"]')

    signed_in.find_element(By.CSS_SELECTOR, "#delete").click()
    wait_for(signed_in, "dialog[open] [data-confirm]").click()
    wait_until(signed_in, f"!location.hash.includes('{sid}')")
    assert famulus.http.get("/session", params={"session_id": sid}).status_code == 404


def test_tool_calls_are_compact_and_research_is_nested(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "research")
    model.push(
        Turn(tool_calls=[("research", {"question": "what is famulus?"})]),
        Turn(tool_calls=[("current_time", {})]),  # the sub-agent
        Turn(text="Sub-agent finding."),
        Turn(text="Main answer."),
    )
    say(signed_in, "research it")
    wait_text(signed_in, "#transcript > .msg.assistant", "Main answer.")
    outer = signed_in.find_element(By.CSS_SELECTOR, "#transcript > details.tool")
    assert "research" in outer.find_element(By.TAG_NAME, "summary").text
    assert outer.get_attribute("open") is None  # compact until expanded
    outer.find_element(By.TAG_NAME, "summary").click()
    nested = outer.find_element(By.CSS_SELECTOR, ".nested")
    wait_until(
        signed_in, "document.querySelector('#transcript > details.tool .nested details.tool')"
    )
    assert "current_time" in nested.find_element(By.CSS_SELECTOR, "details.tool summary").text
    assert "Sub-agent finding." in nested.text
    assert assistant_texts(signed_in) == ["Main answer."]


def test_approve_and_deny_a_tool_call(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "approvals")
    model.push(
        Turn(tool_calls=[("update_directives", {"mode": "append", "text": "Be brief."})]),
        Turn(text="Saved."),
    )
    say(signed_in, "remember to be brief")
    wait_for(signed_in, ".approval button.approve").click()
    wait_text(signed_in, ".approval .approval-state", "Approved")
    wait_text(signed_in, "#transcript > .msg.assistant", "Saved.")
    assert "Be brief." in famulus.http.get("/directives").json()["content"]

    model.push(
        Turn(tool_calls=[("update_directives", {"mode": "append", "text": "Shout."})]),
        Turn(text="Not saved then."),
    )
    say(signed_in, "now shout")
    wait_until(signed_in, "document.querySelectorAll('.approval').length === 2")
    card = all_of(signed_in, ".approval")[1]
    card.find_element(By.CSS_SELECTOR, ".note").send_keys("not today")
    card.find_element(By.CSS_SELECTOR, "button.deny").click()
    wait_until(
        signed_in,
        "[...document.querySelectorAll('.approval-state')].some(e => e.textContent === 'Denied')",
    )
    wait_text(signed_in, "#transcript", "Not saved then.")
    assert "Shout." not in famulus.http.get("/directives").json()["content"]
    tool_messages = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert "not today" in tool_messages[-1]["content"]


def test_a_waiting_approval_survives_a_reload(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "approval reload")
    model.push(
        Turn(
            text="I will note that.",
            tool_calls=[("update_directives", {"mode": "append", "text": "Use metric."})],
        ),
        Turn(text="Noted."),
    )
    say(signed_in, "use metric units")
    wait_for(signed_in, ".approval button.approve")
    signed_in.refresh()  # history, then the run still going, drawn once
    wait_for(signed_in, ".approval button.approve").click()
    wait_text(signed_in, "#transcript", "Noted.")
    assert len(all_of(signed_in, ".approval")) == 1
    assert assistant_texts(signed_in) == ["I will note that.", "Noted."]
    assert len(all_of(signed_in, "#transcript > details.tool")) == 1
    assert "Use metric." in famulus.http.get("/directives").json()["content"]


def test_escape_cancels_a_slow_run(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "cancel")
    model.push(Turn(text=" ".join(f"w{i}" for i in range(200)), chunk_delay=0.1))
    say(signed_in, "talk a lot")
    # a few words in, so the text kept at the cancel is known to start "w0 w1"
    wait_text(signed_in, "#transcript .msg.assistant.streaming", "w2")
    assert signed_in.find_element(By.CSS_SELECTOR, "#cancel").is_enabled()
    signed_in.find_element(By.CSS_SELECTOR, "body").send_keys(Keys.ESCAPE)
    wait_text(signed_in, "#transcript .notice", "Cancelled.")
    wait_until(signed_in, "document.querySelector('#cancel').disabled")
    kept = assistant_texts(signed_in)
    assert len(kept) == 1 and kept[0].startswith("w0 w1") and "w199" not in kept[0]


def test_cancel_button_and_background(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "background")
    model.push(Turn(text="slow result", delay=1.5))
    say(signed_in, "work in the background")
    wait_until(signed_in, "!document.querySelector('#background').disabled")
    signed_in.find_element(By.CSS_SELECTOR, "#background").click()
    wait_text(signed_in, "#transcript", "Sent to the background")
    wait_text(signed_in, "#transcript", "Background task completed", timeout=15)
    wait_text(signed_in, "#transcript > .msg.assistant", "slow result")

    model.push(Turn(text=" ".join(f"x{i}" for i in range(200)), chunk_delay=0.1))
    say(signed_in, "again, slowly")
    wait_for(signed_in, "#transcript .msg.assistant.streaming")
    signed_in.find_element(By.CSS_SELECTOR, "#cancel").click()
    wait_text(signed_in, "#transcript .notice:last-child", "Cancelled.")


def test_messages_typed_during_a_run_are_queued(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "queue")
    model.push(
        Turn(tool_calls=[("current_time", {})], delay=2.5),
        Turn(text="Both handled."),
    )
    say(signed_in, "first")
    wait_until(signed_in, "!document.querySelector('#cancel').disabled")
    say(signed_in, "second")
    wait_until(
        signed_in,
        "[...document.querySelectorAll('#transcript .msg.user')].pop()"
        ".querySelector('.badge.queued')",
    )
    wait_text(signed_in, "#transcript > .msg.assistant", "Both handled.")
    wait_until(signed_in, "!document.querySelector('.badge.queued')")


def test_slash_opens_skill_completion(signed_in: WebDriver, famulus: Famulus) -> None:
    open_session(signed_in, famulus, "skills")
    skills = famulus.http.get("/skills").json()["skills"]
    assert skills, "the builtin skills"
    first = skills[0]
    box = wait_for(signed_in, "#message")
    box.send_keys("/" + first["name"][:2])
    item = wait_for(signed_in, f'#skill-completion li[data-name="{first["name"]}"]')
    assert first["description"][:20] in item.text
    box.send_keys(Keys.TAB)
    wait_until(
        signed_in, "document.querySelector('#skill-completion').classList.contains('hidden')"
    )
    assert box.get_attribute("value") == f"/{first['name']} "


def test_context_meter_and_compact(signed_in: WebDriver, famulus: Famulus) -> None:
    sid = open_session(signed_in, famulus, "context")
    total = famulus.http.get("/context", params={"session_id": sid}).json()["total"]
    wait_text(signed_in, "#context-text", f"{total:,}")
    assert "8,000" in text_of(signed_in, "#context-text")
    signed_in.find_element(By.CSS_SELECTOR, "#compact").click()
    wait_for(signed_in, ".toast")


def test_history_is_drawn_once_after_reload(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "history")
    model.push(Turn(tool_calls=[("current_time", {})]), Turn(text="It is time."))
    say(signed_in, "what time is it?")
    wait_text(signed_in, "#transcript > .msg.assistant", "It is time.")
    signed_in.refresh()
    wait_text(signed_in, "#transcript > .msg.assistant", "It is time.")
    assert [e.text for e in all_of(signed_in, "#transcript .msg.user")] == ["what time is it?"]
    tool = wait_for(signed_in, "#transcript > details.tool")
    assert "current_time" in tool.text
    assert len(all_of(signed_in, "#transcript > details.tool")) == 1
    assert assistant_texts(signed_in) == ["It is time."]


def test_restart_mid_stream_recovers_showing_nothing_twice(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "restart")
    model.push(Turn(text="First answer."))
    say(signed_in, "one")
    wait_text(signed_in, "#transcript > .msg.assistant", "First answer.")
    model.push(Turn(text=" ".join(f"y{i}" for i in range(300)), chunk_delay=0.05))
    say(signed_in, "two")
    # A few words in, so the answer cut by the restart has more than its first one.
    wait_text(signed_in, "#transcript .msg.assistant.streaming", "y2")
    famulus.restart()
    wait_text(signed_in, "#transcript .notice.error", "", timeout=20)
    wait_until(signed_in, "!document.querySelector('#transcript .streaming')", timeout=20)
    model.push(Turn(text="Third answer."))
    say(signed_in, "three")
    wait_text(signed_in, "#transcript", "Third answer.", timeout=15)
    texts = assistant_texts(signed_in)
    assert texts[0] == "First answer." and texts[-1] == "Third answer."
    assert len(texts) == 3 and texts[1].startswith("y0 y1")
    assert len(all_of(signed_in, "#transcript .notice.error")) == 1


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_attach_an_image(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI, tmp_path: Path
) -> None:
    open_session(signed_in, famulus, "image")
    picture = tmp_path / "dot.png"
    picture.write_bytes(PNG)
    signed_in.find_element(By.CSS_SELECTOR, "#attach-input").send_keys(str(picture))
    wait_for(signed_in, "#attachments .thumb img")
    model.push(Turn(text="A single dot."))
    say(signed_in, "what is this?")
    wait_text(signed_in, "#transcript > .msg.assistant", "A single dot.")
    assert all_of(signed_in, "#attachments .thumb") == []
    wait_for(signed_in, "#transcript .msg.user .thumbs img")
    parts = model.requests[-1]["messages"][-1]["content"]
    urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
    assert urls == ["data:image/png;base64," + base64.b64encode(PNG).decode()]
    signed_in.refresh()  # from history too
    wait_for(signed_in, "#transcript .msg.user .thumbs img")


def test_network_drop_misses_nothing_and_shows_nothing_twice(
    browser: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    with TcpProxy(famulus.server.port) as proxy:
        browser.get(f"{proxy.base_url}/#key={famulus.key}")
        wait_for(browser, "#sign-out")
        sid = open_session(browser, famulus, "drop")
        model.push(
            Turn(text="Before the gap.", tool_calls=[("current_time", {})]),
            Turn(text="After the gap.", delay=2.0),
        )
        say(browser, "go")
        wait_text(browser, "#transcript > .msg.assistant", "Before the gap.")
        proxy.cut()  # the network goes; the run goes on
        wait_until(
            browser, "document.querySelector('#run-status').textContent.includes('Reconnecting')"
        )

        def done() -> bool:
            history = famulus.http.get("/session/history", params={"session_id": sid}).json()
            return bool(history["messages"][-1]["content"] == "After the gap.")

        wait_until_true(done)
        proxy.restore()
        wait_text(browser, "#transcript", "After the gap.", timeout=15)
        assert assistant_texts(browser) == ["Before the gap.", "After the gap."]
        assert len(all_of(browser, "#transcript > details.tool")) == 1
        wait_until(browser, "document.querySelector('#cancel').disabled")
        assert "Reconnecting" not in text_of(browser, "#run-status")


def _seed_long_history(famulus: Famulus, sid: str, turns: int) -> None:
    """Writes ``turns`` question/answer pairs straight into the running server's
    database (SQLite allows a second writer; a model would take minutes)."""
    db = Database(famulus.server.home / "famulus.db")
    db.open()

    async def write() -> None:
        store = SessionStore(db)
        for i in range(turns):
            await store.add_message(sid, "user", f"question {i}")
            await store.add_message(sid, "assistant", f"answer **{i}**")

    try:
        asyncio.run(write())
    finally:
        db.close()


def test_a_500_message_session_is_drawn_in_chunks(signed_in: WebDriver, famulus: Famulus) -> None:
    sid = str(famulus.http.post("/sessions", json={"name": "long"}).json()["session_id"])
    _seed_long_history(famulus, sid, 250)
    signed_in.execute_script("location.hash = arguments[0]", f"#/chat/{sid}")
    wait_text(signed_in, "#transcript", "answer 249")
    drawn = len(all_of(signed_in, "#transcript .msg"))
    assert 100 <= drawn <= 130
    assert "question 0" not in text_of(signed_in, "#transcript")
    while all_of(signed_in, "#show-earlier"):
        signed_in.find_element(By.CSS_SELECTOR, "#show-earlier").click()
    wait_text(signed_in, "#transcript", "question 0")
    assert len(all_of(signed_in, "#transcript .msg")) == 500
    texts = [e.text for e in all_of(signed_in, "#transcript .msg.user")]
    assert texts == [f"question {i}" for i in range(250)]
