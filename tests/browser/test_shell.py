"""The shell in a real browser: signing in by link and by key, signing out,
the security headers of the static files."""

from __future__ import annotations

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from tests.browser.conftest import Famulus
from tests.support.browser import console_errors, wait_for, wait_text


def test_sign_in_by_link_hides_the_key_and_shows_chat(browser: WebDriver, famulus: Famulus) -> None:
    browser.get(f"{famulus.base_url}/health")
    browser.execute_script("sessionStorage.clear(); localStorage.clear();")
    console_errors(browser)
    before = browser.execute_script("return history.length")
    browser.get(f"{famulus.base_url}/#key={famulus.key}")
    wait_for(browser, "#message")
    assert famulus.key not in browser.current_url
    assert browser.current_url.split("#")[1].startswith("/chat/")
    # the entry with the key was replaced, not kept behind the chat's
    assert browser.execute_script("return history.length") == before + 1
    # session, not local, storage: the link does not "remember"
    assert browser.execute_script("return sessionStorage.getItem('famulus.key')") == famulus.key
    assert browser.execute_script("return localStorage.getItem('famulus.key')") is None
    assert browser.find_element(By.CSS_SELECTOR, ".views a.active").text == "Chat"
    assert console_errors(browser) == []


def test_paste_key_remember_and_sign_out(browser: WebDriver, famulus: Famulus) -> None:
    browser.get(f"{famulus.base_url}/health")
    browser.execute_script("sessionStorage.clear(); localStorage.clear();")
    browser.get(f"{famulus.base_url}/")
    wait_for(browser, "#key").send_keys("fam_wrong")
    browser.find_element(By.CSS_SELECTOR, ".sign-in button[type=submit]").click()
    wait_text(browser, "#sign-in-error", "not valid")
    field = browser.find_element(By.CSS_SELECTOR, "#key")
    field.clear()
    field.send_keys(famulus.key)
    browser.find_element(By.CSS_SELECTOR, "#remember").click()
    browser.find_element(By.CSS_SELECTOR, ".sign-in button[type=submit]").click()
    wait_for(browser, "#message")
    assert browser.execute_script("return localStorage.getItem('famulus.key')") == famulus.key
    browser.refresh()  # remembered: still signed in
    wait_for(browser, "#message")
    browser.find_element(By.CSS_SELECTOR, "#sign-out").click()
    wait_for(browser, "#key")
    assert browser.execute_script("return localStorage.getItem('famulus.key')") is None


@pytest.mark.parametrize("path", ["/", "/app.css", "/js/app.js", "/vendor/marked.esm.js"])
def test_static_files_carry_the_security_headers(famulus: Famulus, path: str) -> None:
    r = httpx.get(famulus.base_url + path)
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"


def _background(browser: WebDriver) -> str:
    return str(browser.execute_script("return getComputedStyle(document.body).backgroundColor"))


def test_dark_theme_follows_the_system(signed_in: WebDriver) -> None:
    try:
        signed_in.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
        )
        assert _background(signed_in) == "rgb(22, 24, 28)"
        signed_in.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "light"}]},
        )
        assert _background(signed_in) == "rgb(255, 255, 255)"
    finally:
        signed_in.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_phone_size_has_no_sideways_scrolling(signed_in: WebDriver) -> None:
    size = signed_in.get_window_size()
    try:
        signed_in.set_window_size(390, 844)
        wait_for(signed_in, "#message")
        assert signed_in.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth"
        )
        for css in ("#send", "#message", "#new-session", "#sign-out"):
            inside = signed_in.execute_script(
                "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
                "return r.top >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth",
                css,
            )
            assert inside, f"{css} is off screen"
        for css in ("#send", "#message"):  # fully visible, not cut on either side
            shown = signed_in.execute_script(
                "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
                "return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth",
                css,
            )
            assert shown, f"{css} is cut off"
        # no button of the composer or the chat's header reaches past the screen
        outside = signed_in.execute_script(
            "return [...document.querySelectorAll('.composer button, .chat-head button')]"
            ".filter((b) => b.offsetParent !== null)"
            ".filter((b) => { const r = b.getBoundingClientRect();"
            " return r.left < 0 || r.right > window.innerWidth; })"
            ".map((b) => b.id || b.textContent)"
        )
        assert outside == []
        # the composer's buttons stay on one line with Send, in short labels
        tops = signed_in.execute_script(
            "return [...document.querySelectorAll('.composer-actions button')]"
            ".filter((b) => b.offsetParent !== null)"
            ".map((b) => { const r = b.getBoundingClientRect(); return r.top + r.height / 2; })"
        )
        assert len(tops) >= 5 and max(tops) - min(tops) < 3, tops
        assert signed_in.find_element(By.CSS_SELECTOR, "#undo").text == "Undo"
    finally:
        signed_in.set_window_size(size["width"], size["height"])


def test_a_wrong_key_in_the_link_is_refused_and_removed(
    browser: WebDriver, famulus: Famulus
) -> None:
    browser.get(f"{famulus.base_url}/health")
    browser.execute_script("sessionStorage.clear(); localStorage.clear();")
    browser.get(f"{famulus.base_url}/#key=fam_not_the_key")
    wait_text(browser, "#sign-in-error", "not valid")
    assert "fam_not_the_key" not in browser.current_url
    assert browser.execute_script("return sessionStorage.length + localStorage.length") == 0
