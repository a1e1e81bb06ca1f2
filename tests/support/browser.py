"""Driving Debian's Chromium with Selenium for the web client's browser tests.

The driver is ``/usr/bin/chromedriver`` with ``/usr/bin/chromium`` (packages
``chromium`` and ``chromium-driver``): both paths are given explicitly, so
Selenium Manager never tries to download a browser or a driver. Helpers wait on
conditions (never sleep): ``wait_for`` an element, ``wait_text`` until an
element's text holds a string, ``text_of`` an element now.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REQUIRE_ENV = "FAMULUS_REQUIRE_TEST_SERVERS"  # set by .ci/run: missing Chromium fails
TIMEOUT = 20.0  # waits end as soon as the condition holds; generous for a loaded 2-core CI


def available() -> bool:
    return CHROMIUM.exists() and CHROMEDRIVER.exists()


def required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1"


def chromium(width: int = 1280, height: int = 900) -> WebDriver:
    """A headless Chromium that keeps its console log (for CSP or script errors)."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-features=Translate,OptimizationHints,MediaRouter",
        "--proxy-server=direct://",
        "--proxy-bypass-list=*",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(30)
    return driver


def wait_for(driver: WebDriver, css: str, timeout: float = TIMEOUT) -> WebElement:
    """The first element matching ``css`` once it is visible."""
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, css)), f"no visible {css!r}"
    )


def wait_gone(driver: WebDriver, css: str, timeout: float = TIMEOUT) -> None:
    WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        ec.invisibility_of_element_located((By.CSS_SELECTOR, css)), f"{css!r} still shown"
    )


def wait_text(driver: WebDriver, css: str, text: str, timeout: float = TIMEOUT) -> WebElement:
    """The first element matching ``css`` once its text contains ``text``."""
    WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text),
        f"{css!r} never showed {text!r}",
    )
    return driver.find_element(By.CSS_SELECTOR, css)


def wait_until(driver: WebDriver, script: str, timeout: float = TIMEOUT) -> Any:
    """Waits until the JavaScript expression ``script`` is truthy; returns its value."""
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        lambda d: d.execute_script(f"return ({script});"), f"never true: {script}"
    )


def text_of(driver: WebDriver, css: str) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def all_of(driver: WebDriver, css: str) -> list[WebElement]:
    return list(driver.find_elements(By.CSS_SELECTOR, css))


def console_errors(driver: WebDriver) -> list[str]:
    """Console entries of level SEVERE since the last call (CSP violations, uncaught
    errors, failed module loads)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
