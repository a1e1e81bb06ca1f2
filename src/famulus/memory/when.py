"""When things happened: date expressions in facts and questions, resolved to day ranges.

Two uses, one parser:

- a fact's *event* date: "went hiking last Tuesday" said on 8 May 2023 is
  about 2 May 2023 (``event_range(text, said_at)``);
- a question's *time range*: "what did I eat in June?" asked in November 2026
  is about 1–30 June 2026 (``time_range(query, now)``); recall boosts the
  candidates whose date falls in it (``boost``), and the conversation search
  ranks messages by the same stage (``rerank``, ``said_or_about``).

Spotting and resolving are split on purpose. ``dateparser`` resolves an
expression well (relative to a base date, in many languages, with its
granularity: day, week, month, year), but its free-text search mistakes
ordinary words for dates ("do" → Donnerstag, "we", "Sam" → Samstag,
"I am 34 years" → 1989). So the expressions are spotted here by a
deliberately narrow pattern (month and weekday names, yesterday/today,
last/next/this + unit, N units ago, dates written with digits, a year after
"in"), English and German, and only those spans go to ``dateparser``.
Missing a date costs little (recall works as before); a false one would
push unrelated facts up, so the pattern errs on the side of missing.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from dateparser.date import DateDataParser

from famulus.memory import recall as fusion
from famulus.store.memory.facts import FactRow, FactTime
from famulus.timeutil import iso, parse_iso, utcnow

LANGUAGES = ["en", "de"]
# The days a date may name. Year 1 or 9999 is a typo or a probe, and at the
# ends of the calendar the day arithmetic here overflows (the season before
# the day, the day after it) and a year before 1000 is stored as "1-01-01T…".
FIRST_DAY, LAST_DAY = date(1000, 1, 1), date(8999, 12, 31)
# At most this many spotted expressions of one text go to dateparser (a few
# milliseconds each): a text of hundreds that never resolve ("31.02.2023 …")
# would hold the server for seconds per fact. The date that matters comes early.
MAX_TRIED = 8

_MONTHS = (
    "january|february|july|september|october|november|december|"
    "januar|jänner|februar|märz|mai|juni|juli|oktober|dezember"
)
# Words that are also verbs, names or adjectives ("may", "march", "august",
# "April", "June"): a month only next to a number or after a word that
# introduces a time ("in June", not "June called").
_AMBIGUOUS_MONTHS = "may|march|august|april|june"
_LEAD = (
    r"in|im|of|since|until|till|before|after|during|early|late|mid|last|next|this|"
    r"seit|bis|vor|nach|anfang|ende|mitte|letzten|nächsten|diesen|am|on|from|von"
)
_WEEKDAYS = (
    "monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    "montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonnabend|sonntag"
)
_DAYS = "yesterday|today|tomorrow|tonight|day before yesterday|gestern|vorgestern|heute|übermorgen"
_UNITS = "day|week|month|year|tag|woche|monat|jahr"
_NUMBER = r"\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|einem|einer|zwei|drei|vier|fünf|sechs"
_PREV = r"last|previous|past|letzte[nmrs]?|vergangene[nmrs]?|vorige[nmrs]?"
_NEXT = r"next|coming|nächste[nmrs]?|kommende[nmrs]?"
_THIS = r"this|diese[nmrs]?"
_DAY_NUM = r"\d{1,2}(?:st|nd|rd|th|\.)?"
_YEAR = r"(?:19|20)\d{2}"
_MONTH_ANY = rf"(?:{_MONTHS}|{_AMBIGUOUS_MONTHS})"

_MONTH_DATE = (
    rf"(?:(?:{_LEAD})\s+)?(?:(?:the\s+)?{_DAY_NUM}\s+(?:of\s+)?)?{_MONTH_ANY}"
    rf"(?:\s+{_DAY_NUM}(?!\d))?(?:,?\s+{_YEAR})?"
)  # in June, 2 May 2023, May 2, 2023, the 3rd of June, im Mai
_PATTERNS = [
    r"\d{4}-\d{2}-\d{2}",  # ISO
    rf"\d{{1,2}}[./]\d{{1,2}}[./](?:{_YEAR}|\d{{2}})",  # 2.5.2023, 05/02/23
    _MONTH_DATE,
    rf"(?:(?:{_PREV}|{_NEXT}|{_THIS}|on|am)\s+)?(?:{_WEEKDAYS})",  # last Tuesday
    rf"(?:{_DAYS})",
    rf"(?:{_PREV}|{_NEXT}|{_THIS})\s+(?:{_UNITS})",  # last year, letztes Jahr
    rf"(?:{_NUMBER})\s+(?:{_UNITS})(?:s|en|e|n)?\s+ago",  # 3 years ago
    rf"vor\s+(?:{_NUMBER})\s+(?:{_UNITS})(?:s|en|e|n)?",  # vor drei Jahren
    rf"(?:in|im|during|of|since|year|jahr|jahre)\s+{_YEAR}",  # in 2023
]
_SPOT = re.compile(
    r"(?<![\w-])(?:" + "|".join(f"(?:{p})" for p in _PATTERNS) + r")(?![\w-])", re.IGNORECASE
)
# A fact about something that repeats has no one event day ("the club meets on
# Thursday evenings", "my birthday is the ninth of October").
_RECURRING = re.compile(
    r"\b(?:every|each|usually|always|weekly|monthly|yearly|annually|birthday|anniversary"
    r"|jede[nmrs]?|immer|wöchentlich|monatlich|jährlich|geburtstag|jahrestag)\b"
    rf"|(?:{_WEEKDAYS})\s+(?:mornings|afternoons|evenings|nights)\b",
    re.IGNORECASE,
)
# Plans look ahead: "the appointment is on Friday" is the coming Friday.
_FUTURE = re.compile(
    r"\b(?:will|going to|plan(?:s|ning)?|appointment|upcoming|is on|are on|is due"
    r"|(?:is|are|was|got) (?:set|scheduled|booked) for|scheduled|booked for"
    r"|werde|wird|geplant|termin|ist am)\b|'ll\b",
    re.IGNORECASE,
)
_YEAR_IN = re.compile(rf"\b{_YEAR}\b|\d{{1,2}}[./]\d{{1,2}}[./]\d{{2}}")
# "I am June's aunt", "this may take a while": such a lead does not make a
# month ("this May" written with a capital does).
_BARE_AMBIGUOUS = re.compile(
    rf"^(?:(?i:am)\s+)?(?i:{_AMBIGUOUS_MONTHS})$|^(?i:this)\s+(?:{_AMBIGUOUS_MONTHS})$"
)
_NEXT_WORD = re.compile(rf"^(?:{_NEXT})\s+", re.IGNORECASE)
_PREV_WORD = re.compile(rf"^(?:{_PREV})\s+", re.IGNORECASE)
# What dateparser does not need (and sometimes chokes on) in front of an expression.
_LEAD_WORD = re.compile(rf"^(?:{_LEAD}|during|of)\s+", re.IGNORECASE)


@dataclass(frozen=True)
class TimeRange:
    """A span of whole days, both ends included, and the words it was read from."""

    start: date
    end: date
    text: str

    def overlaps(self, start: date, end: date) -> bool:
        return start <= self.end and end >= self.start


def spot(text: str) -> list[str]:
    """The date expressions in ``text``, in order (before resolving them)."""
    found = [m.group(0) for m in _SPOT.finditer(text)]
    # "may", "June" alone are a verb, a name: a month only with company.
    return [f for f in found if not _BARE_AMBIGUOUS.match(f)]


def resolve(expression: str, base: datetime, default: str = "past") -> TimeRange | None:
    """One spotted expression as a day range, relative to ``base`` (naive, local).

    "last …" looks back and "next …" ahead; bare months and weekdays go the
    ``default`` way: the past for questions and reports ("in June" asked in May
    is last year's June; "on Tuesday" the Tuesday before), the future for plans.
    """
    words = " ".join(expression.split())
    if _NEXT_WORD.match(words):
        prefer = "future"
    elif _PREV_WORD.match(words):
        prefer = "past"
    else:
        prefer = default
    for attempt in _variants(words):
        found = _parser(base, prefer).get_date_data(attempt)
        if found.date_obj is not None:
            if not FIRST_DAY <= found.date_obj.date() <= LAST_DAY:
                return None
            return _span(found.date_obj.date(), found.period or "day", words)
    return None


def _variants(words: str) -> list[str]:
    """The expression, then without its lead word ("im Juni" → "Juni"), then, for
    "letzten Dienstag" / "nächsten Freitag", the weekday alone (the direction is
    already in ``prefer``)."""
    out = [words, _LEAD_WORD.sub("", words)]
    out.append(_NEXT_WORD.sub("", _PREV_WORD.sub("", words)))
    return list(dict.fromkeys(w for w in out if w))


def _parser(base: datetime, prefer: str) -> DateDataParser:
    settings: dict[str, Any] = {
        "RELATIVE_BASE": base.replace(tzinfo=None, microsecond=0),
        "PREFER_DATES_FROM": prefer,
        "RETURN_TIME_AS_PERIOD": True,
        "DATE_ORDER": "DMY",
    }
    return DateDataParser(languages=LANGUAGES, settings=settings)


def _span(day: date, period: str, text: str) -> TimeRange:
    if period == "year":
        return TimeRange(date(day.year, 1, 1), date(day.year, 12, 31), text)
    if period == "month":
        last = calendar.monthrange(day.year, day.month)[1]
        return TimeRange(date(day.year, day.month, 1), date(day.year, day.month, last), text)
    if period == "week":
        monday = day - timedelta(days=day.weekday())
        return TimeRange(monday, monday + timedelta(days=6), text)
    return TimeRange(day, day, text)


def first_range(text: str, base: datetime, default: str = "past") -> TimeRange | None:
    """The first date expression of ``text`` that resolves, relative to ``base``
    (a bare "Friday" or "June" taken from the ``default`` direction)."""
    for expression in spot(text)[:MAX_TRIED]:
        found = resolve(expression, base, default)
        if found is not None:
            return found
    return None


def local(moment: datetime, zone: str) -> datetime:
    """``moment`` as the wall-clock time of ``zone`` (naive): what "yesterday" means."""
    return moment.astimezone(_zone(zone)).replace(tzinfo=None)


def event_range(text: str, said_at: datetime, zone: str = "UTC") -> TimeRange | None:
    """When the event a fact tells of happened, if its text says so: none for
    what repeats (unless a date with its year is given); a bare weekday or month is the coming one in a plan ("the
    appointment is on Friday"), else the last one ("I met her on Friday")."""
    default = "future" if _FUTURE.search(text) else "past"
    base = local(said_at, zone)
    recurring = _RECURRING.search(text) is not None
    for expression in spot(text)[:MAX_TRIED]:
        if recurring and not _YEAR_IN.search(expression):  # a full date still counts
            continue
        found = resolve(expression, base, default)
        if found is not None:
            return found
    return None


def time_range(query: str, now: datetime, zone: str = "UTC") -> TimeRange | None:
    """The time a question asks about ("in June", "last year", "yesterday"), or None.

    The reusable entry point for any search over dated things: keep the items
    whose date falls in ``start``..``end`` (both included), or rank them first.
    """
    return first_range(query, local(now, zone))


# "[8 May 2023] Caroline: …", "[2023-05-08 13:56] …": how transcripts and
# chat exports date each line. Such a prefix says when the line was said.
_SAID_PREFIX = re.compile(r"^\s*\[([^\]\n]{6,40})\]\s*")


def said_in_text(text: str, zone: str) -> tuple[datetime, str] | None:
    """The moment a leading bracketed full date (with its year) says, and the rest."""
    match = _SAID_PREFIX.match(text)
    if match is None or not _YEAR_IN.search(match.group(1)):
        return None
    found = resolve(match.group(1), local(utcnow(), zone))
    if found is None or found.start != found.end:
        return None
    return said_moment(found.start, zone), text[match.end() :]


def stamp(text: str, said: datetime | None, zone: str, event: TimeRange | None = None) -> FactTime:
    """A new fact's time: when it was said (None: a leading "[8 May 2023]" of the
    text, else now, as the store writes it), and its event's days (``event`` if
    the extraction gave them, else read from the rest of the text relative to
    when it was said: "[8 May 2023] … yesterday" is about 7 May)."""
    prefixed = said_in_text(text, zone) if said is None else None
    if prefixed is not None:
        said, text = prefixed
    event = event or event_range(text, said or utcnow(), zone)
    return FactTime(
        said_at=iso(said) if said else None,
        event_start=event.start.isoformat() if event else None,
        event_end=event.end.isoformat() if event else None,
    )


def said_moment(value: datetime | date, zone: str) -> datetime:
    """An outside ``said_at`` as an aware moment: a bare date is noon of that day
    and a naive time is wall-clock time, both in the person's ``zone``."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, 12)
    if value.tzinfo is None:
        value = value.replace(tzinfo=_zone(zone))
    return value


def _zone(zone: str) -> ZoneInfo:
    try:
        return ZoneInfo(zone)
    except (KeyError, ValueError, OSError):
        return ZoneInfo("UTC")


# -- recall: the time stage ---------------------------------------------------

# A fact of the asked period scores as if it had also topped both retrievers,
# so it passes look-alikes of other periods even when they matched the words
# better: in effect a soft filter, in-period facts first, the rest after them in
# their own order (a misread question re-orders, it never empties the answer).
# A fact found by its date alone (no word or meaning matched) joins at a
# quarter of that, behind the facts the words or their meaning found.
TIME_BOOST = (fusion.W_FTS + fusion.W_VEC) * (1 + fusion.AGREEMENT) / (fusion.RRF_K + 1)
DATE_ONLY = 0.25 * TIME_BOOST


def fact_days(row: FactRow, zone: str) -> tuple[date, date]:
    """The days a fact is about: its event's, else the day it was said."""
    if row.event_start and row.event_end:
        return date.fromisoformat(row.event_start), date.fromisoformat(row.event_end)
    said = local(parse_iso(row.said_at or row.created_at), zone).date()
    return said, said


def said_bounds(span: TimeRange, zone: str) -> tuple[str, str]:
    """The span's first and first-after-last moment in the person's zone, as the
    UTC timestamps ``said_at`` is stored in (for a store query)."""
    tz = _zone(zone)
    start = datetime.combine(span.start, datetime.min.time(), tz)
    end = datetime.combine(span.end + timedelta(days=1), datetime.min.time(), tz)
    return iso(start), iso(end)


def boost(
    hits: list[fusion.Hit],
    rows: dict[int, FactRow],
    span: TimeRange,
    zone: str,
    dated_only: list[int] | None = None,
) -> list[fusion.Hit]:
    """Fused hits re-ranked for a question about ``span``: facts of that period
    go up by ``TIME_BOOST``; ``dated_only`` (found by date, not by text) join
    at ``DATE_ONLY``. Best first; the caller cuts to its limit."""
    return rerank(
        hits,
        lambda i: i in rows and _within(rows[i], span, zone),
        [i for i in dated_only or [] if i in rows],
    )


def rerank(
    hits: list[fusion.Hit], inside: Callable[[int], bool], dated_only: list[int]
) -> list[fusion.Hit]:
    """The time stage for any dated candidates (facts, messages): hits for which
    ``inside`` holds go up by ``TIME_BOOST``, ids of ``dated_only`` the text
    search missed join at ``DATE_ONLY``. Best first; the caller cuts."""
    seen = {h.id for h in hits}
    ranked = [replace(h, score=h.score + TIME_BOOST) if inside(h.id) else h for h in hits]
    extra = [i for i in dict.fromkeys(dated_only) if i not in seen]
    ranked += [fusion.Hit(i, DATE_ONLY, None, None, None) for i in extra]
    return sorted(ranked, key=lambda h: -h.score)


def said_or_about(
    span: TimeRange, said_at: str, event_start: str | None, event_end: str | None, zone: str
) -> bool:
    """A message is of the period when it was said in it (its day in ``zone``)
    or its text names a day in it ("next Friday" said in April, asked about May)."""
    said = local(parse_iso(said_at), zone).date()
    if span.overlaps(said, said):
        return True
    if event_start and event_end:
        return span.overlaps(date.fromisoformat(event_start), date.fromisoformat(event_end))
    return False


def _within(row: FactRow, span: TimeRange, zone: str) -> bool:
    return span.overlaps(*fact_days(row, zone))


def label(row: FactRow, zone: str) -> str:
    """A fact's dates for the prompt: "2023-05-08", or "said 2023-05-08, about
    2023-05-02" (or "… about 2022-06-01 to 2022-06-30") when its event has days."""
    said = local(parse_iso(row.said_at or row.created_at), zone).date().isoformat()
    if not (row.event_start and row.event_end):
        return said
    about = row.event_start
    if row.event_end != row.event_start:
        about = f"{row.event_start} to {row.event_end}"
    return f"said {said}, about {about}"
