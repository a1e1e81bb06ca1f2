"""The browser test harness: a real ``famulus serve``, the scripted model server
and a headless Chromium driven by Selenium.

Fixtures (one server and one browser per test module):
``famulus`` the running server (``base_url``, ``key``, ``http`` — an httpx client
with the key), ``model`` the scripted OpenAI-compatible server registered as the
chat model, ``browser`` the Selenium driver, ``signed_in`` the browser opened at
``base_url/#key=<key>`` with the shell shown; ``famulus_env`` (override it in a
test module) adds environment for the server. Helpers are in
``tests/support/browser.py`` (``wait_for``, ``wait_text``, ``text_of`` …).
Every test here is marked ``browser`` (``pytest -m "not browser"`` skips them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from tests.support import browser as chrome
from tests.support.browser import all_of, wait_for, wait_text, wait_until
from tests.support.live import ServerProcess
from tests.support.scripted_openai import ScriptedOpenAI

KEY = "browser-test-key-0123456789abcdefghijklmnop"
MODEL = "scripted-model"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.browser)
            if not chrome.available() and not chrome.required():
                item.add_marker(pytest.mark.skip(reason="chromium + chromium-driver not installed"))


@dataclass
class Famulus:
    server: ServerProcess
    key: str
    http: httpx.Client

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def restart(self) -> None:
        """Stop (SIGTERM) and start again on the same port and home."""
        self.server.stop()
        self.server.start()


@pytest.fixture(scope="module")
def famulus_env() -> dict[str, str]:
    """More environment for the server; a test module overrides this fixture to
    point the server at its own fakes (provider base URLs, ``FAMULUS_SKILLS_HOST_URL``)."""
    return {}


@pytest.fixture(scope="module")
def famulus(
    tmp_path_factory: pytest.TempPathFactory, famulus_env: dict[str, str]
) -> Iterator[Famulus]:
    home = tmp_path_factory.mktemp("browser") / "home"
    env = {"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning", **famulus_env}
    server = ServerProcess(home, env=env).start()
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=10
    ) as http:
        yield Famulus(server, KEY, http)
    server.stop()


@pytest.fixture(scope="module")
def _scripted() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI([MODEL]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def _registered(famulus: Famulus, _scripted: ScriptedOpenAI) -> ScriptedOpenAI:
    r = famulus.http.post(
        "/models/custom",
        json={
            "model_id": MODEL,
            "base_url": _scripted.base_url,
            "context_window": 8000,
            "max_output_tokens": 500,
            "vision": True,
        },
    )
    assert r.status_code == 201, r.text
    r = famulus.http.patch("/config", json={"chat_model": MODEL, "research_model": MODEL})
    assert r.status_code == 200, r.text
    return _scripted


@pytest.fixture
def model(_registered: ScriptedOpenAI) -> ScriptedOpenAI:
    """The scripted model, its queue emptied for this test (``model.push(Turn(...))``)."""
    _registered.reset()
    return _registered


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver = chrome.chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def signed_in(browser: WebDriver, famulus: Famulus) -> WebDriver:
    """Fresh storage, then the sign-in link; waits until the shell shows."""
    browser.get(f"{famulus.base_url}/health")
    browser.execute_script("sessionStorage.clear(); localStorage.clear();")
    browser.get(f"{famulus.base_url}/#key={famulus.key}")
    chrome.wait_for(browser, "#sign-out")
    return browser


def open_session(browser: WebDriver, famulus: Famulus, name: str) -> str:
    """A new session made through the API, opened in the chat view, input focused."""
    sid = str(famulus.http.post("/sessions", json={"name": name}).json()["session_id"])
    browser.execute_script("location.hash = arguments[0]", f"#/chat/{sid}")
    wait_text(browser, "#session-name", name)
    wait_until(browser, "document.activeElement && document.activeElement.id === 'message'")
    return sid


def say(browser: WebDriver, text: str) -> None:
    box = wait_for(browser, "#message")
    box.send_keys(text)
    box.send_keys(Keys.ENTER)


def assistant_texts(browser: WebDriver) -> list[str]:
    return [e.text for e in all_of(browser, "#transcript > .msg.assistant")]
