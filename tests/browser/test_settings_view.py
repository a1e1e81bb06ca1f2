"""The settings view in a real browser, against the fake providers of
tests/support/llm_fakes.py: connect a provider with a key (a refused key shows
the provider's reason) and make it the chat model, the openai-codex sign-in in
a second tab with the status polled until connected, custom models, a notifier
with Test, the embedding re-index progress, and the directives editor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait
from tests.browser.conftest import MODEL, Famulus
from tests.support.browser import console_errors, wait_for, wait_text, wait_until
from tests.support.fake_http import Recorder, recording_server
from tests.support.llm_fakes import FakeState, fake_server, settings_overrides
from tests.support.scripted_openai import ScriptedOpenAI

from famulus.llm.catalog import PROVIDERS
from famulus.llm.external import SERVICES

# Keys in the developer's environment would connect providers behind the test's back.
KEY_VARS = sorted(
    {v for p in PROVIDERS for v in p.env_vars} | {v for s in SERVICES for v in s.env_vars}
)


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[str, FakeState]]:
    with fake_server() as pair:
        yield pair


@pytest.fixture(scope="module")
def famulus_env(fake: tuple[str, FakeState]) -> dict[str, str]:
    base, _ = fake
    env = {f"FAMULUS_{k.upper()}": str(v) for k, v in settings_overrides(base).items()}
    return {**env, **dict.fromkeys(KEY_VARS, "")}


@pytest.fixture
def webhook() -> Iterator[Recorder]:
    with recording_server(lambda method, path, body: (200, {"ok": True})) as rec:
        yield rec


def _open(browser: WebDriver) -> None:
    # the sign-in lands on chat, which then picks its session (#/chat/<id>):
    # wait for that, or chat's late navigation would replace this view
    wait_until(browser, "location.hash.startsWith('#/chat/')")
    browser.execute_script("location.hash = '#/settings'")
    # generous: a cold page load on a loaded machine fetches every module first
    wait_for(browser, ".view-settings .provider-list", timeout=20)


def _badge(browser: WebDriver, item: str, text: str, timeout: float = 10) -> None:
    """Waits until the item's status badge reads exactly ``text``."""
    css = f"{item} .badge".replace("'", "\\'")
    wait_until(browser, f"document.querySelector('{css}')?.textContent === '{text}'", timeout)


def _toast(browser: WebDriver, text: str, kind: str = "") -> None:
    """Waits until any toast (of ``kind``, if given) holds ``text``."""
    css = f".toast{'.' + kind if kind else ''}"
    wait_until(
        browser,
        f"[...document.querySelectorAll('{css}')].some((t) => t.textContent.includes({text!r}))",
    )


def _api_until(browser: WebDriver, check: Any, what: str) -> Any:
    return WebDriverWait(browser, 10).until(lambda _: check(), what)


def test_connect_a_provider_and_choose_it_as_the_chat_model(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    console_errors(signed_in)
    _open(signed_in)
    openai = '.provider[data-provider="openai"]'
    _badge(signed_in, openai, "not connected")
    signed_in.find_element(By.CSS_SELECTOR, f"{openai} .provider-key").send_keys(
        "sk-bad-key-123456"
    )
    signed_in.find_element(By.CSS_SELECTOR, f"{openai} .provider-connect").click()
    _toast(signed_in, "Incorrect API key", "error")
    refused = console_errors(signed_in)  # the browser logs the 502 itself; nothing else
    assert len(refused) == 1 and "/providers/openai/connect" in refused[0] and "502" in refused[0]

    signed_in.find_element(By.CSS_SELECTOR, f"{openai} .provider-key").clear()
    signed_in.find_element(By.CSS_SELECTOR, f"{openai} .provider-key").send_keys(
        "sk-good-browser-7f3a"
    )
    signed_in.find_element(By.CSS_SELECTOR, f"{openai} .provider-connect").click()
    _badge(signed_in, openai, "connected")
    assert "sk-…7f3a" in signed_in.find_element(By.CSS_SELECTOR, f"{openai} .key-hint").text
    # the key itself never comes back to the page
    assert "sk-good-browser-7f3a" not in signed_in.page_source

    # the new provider's models are offered for the roles; choosing one sets it
    wait_for(signed_in, '.role-chat_model option[value="openai:gpt-4.1"]')
    chat = Select(signed_in.find_element(By.CSS_SELECTOR, ".role-chat_model"))
    assert chat.first_selected_option.get_attribute("value") == f"custom:{MODEL}"
    chat.select_by_value("openai:gpt-4.1")
    _api_until(
        signed_in,
        lambda: famulus.http.get("/config").json()["chat_model"] == "openai:gpt-4.1",
        "chat model never became openai:gpt-4.1",
    )
    famulus.http.patch("/config", json={"chat_model": MODEL})

    # disconnecting asks first, then the provider shows as not connected
    signed_in.find_element(By.CSS_SELECTOR, f"{openai} .provider-disconnect").click()
    wait_for(signed_in, "dialog.confirm [data-confirm]").click()
    _badge(signed_in, openai, "not connected")
    providers = {p["id"]: p for p in famulus.http.get("/providers").json()["providers"]}
    assert providers["openai"]["connected"] is False
    assert console_errors(signed_in) == []


def test_connect_a_service(signed_in: WebDriver, famulus: Famulus) -> None:
    _open(signed_in)
    bot = '.service[data-service="telegram"]'
    wait_for(signed_in, f"{bot} .service-key").send_keys("123456:good-bot-token")
    signed_in.find_element(By.CSS_SELECTOR, f"{bot} .service-connect").click()
    _badge(signed_in, bot, "connected")
    services = {s["id"]: s for s in famulus.http.get("/services").json()["services"]}
    assert services["telegram"]["connected"] is True
    signed_in.find_element(By.CSS_SELECTOR, f"{bot} .service-disconnect").click()
    wait_for(signed_in, "dialog.confirm [data-confirm]").click()
    _badge(signed_in, bot, "not connected")


def test_oauth_sign_in_opens_the_provider_page_and_polls_until_connected(
    signed_in: WebDriver, famulus: Famulus, fake: tuple[str, FakeState]
) -> None:
    _, state = fake
    _open(signed_in)
    codex = '.provider[data-provider="openai-codex"]'
    home = signed_in.current_window_handle
    signed_in.find_element(By.CSS_SELECTOR, f"{codex} .oauth-start").click()
    # a second tab went to the provider's authorize page, which sent it back to
    # famulus's loopback callback; the view's polling sees the connection
    _badge(signed_in, codex, "connected", timeout=15)
    assert state.find("/oauth/authorize") and state.find("/oauth/token")
    for handle in signed_in.window_handles:
        if handle != home:
            signed_in.switch_to.window(handle)
            signed_in.close()
    signed_in.switch_to.window(home)
    status = famulus.http.get("/providers/openai-codex/oauth/status").json()
    assert status == {"status": "connected", "connected": True}
    famulus.http.delete("/providers/openai-codex")


def test_a_sign_in_begun_elsewhere_is_followed_until_connected(
    signed_in: WebDriver, famulus: Famulus
) -> None:
    started = famulus.http.post("/providers/openai-codex/oauth/browser/start").json()
    _open(signed_in)
    codex = '.provider[data-provider="openai-codex"]'
    wait_text(signed_in, f"{codex} .oauth-status", "Waiting for the sign-in")
    # the person finishes the sign-in in some other browser window
    page = httpx.get(started["url"], follow_redirects=True, timeout=10)
    assert page.status_code == 200
    _badge(signed_in, codex, "connected", timeout=15)
    assert signed_in.find_element(By.CSS_SELECTOR, f"{codex} .oauth-status").text == ""
    famulus.http.delete("/providers/openai-codex")


def test_custom_model_add_and_remove(
    signed_in: WebDriver, famulus: Famulus, model: ScriptedOpenAI
) -> None:
    _open(signed_in)
    wait_for(signed_in, ".custom-add-box > summary").click()
    form = wait_for(signed_in, "form.custom-form")
    form.find_element(By.CSS_SELECTOR, ".custom-id").send_keys("team/llama3:8b")
    form.find_element(By.CSS_SELECTOR, ".custom-url").send_keys(model.base_url)
    form.find_element(By.CSS_SELECTOR, ".custom-add").click()
    item = '.custom-model[data-model="team/llama3:8b"]'
    wait_for(signed_in, item)
    wait_for(signed_in, '.role-research_model option[value="custom:team/llama3:8b"]')
    signed_in.find_element(By.CSS_SELECTOR, f"{item} .custom-remove").click()
    wait_for(signed_in, "dialog.confirm [data-confirm]").click()
    wait_until(signed_in, f"!document.querySelector('{item}')")
    ids = next(
        p["models"]
        for p in famulus.http.get("/providers").json()["providers"]
        if p["id"] == "custom"
    )
    assert ids == [MODEL]


def test_notifier_create_test_edit_delete(
    signed_in: WebDriver, famulus: Famulus, webhook: Recorder
) -> None:
    _open(signed_in)
    wait_for(signed_in, ".notifier-new").click()
    form = wait_for(signed_in, "form.notifier-form")
    form.find_element(By.CSS_SELECTOR, ".notifier-name").send_keys("hook")
    Select(form.find_element(By.CSS_SELECTOR, ".notifier-type")).select_by_value("webhook")
    form.find_element(By.CSS_SELECTOR, ".notifier-field-url").send_keys(f"{webhook.url}/first")
    form.find_element(By.CSS_SELECTOR, ".notifier-save").click()
    row = '.notifier[data-notifier="hook"]'
    wait_text(signed_in, f"{row} .notifier-target", "/first")

    signed_in.find_element(By.CSS_SELECTOR, f"{row} .notifier-test").click()
    _toast(signed_in, "Test message sent to hook")
    assert [(m, p) for m, p, _ in webhook.requests] == [("POST", "/first")]

    signed_in.find_element(By.CSS_SELECTOR, f"{row} .notifier-edit").click()
    url = wait_for(signed_in, "form.notifier-form .notifier-field-url")
    assert url.get_attribute("value") == f"{webhook.url}/first"
    url.clear()
    url.send_keys(f"{webhook.url}/second")
    signed_in.find_element(By.CSS_SELECTOR, "form.notifier-form .notifier-save").click()
    wait_text(signed_in, f"{row} .notifier-target", "/second")
    configs = famulus.http.get("/notifiers/configs").json()["configs"]
    assert [(c["name"], c["config"]) for c in configs] == [
        ("hook", {"url": f"{webhook.url}/second"})
    ]

    signed_in.find_element(By.CSS_SELECTOR, f"{row} .notifier-delete").click()
    wait_for(signed_in, "dialog.confirm [data-confirm]").click()
    wait_until(signed_in, f"!document.querySelector('{row}')")
    assert famulus.http.get("/notifiers/configs").json()["configs"] == []


def test_embedding_reindex_shows_its_progress(signed_in: WebDriver, famulus: Famulus) -> None:
    _open(signed_in)
    current = wait_for(signed_in, ".embedding-current").text
    assert current == famulus.http.get("/models/embedding").json()["current"]
    # Record what the page fetches: the progress comes from GET /memory/events.
    signed_in.execute_script(
        "window.fetched = []; const real = window.fetch;"
        "window.fetch = (u, ...rest) => { window.fetched.push(String(u)); return real(u, ...rest); };"
    )
    wait_for(signed_in, ".embedding-apply").click()
    wait_for(signed_in, "dialog.confirm [data-confirm]").click()
    wait_text(signed_in, ".reindex-text", "completed", timeout=20)
    assert famulus.http.get("/memory/audit").json()["reindex"]["status"] == "completed"
    fetched = signed_in.execute_script("return window.fetched")
    assert any(u.endswith("/memory/events") for u in fetched), fetched


def test_directives_editor(signed_in: WebDriver, famulus: Famulus) -> None:
    _open(signed_in)
    area = wait_for(signed_in, ".directives-text")
    area.clear()
    area.send_keys("Answer in German.\nKeep it short.")
    wait_text(signed_in, ".directives-count", "32 / 20000")
    signed_in.find_element(By.CSS_SELECTOR, ".directives-save").click()
    _toast(signed_in, "Directives saved")
    assert famulus.http.get("/directives").json() == {
        "content": "Answer in German.\nKeep it short."
    }
    signed_in.refresh()  # a reload stays on #/settings
    assert wait_for(signed_in, ".directives-text", timeout=20).get_attribute("value") == (
        "Answer in German.\nKeep it short."
    )


def test_the_default_notifier_is_chosen_in_the_list(
    signed_in: WebDriver, famulus: Famulus, webhook: Recorder
) -> None:
    for name in ("desk", "phone"):
        body = {"name": name, "type": "webhook", "config": {"url": webhook.url}}
        assert famulus.http.post("/notifiers/configs", json=body).status_code == 201
    _open(signed_in)
    row = '.notifier[data-notifier="phone"]'
    wait_for(signed_in, f"{row} .notifier-default").click()
    wait_for(signed_in, f"{row} .notifier-is-default")
    assert famulus.http.get("/config").json()["default_notifier"] == "phone"
    assert not signed_in.find_elements(
        By.CSS_SELECTOR, '.notifier[data-notifier="desk"] .notifier-is-default'
    )
    wait_text(signed_in, f"{row} .notifier-default", "Unset default").click()
    wait_until(signed_in, f"!document.querySelector('{row} .notifier-is-default')")
    assert famulus.http.get("/config").json()["default_notifier"] is None
