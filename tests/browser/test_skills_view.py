"""The skills view in a real browser: the builtin skills listed, a skill installed
from the fake code host and uninstalled, and a refused install explained."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.remote.webdriver import WebDriver
from tests.browser.conftest import Famulus
from tests.support.browser import (
    all_of,
    console_errors,
    text_of,
    wait_for,
    wait_gone,
    wait_text,
    wait_until,
)
from tests.support.fake_codehost import fake_codehost

# A description with markup: it must show as text, never become an element.
WEATHER = (
    b"---\nname: weather\n"
    b"description: Tells the weather <img src=x onerror=window.pwned=1>\n"
    b"---\nLook up the weather.\n"
)
REPOS = {"acme/skills": {"weather/SKILL.md": WEATHER, "weather/run.py": b"print('sunny')\n"}}


@pytest.fixture(scope="module")
def famulus_env() -> Iterator[dict[str, str]]:
    """The server installs skills from the fake code host."""
    with fake_codehost(REPOS) as url:
        yield {"FAMULUS_SKILLS_HOST_URL": url}


def _open(browser: WebDriver, famulus: Famulus) -> None:
    # Signing in lands on the chat, which then picks its session and rewrites the
    # address; leaving before that would be undone by it.
    wait_until(browser, "/^#\\/chat\\/./.test(location.hash)", timeout=20)
    browser.get(f"{famulus.base_url}/#/skills")
    wait_for(browser, ".skills-builtin .skills-item")


def test_install_from_the_code_host_and_uninstall(signed_in: WebDriver, famulus: Famulus) -> None:
    browser = signed_in
    console_errors(browser)
    _open(browser, famulus)
    builtin = {s["name"] for s in famulus.http.get("/skills").json()["skills"]}
    shown = {e.get_attribute("data-name") for e in all_of(browser, ".skills-builtin .skills-item")}
    assert shown == builtin and "init" in shown
    assert "None." in text_of(browser, ".skills-global")

    wait_for(browser, ".skills-install input[name=source]").send_keys("acme/skills/weather")
    wait_for(browser, ".skills-install button[type=submit]").click()
    item = ".skills-global .skills-item[data-name=weather]"
    wait_text(browser, f"{item} .skills-description", "<img src=x onerror=window.pwned=1>")
    assert "has scripts" in text_of(browser, item)
    assert all_of(browser, ".skills-view img") == []
    assert browser.execute_script("return window.pwned") is None
    installed = {s["name"]: s for s in famulus.http.get("/skills").json()["skills"]}
    assert installed["weather"]["location"] == "global"
    assert all_of(browser, ".skills-builtin .skills-uninstall") == []  # builtin stay

    wait_for(browser, f"{item} .skills-uninstall").click()
    wait_for(browser, "dialog.confirm [data-confirm]").click()
    wait_gone(browser, item)
    assert "weather" not in {s["name"] for s in famulus.http.get("/skills").json()["skills"]}
    assert console_errors(browser) == []


def test_a_refused_install_says_why(signed_in: WebDriver, famulus: Famulus) -> None:
    browser = signed_in
    _open(browser, famulus)
    wait_for(browser, ".skills-install input[name=source]").send_keys("acme/skills/missing")
    wait_for(browser, ".skills-install button[type=submit]").click()
    detail = famulus.http.post("/skills/install", json={"source": "acme/skills/missing"})
    assert detail.status_code == 404
    wait_text(browser, "#toasts", detail.json()["detail"])
    assert all_of(browser, "#toasts .toast.error")
    assert "None." in text_of(browser, ".skills-global")
    # the source stays in the box, to be corrected
    assert wait_for(browser, ".skills-install input").get_attribute("value") == (
        "acme/skills/missing"
    )
