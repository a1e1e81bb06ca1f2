"""Small things of the web client in a real browser: a view that is no longer
shown cannot move the person, deep links to a settings section, and the chat
sidebar noticing sessions made elsewhere."""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from tests.browser.conftest import Famulus
from tests.support.browser import console_errors, wait_for, wait_until

# Holds back the answer to GET /session (the chat view's "which session?") until
# the test lets it go, and marks when the view has had it.
HOLD_SESSION = """
const real = window.fetch;
window.__release = null;
window.__sessionDone = false;
window.fetch = async (input, init) => {
  const url = new URL(String(input), location.href);
  if (url.pathname !== "/session") return real(input, init);
  await new Promise((resolve) => { window.__release = resolve; });
  const response = await real(input, init);
  setTimeout(() => { window.__sessionDone = true; }, 300);
  return response;
};
"""


def test_a_late_navigate_from_a_view_left_behind_is_ignored(
    browser: WebDriver, famulus: Famulus
) -> None:
    browser.get(f"{famulus.base_url}/health")
    browser.execute_script("sessionStorage.clear(); localStorage.clear();")
    browser.get(f"{famulus.base_url}/")
    wait_for(browser, "#key").send_keys(famulus.key)
    browser.execute_script(HOLD_SESSION)
    browser.find_element(By.CSS_SELECTOR, ".sign-in button[type=submit]").click()
    wait_for(browser, "#sign-out")
    wait_until(browser, "window.__release !== null")  # chat asked which session to show
    browser.execute_script("location.hash = '#/settings'")
    wait_for(browser, "#settings-providers")
    browser.execute_script("window.__release()")
    wait_until(browser, "window.__sessionDone")
    # chat would now rewrite the address to #/chat/<id> and show itself again
    assert browser.execute_script("return location.hash") == "#/settings"
    assert browser.find_elements(By.CSS_SELECTOR, ".view-settings")
    assert not browser.find_elements(By.CSS_SELECTOR, ".view-chat")
    assert browser.find_element(By.CSS_SELECTOR, ".views a.active").text == "Settings"
    assert console_errors(browser) == []


def test_a_settings_deep_link_opens_at_its_section(signed_in: WebDriver) -> None:
    link = wait_for(signed_in, "#connect-model")  # no chat model in this module
    assert (
        link.find_element(By.CSS_SELECTOR, "#connect-model-link")
        .get_attribute("href")
        .endswith("#/settings/providers")
    )
    signed_in.execute_script("location.hash = '#/settings/embedding'")
    wait_for(signed_in, "#settings-embedding")
    # at the section's heading (scroll-margin-top leaves room above it), or
    # scrolled as far as the page goes with the section in sight
    wait_until(
        signed_in,
        """(() => {
          const v = document.querySelector('.view-settings');
          const top = document.querySelector('#settings-embedding').getBoundingClientRect().top
            - v.getBoundingClientRect().top;
          const atEnd = v.scrollTop + v.clientHeight >= v.scrollHeight - 2;
          return v.scrollTop > 0 && top >= 0 && (top < 100 || (atEnd && top < v.clientHeight / 2));
        })()""",
    )
    # an unknown section is just the settings page from the top
    signed_in.execute_script("location.hash = '#/settings/nonsense'")
    wait_for(signed_in, "#settings-providers")
    wait_until(signed_in, "document.querySelector('.view-settings').scrollTop === 0")
    assert console_errors(signed_in) == []


def test_the_sidebar_shows_sessions_made_elsewhere(signed_in: WebDriver, famulus: Famulus) -> None:
    wait_for(signed_in, ".session-list a.active")
    active = signed_in.find_element(By.CSS_SELECTOR, ".session-list a.active").get_attribute(
        "data-sid"
    )
    r = famulus.http.post("/sessions", json={"name": "made through the API"})
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    assert not signed_in.find_elements(By.CSS_SELECTOR, f'.session-list a[data-sid="{sid}"]')
    signed_in.execute_script("document.dispatchEvent(new Event('visibilitychange'))")
    item = wait_for(signed_in, f'.session-list a[data-sid="{sid}"]')
    assert "made through the API" in item.text
    # the selection stays on the session shown
    shown = signed_in.find_element(By.CSS_SELECTOR, ".session-list a.active")
    assert shown.get_attribute("data-sid") == active
    # nothing new: the list is left as it is (same elements)
    signed_in.execute_script("window.__item = document.querySelector('.session-list a')")
    signed_in.execute_script("window.dispatchEvent(new Event('focus'))")
    signed_in.execute_script("document.dispatchEvent(new Event('visibilitychange'))")
    wait_until(signed_in, "performance.getEntriesByName(location.origin + '/sessions').length >= 4")
    assert signed_in.execute_script(
        "return window.__item === document.querySelector('.session-list a')"
    )
    assert console_errors(signed_in) == []
