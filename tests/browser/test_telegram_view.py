"""The Telegram section of Settings in a real browser: a stranger's pairing
request is approved with its button, and the allowed chat removed again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.remote.webdriver import WebDriver
from tests.browser.conftest import Famulus
from tests.support.browser import console_errors, wait_for, wait_gone, wait_text, wait_until
from tests.support.fake_telegram import FakeTelegram

TOKEN = "4242:AAFakeTelegramTokenForTheBrowserTest"


@pytest.fixture(scope="module")
def bot() -> Iterator[FakeTelegram]:
    fake = FakeTelegram(TOKEN).start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def famulus_env(bot: FakeTelegram) -> dict[str, str]:
    return {"FAMULUS_TELEGRAM_BASE_URL": bot.url, "TELEGRAM_BOT_TOKEN": TOKEN}


def test_approve_and_remove_a_chat(
    signed_in: WebDriver, famulus: Famulus, bot: FakeTelegram
) -> None:
    bot.message(777, "hello", name="Grace")
    code = bot.wait_text(777, "give them this code").text.split("\n\n")[1]
    wait_until(signed_in, "location.hash.startsWith('#/chat/')")
    signed_in.execute_script("location.hash = '#/settings/telegram'")
    wait_text(signed_in, ".settings-telegram .telegram-state .badge", "listening", timeout=20)
    item = wait_for(signed_in, f".telegram-pairing[data-code='{code}']")
    assert "Grace" in item.text
    item.find_element("css selector", ".telegram-approve").click()
    wait_for(signed_in, ".telegram-chat[data-chat='777']")
    wait_for(signed_in, ".telegram-no-pairings")
    bot.wait_text(777, "Your chat is approved")

    signed_in.find_element(
        "css selector", ".telegram-chat[data-chat='777'] .telegram-remove"
    ).click()
    wait_for(signed_in, "dialog.confirm [data-confirm]").click()
    wait_gone(signed_in, ".telegram-chat[data-chat='777']")
    assert famulus.http.get("/channels/telegram").json()["chats"] == []
    assert console_errors(signed_in) == []
