"""Names and defaults of the configuration values kept in the ``kv`` table.

Several areas read the same switches (chat, memory, config API); naming them
in one place keeps them from drifting apart.
"""

from __future__ import annotations

CHAT_MODEL = "config.chat_model"
RESEARCH_MODEL = "config.research_model"
MEMORY_MODEL = "config.memory_model"
EMBEDDING_MODEL = "config.embedding_model"
MEMORY_ENABLED = "config.memory_enabled"
DREAMS_ENABLED = "config.dreams_enabled"
ACCOUNT_ENABLED = "config.account_enabled"
WEB_SEARCH_MODE = "config.web_search"
# The notifier name the agent's ``schedule`` tool uses when none is named.
DEFAULT_NOTIFIER = "config.default_notifier"
# USD caps chosen with PATCH /config (a number, or null for "no cap"); unset: the setting.
BUDGET_DAILY = "config.budget_daily"
BUDGET_MONTHLY = "config.budget_monthly"
# + "daily" | "monthly" | "automation": the period whose 80 % notice went out.
BUDGET_NOTICE_PREFIX = "usage.notice."

DEFAULTS: dict[str, object] = {
    MEMORY_ENABLED: True,
    DREAMS_ENABLED: False,
    ACCOUNT_ENABLED: False,
    WEB_SEARCH_MODE: "auto",
}
