"""Which data source a tool draws on, for a session's ``sources`` list.

A session's ``sources`` names the sources the agent actually consulted in it
(memory, web, mail, calendar, skills), in the order first used, so a client
can show where an answer came from. Only tools that succeed count.
"""

from __future__ import annotations

TOOL_SOURCES: dict[str, str] = {
    "recall": "memory",
    "remember": "memory",
    "forget": "memory",
    "web_search": "web",
    "fetch_page": "web",
    "search_mail": "mail",
    "read_mail": "mail",
    "send_mail": "mail",
    "calendar_events": "calendar",
    "create_calendar_event": "calendar",
    "run_skill_script": "skills",
    "install_skill": "skills",
}


def source_of(tool_name: str) -> str | None:
    return TOOL_SOURCES.get(tool_name)
