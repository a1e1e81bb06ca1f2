"""The usage view in a real browser: after one chat turn its request shows up
in the bars per day and the table by model (a custom model: cost unknown)."""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from tests.browser.conftest import MODEL, Famulus, open_session, say
from tests.support.browser import console_errors, text_of, wait_for, wait_until
from tests.support.scripted_openai import ScriptedOpenAI, Turn


def test_usage_shows_the_days_and_models(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    browser = signed_in
    console_errors(browser)
    model.push(Turn(text="Hello from the model."))
    open_session(browser, famulus, "usage")
    say(browser, "hi")
    wait_until(browser, "document.body.innerText.includes('Hello from the model.')", timeout=20)
    browser.get(f"{famulus.base_url}/#/usage")
    row = wait_for(browser, ".usage-table tbody tr")
    assert f"custom:{MODEL}" in row.text and "unknown" in row.text
    cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
    assert cells[1:3] == ["1", "12"]  # one request, the prompt tokens the server reported
    bar = wait_for(browser, ".usage-bars .usage-bar")
    assert bar.size["width"] > 0
    assert "unknown" in text_of(browser, ".usage-bar-cost")
    assert console_errors(browser) == []
