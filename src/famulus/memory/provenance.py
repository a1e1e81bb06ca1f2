"""Where a recalled memory came from, said on the line the agent reads.

Every fact and observation injected into the prompt ends with its source: the
conversation it was said in (by the session's name) and the date, or that it
was added by hand, came from mail, the calendar, the web, an automation or an
MCP client. The agent can then weigh a memory by its origin ("you told me in
'Trip planning'") instead of treating every line as equally certain.
"""

from __future__ import annotations

from famulus.store.memory.facts import FactRow
from famulus.store.memory.observations import ObservationRow

NAME_CHARS = 60  # a session's name as quoted in a memory line
# Sources whose ``source_ref`` is the id of the session the fact was learned in.
_SESSION_SOURCES = ("chat", "automation")
_PLAIN = {
    "manual": "added by hand",
    "mail": "from mail",
    "calendar": "from the calendar",
    "web": "from the web",
    "init": "from the first-run interview",
    "mcp": "added by an MCP client",
}


def fact_session(fact: FactRow) -> str | None:
    """The session a fact was learned in, if it names one."""
    if fact.source_type in _SESSION_SOURCES and fact.source_ref:
        return fact.source_ref
    session = fact.provenance.get("session_id")
    return session if isinstance(session, str) and session else None


def fact_source(fact: FactRow, session_names: dict[str, str], day: str | None = None) -> str:
    """E.g. ``said in "Trip planning", 2026-05-08`` or ``added by hand, 2026-05-08``;
    ``day`` replaces the date (the time stage's "said …, about …", ``when.label``)."""
    day = day or fact.created_at[:10]
    session = fact_session(fact)
    name = session_names.get(session) if session else None
    if fact.source_type == "automation":
        where = f'in automation session "{_quoted(name)}"' if name else "in an automation"
        return f"learned {where}, {day}"
    if fact.source_type == "chat":
        where = f'said in "{_quoted(name)}"' if name else "said in a conversation"
        return f"{where}, {day}"
    plain = _PLAIN.get(fact.source_type, f"from {fact.source_type}")
    return f"{plain}, {day}"


def fact_line(fact: FactRow, session_names: dict[str, str], day: str | None = None) -> str:
    return f"- {fact.text} (fact #{fact.id}, {fact.kind}; {fact_source(fact, session_names, day)})"


def observation_line(obs: ObservationRow) -> str:
    """An observation is drawn from facts, not from one place: it says how many."""
    facts = "fact" if obs.evidence_count == 1 else "facts"
    return (
        f"- {obs.summary} (observation #{obs.id}; a pattern in {obs.evidence_count}"
        f" remembered {facts}, {obs.updated_at[:10]})"
    )


def _quoted(name: str) -> str:
    """A session name fit to quote on one line: no quotes or line breaks, capped."""
    flat = " ".join(name.replace('"', "'").split())
    return flat if len(flat) <= NAME_CHARS else flat[: NAME_CHARS - 1] + "…"
