"""Questions timed by another event: "before the wedding", "the week after the concert".

``when`` reads a time that names a date ("in June", "last year"). A person as
often times a question by something that happened ("what did we buy before
the wedding?"), and only memory knows when that was. The event's words are
looked up in memory; when exactly one fact holds all of them, that fact's
day becomes the period asked about (the season before it, the week after
it, …), and the time stage ranks that period's facts first as for "in June".

Why so strict: a looser lookup (the best fact for the words by the hybrid
ranking) was measured on the conversation bench and cost recall — "the
concert" was found as somebody else's concert, and a wrong anchor ranks the
wrong season first. Phrasal verbs that are not about time ("looks after my
daughter", "named after her grandmother") are left out, and so is an anchor
that is itself a date (``when`` has read it already).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from famulus.memory import when

_RELATION = re.compile(
    r"\b(?:the\s+(?P<unit>day|weekend|week|month|year)\s+)?"
    r"(?P<rel>before|after|since|until|following|prior\s+to)\s+"
    r"(?P<what>(?:the|my|our|his|her|their|your|\w+'s)\s+[^?.!,;]{2,60}?)"
    r"(?=\s+and\s|[?.!,;]|$)",
    re.IGNORECASE,
)
# "looks after", "named after", "takes after", "asked after": not about time.
_PHRASAL = re.compile(
    r"\b(?:look(?:s|ed|ing)?|named|tak(?:e|es|en|ing)|took|ask(?:s|ed|ing)?|"
    r"chas(?:e|es|ed|ing)|run(?:s|ning)?|ran|go(?:es|ing)?|went|came|come|"
    r"cares?|cared|seek(?:s|ing)?|sought)\s*$",
    re.IGNORECASE,
)
UNIT_DAYS = {"day": 1, "weekend": 3, "week": 7, "month": 31, "year": 366}
OPEN_DAYS = 92  # "before the wedding" with no unit: the season before it
SLACK = 2  # "the week after" is said loosely: twice the unit counts


@dataclass(frozen=True)
class Anchor:
    relation: str  # before | after | since | until
    unit: str | None  # day | weekend | week | month | year
    what: str  # the event's words, looked up in memory
    text: str  # the whole phrase, as the answer's time_range shows it


def find(query: str) -> Anchor | None:
    """The first "before/after <event>" of ``query`` whose event is not a date."""
    for match in _RELATION.finditer(query):
        if _PHRASAL.search(query[: match.start()]):
            continue
        what = match.group("what").strip()
        if when.spot(what):
            continue
        relation = " ".join(match.group("rel").lower().split())
        relation = {"following": "after", "prior to": "before"}.get(relation, relation)
        unit = match.group("unit")
        return Anchor(relation, unit.lower() if unit else None, what, match.group(0).strip())
    return None


def period(anchor: Anchor, start: date, end: date, today: date) -> when.TimeRange:
    """The days asked about, given the anchor event's first and last day. The
    event's own days are included: the anchor is often half of the answer
    ("which injury stopped my training before the race?")."""
    span = timedelta(days=SLACK * UNIT_DAYS[anchor.unit] if anchor.unit else OPEN_DAYS)
    if anchor.relation in ("before", "until"):
        return when.TimeRange(start - span, end, anchor.text)
    if anchor.relation == "since":
        return when.TimeRange(start, max(today, end), anchor.text)
    return when.TimeRange(start, end + span, anchor.text)
