"""The MCP view in a real browser: a stdio MCP server (tests/support/mcp_server.py)
added through the form, its secret shown by name only, its tools listed, trusted,
and removed."""

from __future__ import annotations

import time

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
from tests.support.mcp_server import stdio_command

SECRET = "browser-secret-value-42"


def test_add_list_tools_trust_and_remove(signed_in: WebDriver, famulus: Famulus) -> None:
    browser = signed_in
    console_errors(browser)
    wait_until(browser, "/^#\\/chat\\/./.test(location.hash)", timeout=20)
    browser.get(f"{famulus.base_url}/#/mcp")
    wait_text(browser, ".mcp-empty", "No MCP servers yet.")

    command, args = stdio_command()
    form = ".mcp-add"
    wait_for(browser, f"{form} input[name=name]").send_keys("calc")
    wait_for(browser, f"{form} input[name=command]").send_keys(command)
    wait_for(browser, f"{form} textarea[name=args]").send_keys("\n".join(args))
    wait_for(browser, f"{form} textarea[name=env]").send_keys(f"CALC_TOKEN={SECRET}")
    wait_for(browser, f"{form} button[type=submit]").click()

    item = ".mcp-server[data-name=calc]"
    wait_text(browser, f"{item} .mcp-status", "idle")
    assert "Secrets: CALC_TOKEN" in text_of(browser, item)
    assert SECRET not in browser.page_source

    wait_for(browser, f"{item} .mcp-show-tools").click()
    wait_for(browser, f"{item} .mcp-tool[data-name=calc_add]")
    wait_text(browser, f"{item} .mcp-status", "connected")
    assert "Add two integers." in text_of(browser, f"{item} .mcp-tool[data-name=calc_add]")

    wait_for(browser, f"{item} input.mcp-trusted").click()
    deadline = time.monotonic() + 10
    while not famulus.http.get("/mcp/servers/calc").json()["trusted"]:
        assert time.monotonic() < deadline, "ticking Trusted never reached the server"
        time.sleep(0.1)

    wait_for(browser, f"{item} .mcp-remove").click()
    wait_for(browser, "dialog.confirm [data-confirm]").click()
    wait_gone(browser, item)
    assert famulus.http.get("/mcp/servers").json() == {"servers": []}
    assert all_of(browser, ".mcp-server") == []
    assert console_errors(browser) == []
