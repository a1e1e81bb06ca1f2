"""Taking things back in the chat view: withdrawing a queued message, undoing and
retrying the last turn, branching from a message, and the first-run prompt to
connect a model when none is. Against a real server and the scripted model.

The first test needs a server without a chat model, so it runs before any test
here asks for the ``model`` fixture (which registers one for the module)."""

from __future__ import annotations

from selenium.webdriver.remote.webdriver import WebDriver
from tests.browser.conftest import Famulus, assistant_texts, open_session, say
from tests.support.browser import all_of, console_errors, text_of, wait_for, wait_text, wait_until
from tests.support.scripted_openai import ScriptedOpenAI, Turn


def user_texts(browser: WebDriver) -> list[str]:
    return [e.text for e in all_of(browser, "#transcript > .msg.user")]


def history(famulus: Famulus, sid: str) -> list[dict[str, object]]:
    r = famulus.http.get("/session/history", params={"session_id": sid})
    return list(r.json()["messages"])


def two_turns(browser: WebDriver, famulus: Famulus, model: ScriptedOpenAI, name: str) -> str:
    sid = open_session(browser, famulus, name)
    model.push(Turn(text="Answer one."), Turn(text="Answer two."))
    say(browser, "one")
    wait_text(browser, "#transcript > .msg.assistant", "Answer one.")
    wait_until(browser, "!document.querySelector('#undo').disabled")
    say(browser, "two")
    wait_until(browser, "document.querySelectorAll('#transcript > .msg.assistant').length === 2")
    wait_until(browser, "!document.querySelector('#undo').disabled")
    # the live messages get their history ids once the run has ended
    wait_until(browser, "document.querySelectorAll('#transcript > .msg[data-id]').length === 4")
    return sid


def test_without_a_chat_model_the_view_prompts_to_connect_one(
    signed_in: WebDriver, famulus: Famulus
) -> None:
    assert famulus.http.get("/config").json()["chat_model"] is None
    open_session(signed_in, famulus, "first run")
    prompt = wait_for(signed_in, "#connect-model")
    assert "No chat model is connected" in prompt.text
    # sending anyway keeps the text and the prompt (the 503 not_configured)
    say(signed_in, "hello?")
    wait_until(signed_in, "document.querySelector('#message').value === 'hello?'")
    assert user_texts(signed_in) == []
    assert wait_for(signed_in, "#connect-model").is_displayed()
    signed_in.find_element("css selector", "#connect-model-link").click()
    wait_for(signed_in, "#settings-providers")
    assert signed_in.current_url.endswith("#/settings/providers")
    errors = [e for e in console_errors(signed_in) if "/chat/message" not in e]  # the 503
    assert errors == []


def test_the_prompt_is_gone_once_a_model_is_connected(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "connected")
    wait_for(signed_in, "#message")
    wait_until(signed_in, "document.querySelector('#connect-model').classList.contains('hidden')")


def test_withdraw_a_queued_message(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    sid = open_session(signed_in, famulus, "withdraw")
    model.push(Turn(tool_calls=[("current_time", {})], delay=3), Turn(text="Only the first."))
    say(signed_in, "first")
    wait_until(signed_in, "!document.querySelector('#cancel').disabled")
    say(signed_in, "second thoughts")
    wait_for(signed_in, "#transcript .badge.queued .withdraw").click()
    wait_until(signed_in, "document.querySelector('#message').value === 'second thoughts'")
    assert user_texts(signed_in) == ["first"]
    wait_text(signed_in, "#transcript > .msg.assistant", "Only the first.")
    sent = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"]
    assert "second thoughts" not in str(sent)
    assert [m["content"] for m in history(famulus, sid) if m["role"] == "user"] == ["first"]


def test_withdrawing_too_late_says_so(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    open_session(signed_in, famulus, "too late")
    model.push(Turn(tool_calls=[("current_time", {})], delay=3), Turn(text="Both."))
    say(signed_in, "first")
    wait_until(signed_in, "!document.querySelector('#cancel').disabled")
    say(signed_in, "second")
    # the server's answer when the run took the message in between
    signed_in.execute_script(
        """const real = window.fetch;
        window.fetch = (url, init) => init && init.method === 'DELETE' && String(url).includes('/chat/queue/')
          ? Promise.resolve(new Response(JSON.stringify({detail: 'taken in', code: 'conflict'}),
              {status: 409, headers: {'Content-Type': 'application/json'}}))
          : real(url, init);"""
    )
    wait_for(signed_in, "#transcript .badge.queued .withdraw").click()
    wait_text(signed_in, ".toast.error", "already took that message in")
    assert user_texts(signed_in)[-1].startswith("second")
    wait_text(signed_in, "#transcript > .msg.assistant", "Both.")
    signed_in.refresh()  # drops the patched fetch


def test_undo_the_last_turn(signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI) -> None:
    sid = two_turns(signed_in, famulus, model, "undo")
    wait_for(signed_in, "#undo").click()
    wait_until(signed_in, "document.querySelector('#message').value === 'two'")
    wait_until(signed_in, "document.querySelectorAll('#transcript > .msg.assistant').length === 1")
    assert user_texts(signed_in) == ["one"]
    assert assistant_texts(signed_in) == ["Answer one."]
    assert [m["content"] for m in history(famulus, sid)] == ["one", "Answer one."]


def test_a_revert_elsewhere_leaves_this_view(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    sid = two_turns(signed_in, famulus, model, "other tab")
    r = famulus.http.post(f"/sessions/{sid}/revert", json={"turns": 1})
    assert r.status_code == 200, r.text
    wait_until(signed_in, "document.querySelectorAll('#transcript > .msg.user').length === 1")
    assert assistant_texts(signed_in) == ["Answer one."]
    assert text_of(signed_in, "#message") == ""


def test_retry_asks_the_last_message_again(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    sid = two_turns(signed_in, famulus, model, "retry")
    model.push(Turn(text="A better answer two."))
    wait_for(signed_in, "#retry").click()
    wait_until(
        signed_in,
        "[...document.querySelectorAll('#transcript > .msg.assistant')].pop()"
        "?.textContent.includes('A better answer two.')",
    )
    wait_until(signed_in, "!document.querySelector('#transcript .streaming')")
    assert assistant_texts(signed_in) == ["Answer one.", "A better answer two."]
    assert user_texts(signed_in) == ["one", "two"]
    assert model.requests[-1]["messages"][-1]["content"] == "two"
    contents = [m["content"] for m in history(famulus, sid)]
    assert contents == ["one", "Answer one.", "two", "A better answer two."]


def test_branch_from_a_message(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    sid = two_turns(signed_in, famulus, model, "trunk")
    first_answer = signed_in.find_element("css selector", "#transcript > .msg.assistant")
    mark = first_answer.get_attribute("data-id")
    signed_in.find_element(
        "css selector", f"#transcript > .msg-actions[data-for='{mark}'] .branch"
    ).click()
    wait_text(signed_in, "#session-name", "trunk (branch)")
    new_sid = signed_in.execute_script("return decodeURIComponent(location.hash.split('/')[2])")
    assert new_sid != sid
    wait_until(signed_in, "document.querySelectorAll('#transcript > .msg.assistant').length === 1")
    assert user_texts(signed_in) == ["one"]
    assert assistant_texts(signed_in) == ["Answer one."]
    assert len(history(famulus, sid)) == 4  # the original is unchanged
    assert console_errors(signed_in) == []
