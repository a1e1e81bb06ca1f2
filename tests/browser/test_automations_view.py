"""The automations view in a real browser: create one with the trigger builder,
run it now and read the run's output (the scripted model's answer, rendered as
sanitized Markdown), edit its trigger, pause it and make it writable."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait
from tests.browser.conftest import Famulus
from tests.support.browser import console_errors, wait_for, wait_text, wait_until
from tests.support.scripted_openai import ScriptedOpenAI, Turn


def _open(browser: WebDriver) -> None:
    # the sign-in lands on chat, which then picks its session (#/chat/<id>):
    # wait for that, or chat's late navigation would replace this view
    wait_until(browser, "location.hash.startsWith('#/chat/')")
    browser.execute_script("location.hash = '#/automations'")
    wait_for(browser, ".view-automations .auto-new")


def _card(browser: WebDriver, famulus: Famulus, name: str) -> tuple[dict[str, Any], str]:
    """The automation called ``name`` (from the API) and the CSS selector of its card."""

    def find(_: WebDriver) -> dict[str, Any] | None:
        autos = famulus.http.get("/automations").json()["automations"]
        return next((a for a in autos if a["name"] == name), None)

    auto: dict[str, Any] = WebDriverWait(browser, 10).until(find, f"no automation {name!r}")
    css = f'.auto[data-id="{auto["id"]}"]'
    wait_for(browser, css)
    return auto, css


def _fill_new(browser: WebDriver, name: str, task: str) -> WebElement:
    browser.find_element(By.CSS_SELECTOR, ".auto-new").click()
    form = wait_for(browser, "form.auto-editor")
    form.find_element(By.CSS_SELECTOR, ".auto-name").send_keys(name)
    form.find_element(By.CSS_SELECTOR, ".auto-description").send_keys(task)
    return form


def _set_number(el: WebElement, value: str) -> None:
    el.clear()
    el.send_keys(value)


def test_create_with_an_interval_then_run_now_shows_the_output(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    console_errors(signed_in)
    _open(signed_in)
    form = _fill_new(signed_in, "Morning brief", "Summarize the day ahead.")
    Select(form.find_element(By.CSS_SELECTOR, ".trigger-kind")).select_by_value("every")
    _set_number(form.find_element(By.CSS_SELECTOR, ".trigger-every"), "2")
    Select(form.find_element(By.CSS_SELECTOR, ".trigger-unit")).select_by_value("h")
    form.find_element(By.CSS_SELECTOR, ".auto-save").click()

    auto, card = _card(signed_in, famulus, "Morning brief")
    assert auto["trigger"] == {"type": "time", "every": "2h"}
    assert auto["enabled"] is True and auto["writable"] is False
    wait_text(signed_in, f"{card} .auto-trigger", "every 2 hours")
    assert "Next:" in signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-next").text

    model.push(
        Turn(text="Your **briefing**: two meetings and <img src=x onerror=window.__pwned=1>.")
    )
    signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-run").click()
    out = wait_text(signed_in, f"{card} .run-output", "two meetings")
    assert out.find_element(By.CSS_SELECTOR, "strong").text == "briefing"
    wait_text(signed_in, f"{card} .run .badge", "ok")
    # the model's HTML ran nothing and kept no handler
    assert signed_in.execute_script("return window.__pwned") is None
    assert not signed_in.find_elements(By.CSS_SELECTOR, f"{card} .run-output [onerror]")
    detail = famulus.http.get(f"/automations/{auto['id']}").json()
    assert detail["runs"][0]["status"] == "ok" and "two meetings" in detail["runs"][0]["result"]
    # the run's session is one click away
    signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-transcript").click()
    wait_until(signed_in, f"location.hash === '#/chat/{detail['session_id']}'")
    assert console_errors(signed_in) == []


def test_edit_trigger_days_pause_and_make_writable(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    _open(signed_in)
    form = _fill_new(signed_in, "Weekly review", "Review the week.")
    Select(form.find_element(By.CSS_SELECTOR, ".trigger-kind")).select_by_value("calendar")
    _set_number(form.find_element(By.CSS_SELECTOR, ".trigger-lead"), "20")
    form.find_element(By.CSS_SELECTOR, ".auto-save").click()
    auto, card = _card(signed_in, famulus, "Weekly review")
    assert auto["trigger"] == {"type": "event", "event_type": "calendar", "lead_minutes": 20}
    wait_text(signed_in, f"{card} .auto-trigger", "20 min before each calendar event")

    signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-edit").click()
    form = wait_for(signed_in, "form.auto-editor")
    assert (
        form.find_element(By.CSS_SELECTOR, ".auto-name").get_attribute("value") == "Weekly review"
    )
    Select(form.find_element(By.CSS_SELECTOR, ".trigger-kind")).select_by_value("at")
    at = form.find_element(By.CSS_SELECTOR, ".trigger-at")
    signed_in.execute_script("arguments[0].value = '07:30'", at)
    Select(form.find_element(By.CSS_SELECTOR, ".trigger-days")).select_by_value("custom")
    for day in ("mon", "wed"):
        form.find_element(By.CSS_SELECTOR, f'.trigger-day[value="{day}"]').click()
    form.find_element(By.CSS_SELECTOR, ".auto-save").click()
    wait_text(signed_in, f"{card} .auto-trigger", "07:30 on Mon, Wed")
    got = famulus.http.get(f"/automations/{auto['id']}").json()
    assert got["trigger"] == {"type": "time", "at": "07:30", "days": "mon,wed"}

    signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-enabled").click()
    wait_text(signed_in, f"{card} .auto-next", "Paused")
    box = f"document.querySelector('{card} .auto-writable')"
    signed_in.execute_script(f"window.__box = {box}")
    signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-writable").click()
    # the box ticks at once; the server's answer takes a moment
    got = WebDriverWait(signed_in, 10).until(
        lambda _: (a := famulus.http.get(f"/automations/{auto['id']}").json())["writable"] and a,
        "never became writable",
    )
    assert got["enabled"] is False and got["next_run_at"] is None
    # the list is drawn again from the server's state: the box is still ticked,
    # and keyboard focus moved to the new box
    wait_until(signed_in, f"{box} !== window.__box && {box}.checked")
    assert signed_in.execute_script(f"return document.activeElement === {box}")


def test_a_run_started_elsewhere_shows_up_through_the_event_feed(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    r = famulus.http.post(
        "/automations",
        json={"name": "Elsewhere", "description": "x", "trigger": {"type": "time", "every": "9h"}},
    )
    aid = r.json()["id"]
    _open(signed_in)
    _, card = _card(signed_in, famulus, "Elsewhere")
    wait_text(signed_in, f"{card} .auto-head .badge", "never run")
    # no click and no open runs panel: only GET /automations/events can tell the page
    model.push(Turn(text="Done elsewhere."))
    assert famulus.http.post(f"/automations/{aid}/run").status_code == 202
    wait_until(
        signed_in,
        f"document.querySelector('{card} .auto-head .badge')?.textContent === 'ok'",
    )
    assert "Last:" in signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-meta").text


def test_delete_asks_first(signed_in: WebDriver, famulus: Famulus) -> None:
    r = famulus.http.post(
        "/automations",
        json={"name": "Doomed", "description": "x", "trigger": {"type": "time", "every": "5h"}},
    )
    assert r.status_code == 201
    _open(signed_in)
    _, card = _card(signed_in, famulus, "Doomed")
    signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-delete").click()
    wait_for(signed_in, "dialog.confirm [data-confirm]").click()
    wait_until(signed_in, f"!document.querySelector('{card}')")
    names = [a["name"] for a in famulus.http.get("/automations").json()["automations"]]
    assert "Doomed" not in names


def test_cron_and_one_shot_triggers_show_and_survive_an_edit(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    """Issue 11's trigger shapes: shown as they are, kept by an edit that does
    not touch them, and creatable from the builder."""
    cron = {"type": "time", "cron": "0 7 * * 1-5"}
    famulus.http.post("/automations", json={"name": "Weather", "description": "x", "trigger": cron})
    _open(signed_in)
    auto, card = _card(signed_in, famulus, "Weather")
    wait_text(signed_in, f"{card} .auto-trigger", "cron 0 7 * * 1-5")
    signed_in.find_element(By.CSS_SELECTOR, f"{card} .auto-edit").click()
    form = wait_for(signed_in, "form.auto-editor")
    desc = form.find_element(By.CSS_SELECTOR, ".auto-description")
    desc.clear()
    desc.send_keys("Send me the weather.")
    form.find_element(By.CSS_SELECTOR, ".auto-save").click()
    WebDriverWait(signed_in, 10).until(
        lambda _: (
            famulus.http.get(f"/automations/{auto['id']}").json()["description"]
            == "Send me the weather."
        ),
        "the edit was not saved",
    )
    assert famulus.http.get(f"/automations/{auto['id']}").json()["trigger"] == cron

    form = _fill_new(signed_in, "Dentist", "Reminder: dentist")
    Select(form.find_element(By.CSS_SELECTOR, ".trigger-kind")).select_by_value("once")
    form.find_element(By.CSS_SELECTOR, ".trigger-once").send_keys("2099-12-01T09:30")
    form.find_element(By.CSS_SELECTOR, ".auto-save").click()
    once, card = _card(signed_in, famulus, "Dentist")
    assert once["trigger"] == {"type": "time", "once": "2099-12-01T09:30"}
    wait_text(signed_in, f"{card} .auto-trigger", "once at 2099-12-01 09:30")
