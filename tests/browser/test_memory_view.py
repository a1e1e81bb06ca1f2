"""The memory view in a real browser: add a fact and find it through recall, edit
and delete it, page through facts, the profile, the audit, and the learning
review (a candidate proposed by the scripted memory model, approved, reverted)."""

from __future__ import annotations

import time
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select
from tests.browser.conftest import MODEL, Famulus
from tests.support.browser import (
    all_of,
    console_errors,
    text_of,
    wait_for,
    wait_gone,
    wait_text,
    wait_until,
)
from tests.support.scripted_openai import ScriptedOpenAI, Turn

# Markup in memory must arrive as text: no element may come of it.
FACT = "My sister Ines lives in Porto <img src=x onerror=window.pwned=1>"
EDITED = "My sister Ines lives in Lisbon"


def _open(browser: WebDriver, famulus: Famulus, tab: str) -> None:
    # Signing in lands on the chat, which then picks its session and rewrites the
    # address; leaving before that would be undone by it.
    wait_until(browser, "/^#\\/chat\\/./.test(location.hash)", timeout=20)
    browser.get(f"{famulus.base_url}/#/memory/{tab}")
    wait_for(browser, f".mem-tab.active[data-tab={tab}]")


def _click(browser: WebDriver, css: str) -> None:
    wait_for(browser, css).click()


def _confirm(browser: WebDriver) -> None:
    _click(browser, "dialog.confirm [data-confirm]")


def test_add_a_fact_find_it_through_recall_edit_and_delete_it(
    signed_in: WebDriver, famulus: Famulus
) -> None:
    browser = signed_in
    console_errors(browser)
    _open(browser, famulus, "facts")
    wait_for(browser, ".mem-add textarea").send_keys(FACT)
    _click(browser, ".mem-add button[type=submit]")
    # The first embedding may load the local model: on a loaded machine, slow.
    wait_text(browser, ".mem-facts .mem-fact .mem-text", "Ines lives in Porto", timeout=30)
    [fact] = famulus.http.get("/facts", params={"q": "Ines"}).json()["facts"]
    assert fact["text"] == FACT and fact["source_type"] == "manual"
    assert all_of(browser, ".mem-view img") == []
    assert browser.execute_script("return window.pwned") is None

    # The search shows what recall gives the agent, in recall's order.
    query = "Where does Ines live?"
    wait_for(browser, ".mem-search input").send_keys(query)
    _click(browser, ".mem-search button[type=submit]")
    wait_text(browser, ".mem-recall-facts", "Ines lives in Porto")
    recalled = famulus.http.post("/memory/recall/inspect", json={"query": query, "limit": 20})
    shown = [e.get_attribute("data-id") for e in all_of(browser, ".mem-recall-facts .mem-fact")]
    assert shown == [str(f["id"]) for f in recalled.json()["facts"]]
    assert "in the prompt" in text_of(browser, ".mem-recall-facts .mem-fact")
    _click(browser, ".mem-formatted summary")
    assert "Ines lives in Porto" in text_of(browser, ".mem-formatted pre")

    row = f".mem-facts .mem-fact[data-id='{fact['id']}']"
    _click(browser, f"{row} .mem-edit-btn")
    text = wait_for(browser, f"{row} textarea")
    text.clear()
    text.send_keys(EDITED)
    _click(browser, f"{row} button[type=submit]")
    wait_text(browser, f"{row} .mem-text", "Lisbon")
    assert famulus.http.get(f"/facts/{fact['id']}").json()["fact"]["text"] == EDITED
    wait_text(browser, ".mem-recall-facts", "Lisbon")  # the search follows the edit

    _click(browser, f"{row} .mem-delete-btn")
    _confirm(browser)
    wait_gone(browser, row)
    assert famulus.http.get(f"/facts/{fact['id']}").status_code == 404
    wait_gone(browser, f".mem-recall-facts .mem-fact[data-id='{fact['id']}']")
    assert console_errors(browser) == []


def test_facts_page_and_the_profile_and_audit_tabs(signed_in: WebDriver, famulus: Famulus) -> None:
    browser = signed_in
    _open(browser, famulus, "facts")
    _click(browser, ".mem-import summary")
    lines = [f"Plant {i} needs water" for i in range(55)]
    wait_for(browser, ".mem-import textarea").send_keys("\n".join([*lines, lines[0]]))
    _click(browser, ".mem-import button[type=submit]")
    wait_text(browser, "#toasts", "Imported 55, skipped 1")  # the repeated line
    total = famulus.http.get("/facts").json()["total"]
    assert total >= 55
    wait_text(browser, ".mem-pager", f"1–50 of {total}")
    assert len(all_of(browser, ".mem-facts > .mem-fact")) == 50
    _click(browser, ".mem-pager .mem-next")
    wait_text(browser, ".mem-pager", f"51–{total} of {total}")
    assert len(all_of(browser, ".mem-facts > .mem-fact")) == total - 50

    Select(browser.find_element(By.CSS_SELECTOR, "select[name=source-filter]")).select_by_value(
        "chat"
    )  # nothing came from a chat
    wait_text(browser, ".mem-facts", "No facts here yet.")
    assert all_of(browser, ".mem-pager button") == []

    _click(browser, ".mem-tab[data-tab=profile]")
    assert browser.current_url.endswith("#/memory/profile")
    wait_for(browser, ".mem-profile-add input[name=kind]").send_keys("name")
    browser.find_element(By.CSS_SELECTOR, ".mem-profile-add input[name=summary]").send_keys(
        "Prefers to be called Robert"
    )
    _click(browser, ".mem-profile-add button[type=submit]")
    wait_text(browser, ".mem-profile .mem-entry", "Prefers to be called Robert")
    [entry] = famulus.http.get("/memory/profile").json()["entries"]
    assert (entry["kind"], entry["summary"]) == ("name", "Prefers to be called Robert")
    _click(browser, f".mem-entry[data-id='{entry['id']}'] .mem-delete-btn")
    _confirm(browser)
    wait_text(browser, ".mem-profile", "The profile is empty.")
    assert famulus.http.get("/memory/profile").json()["entries"] == []

    _click(browser, ".mem-tab[data-tab=audit]")
    wait_text(browser, ".mem-audit-verdict", "healthy")
    audit = famulus.http.get("/memory/audit").json()
    assert audit["embedding_model"] in text_of(browser, ".mem-audit")


def _memory_model(model: ScriptedOpenAI, event_id: int) -> None:
    """The scripted server answers the memory model's proposal job with one candidate."""

    def answer(body: dict[str, Any]) -> Turn:
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        output = next((t for t in tools if t.startswith("final_result")), None)
        if output is None:
            return Turn(text="Done.")
        candidate = {
            "change_type": "directive",
            "target_key": "directives",
            "proposal": "Greet the person by name.",
            "rationale": "The digest felt cold.",
            "evidence_event_ids": [event_id],
        }
        return Turn(tool_calls=[(output, {"candidates": [candidate]})])

    model.responder = answer


def _output_tool(body: dict[str, Any]) -> tuple[str, set[str]] | None:
    """The memory job's output tool in a request, and the fields it asks for."""
    for tool in body.get("tools", []):
        fn = tool["function"]
        if fn["name"].startswith("final_result"):
            return fn["name"], set(fn.get("parameters", {}).get("properties", {}))
    return None


def test_upkeep_makes_observations_and_dreams_to_edit_and_delete(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    browser = signed_in
    ids = [
        famulus.http.post("/facts", json={"text": t}).json()["fact"]["id"]
        for t in ("I swim on Mondays", "I swim on Thursdays", "My niece is learning to swim")
    ]
    config = {"memory_model": MODEL, "dreams_enabled": True}
    assert famulus.http.patch("/config", json=config).status_code == 200

    def answer(body: dict[str, Any]) -> Turn:
        found = _output_tool(body)
        if found is None:
            return Turn(text="Done.")
        name, fields = found
        if "dreams" in fields:
            dream = {"bridge": "swimming", "insight": "Offer to swim with the niece"}
            return Turn(tool_calls=[(name, {"dreams": [{**dream, "fact_ids": [ids[0], ids[2]]}]})])
        observation = {"summary": "Swims twice a week", "fact_ids": ids[:2]}
        return Turn(tool_calls=[(name, {"observations": [observation], "profile": []})])

    model.responder = answer
    _open(browser, famulus, "audit")
    _click(browser, ".mem-maintain")
    wait_text(browser, "#toasts", "Upkeep done: 1 observation, 0 profile entries, 1 dream.")

    _click(browser, ".mem-tab[data-tab=observations]")
    [obs] = famulus.http.get("/observations").json()["observations"]
    row = f".mem-observation[data-id='{obs['id']}']"
    wait_text(browser, row, "Swims twice a week")
    _click(browser, f"{row} .mem-actions button")  # its facts
    wait_text(browser, f"{row} .mem-detail", "I swim on Thursdays")
    _click(browser, f"{row} .mem-edit-btn")
    summary = wait_for(browser, f"{row} textarea")
    summary.clear()
    summary.send_keys("Swims on Mondays and Thursdays")
    _click(browser, f"{row} button[type=submit]")
    wait_text(browser, f"{row} .mem-text", "Mondays and Thursdays")
    got = famulus.http.get(f"/observations/{obs['id']}").json()["observation"]
    assert got["summary"] == "Swims on Mondays and Thursdays"
    _click(browser, f"{row} .mem-delete-btn")
    _confirm(browser)
    wait_gone(browser, row)
    assert famulus.http.get(f"/observations/{obs['id']}").status_code == 404

    _click(browser, ".mem-tab[data-tab=dreams]")
    [dream] = famulus.http.get("/dreams").json()["dreams"]
    row = f".mem-dream[data-id='{dream['id']}']"
    wait_text(browser, row, "Offer to swim with the niece")
    assert "swimming" in text_of(browser, row)
    _click(browser, f"{row} .mem-actions button")  # its facts
    wait_text(browser, f"{row} .mem-detail", "My niece is learning to swim")
    _click(browser, f"{row} .mem-delete-btn")
    _confirm(browser)
    wait_gone(browser, row)
    assert famulus.http.get("/dreams").json()["dreams"] == []


def _feedback_event(famulus: Famulus) -> int:
    """A writable automation's run leaves an ``automation_outcome`` learning event."""
    body = {
        "name": "Digest",
        "description": "Say hello.",
        "trigger": {"type": "time", "every": "1h"},
        "writable": True,
    }
    automation = famulus.http.post("/automations", json=body).json()
    assert famulus.http.post(f"/automations/{automation['id']}/run").status_code == 202
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        events = famulus.http.get("/memory/learning/events").json()["events"]
        if events:
            return int(events[0]["id"])
        time.sleep(0.05)
    raise AssertionError("the automation's run left no learning event")


def test_learning_review_approves_and_reverts_a_candidate(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    browser = signed_in
    famulus.http.put("/directives", json={"content": "Be brief."})
    event_id = _feedback_event(famulus)
    assert famulus.http.patch("/config", json={"memory_model": MODEL}).status_code == 200
    _memory_model(model, event_id)
    _open(browser, famulus, "learning")
    _click(browser, ".mem-propose")
    wait_text(browser, ".mem-candidate", "Greet the person by name.")
    assert "The digest felt cold." in text_of(browser, ".mem-candidate")

    _click(browser, ".mem-candidate .mem-approve")
    wait_until(browser, "document.querySelector('.mem-candidate').dataset.status === 'applied'")
    directives = famulus.http.get("/directives").json()["content"]
    assert directives == "Be brief.\nGreet the person by name."

    _click(browser, ".mem-candidate .mem-revert")
    _confirm(browser)
    wait_until(browser, "document.querySelector('.mem-candidate').dataset.status === 'reverted'")
    assert famulus.http.get("/directives").json()["content"] == "Be brief."
    assert all_of(browser, ".mem-candidate button") == []  # nothing further to do
