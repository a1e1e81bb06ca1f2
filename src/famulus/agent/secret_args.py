"""Keep secrets that a model passes as tool arguments out of events and history.

A tool such as ``add_custom_model`` takes an ``api_key``; the call's arguments
are shown in ``tool_call`` and ``approval_needed`` events and stored with the
assistant message. Those copies carry a mask instead; the tool itself still
receives the real value.
"""

from __future__ import annotations

from typing import Any

SECRET_ARG_NAMES = frozenset(
    {"api_key", "apikey", "password", "client_secret", "access_token", "refresh_token"}
)
MASK = "[redacted]"


def public_args(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with the value of every secret-named argument masked (when set)."""
    return {
        key: (MASK if key.lower() in SECRET_ARG_NAMES and value not in (None, "") else value)
        for key, value in args.items()
    }
