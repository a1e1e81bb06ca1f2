"""Regenerate the README's screenshots of the web client (docs/screenshots/).

Runs what the browser tests run: a real ``famulus serve`` on a temporary home,
the scripted OpenAI-compatible model server as its chat model, and Debian's
headless Chromium. It plays a short conversation, then photographs each entry
of SHOTS in the light theme, the dark theme and (chat only) at phone size.

    PYTHONPATH=src:. .venv/bin/python scripts/screenshots.py

To add a view, append (file name, hash route, what to wait for) to SHOTS.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.browser import chromium, wait_for, wait_text  # noqa: E402
from tests.support.live import ServerProcess  # noqa: E402
from tests.support.scripted_openai import ScriptedOpenAI, Turn  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
KEY = "screenshot-key-0123456789abcdefghijklmnopqrstuv"
MODEL = "scripted-model"

# (file name, hash route, a CSS selector that shows when the view is drawn)
SHOTS: list[tuple[str, str, str]] = [
    ("chat", "#/chat", "#transcript .msg.assistant"),
    ("automations", "#/automations", ".auto-list .auto"),
    ("settings", "#/settings", ".directives-text"),
    ("memory", "#/memory/facts", ".mem-facts .mem-fact"),
    ("skills", "#/skills", ".skills-builtin .skills-item"),
]

FACTS = [
    "My sister Ines lives in Porto",
    "I prefer green tea, never coffee after 3 pm",
    "Piano lessons are on Tuesdays at 18:00",
    "The dentist is Dr. Almeida, Rua Augusta 12",
]

ANSWER = """Here is a plan for **three days in Lisbon**:

1. *Day 1*: Alfama and the castle, fado in the evening.
2. *Day 2*: Belém: the tower, the monastery, pastéis de nata.
3. *Day 3*: a day trip to Sintra.

A budget helper:

```python
def budget(days, per_day=120):
    return days * per_day
```
"""


def converse(http: httpx.Client, model: ScriptedOpenAI) -> str:
    """One session with a tool call and a Markdown answer."""
    sid = str(http.post("/sessions", json={"name": "Trip to Lisbon"}).json()["session_id"])
    http.post("/sessions", json={"name": "Groceries"})
    model.push(Turn(tool_calls=[("current_time", {})]), Turn(text=ANSWER))
    r = http.post("/chat/message", json={"message": "Plan 3 days in Lisbon", "session_id": sid})
    r.raise_for_status()
    return sid


def automate(http: httpx.Client) -> None:
    """Two automations for the automations view (not run: the model's queue is chat's)."""
    for body in (
        {
            "name": "Morning brief",
            "description": "Summarize today's calendar and anything urgent in my mail.",
            "trigger": {"type": "time", "at": "07:30", "days": "weekdays"},
        },
        {
            "name": "Inbox watch",
            "description": "Tell me when a mail from my landlord arrives.",
            "trigger": {"type": "time", "every": "30m"},
        },
    ):
        http.post("/automations", json=body).raise_for_status()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAI([MODEL]) as model:
        server = ServerProcess(Path(tmp) / "home", env={"FAMULUS_API_KEY": KEY}).start()
        try:
            with httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=10
            ) as http:
                http.post(
                    "/models/custom",
                    json={
                        "model_id": MODEL,
                        "base_url": model.base_url,
                        "context_window": 200000,
                        "max_output_tokens": 8000,
                    },
                ).raise_for_status()
                sid = converse(http, model)
                automate(http)
                http.post("/facts/import", json={"facts": [{"text": t} for t in FACTS]})
            shoot(server.base_url, sid)
        finally:
            server.stop()


def shoot(base_url: str, sid: str) -> None:
    for scheme in ("light", "dark"):
        driver = chromium(1280, 800)
        try:
            driver.execute_cdp_cmd(
                "Emulation.setEmulatedMedia",
                {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
            )
            driver.get(f"{base_url}/#key={KEY}")
            wait_for(driver, "#sign-out")
            for name, route, ready in SHOTS:
                target = f"#/chat/{sid}" if name == "chat" else route
                driver.execute_script("location.hash = arguments[0]", target)
                wait_for(driver, ready, timeout=30)
                if name == "chat":
                    wait_text(driver, "#transcript", "day trip to Sintra", timeout=30)
                    wait_for(driver, "#transcript pre code.hljs")
                driver.save_screenshot(str(OUT / f"{name}-{scheme}.png"))
            if scheme == "light":
                driver.set_window_size(390, 844)
                driver.save_screenshot(str(OUT / "chat-phone.png"))
        finally:
            driver.quit()
    print(f"screenshots written to {OUT}")


if __name__ == "__main__":
    main()
