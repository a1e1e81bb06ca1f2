"""Date expressions in facts and questions (famulus.memory.when)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from famulus.memory import anchors, when

SAID = datetime(2023, 5, 8, 12, tzinfo=UTC)  # a Monday
ASKED = datetime(2026, 11, 23, 9, tzinfo=UTC)


def _days(found: when.TimeRange | None) -> tuple[date, date] | None:
    return (found.start, found.end) if found else None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("We went hiking last Tuesday", date(2023, 5, 2), date(2023, 5, 2)),
        ("Next Friday I fly to Rome", date(2023, 5, 12), date(2023, 5, 12)),
        ("Ich war letzten Dienstag beim Arzt", date(2023, 5, 2), date(2023, 5, 2)),
        ("Bought a bike yesterday", date(2023, 5, 7), date(2023, 5, 7)),
        ("We married on May 2, 2023", date(2023, 5, 2), date(2023, 5, 2)),
        ("Moved to Berlin 3 years ago", date(2020, 1, 1), date(2020, 12, 31)),
        ("Im Juni war ich in Rom", date(2022, 6, 1), date(2022, 6, 30)),
        ("Her birthday party was on 14.07.2022", date(2022, 7, 14), date(2022, 7, 14)),
        ("in 2019 I lived in Lyon", date(2019, 1, 1), date(2019, 12, 31)),
        ("I met her on Friday", date(2023, 5, 5), date(2023, 5, 5)),
        ("The dentist appointment is on Friday", date(2023, 5, 12), date(2023, 5, 12)),
        ("We will fly to Oslo in June", date(2023, 6, 1), date(2023, 6, 30)),
        ("This May we painted the house", date(2023, 5, 1), date(2023, 5, 31)),
        ("Started the new job on June 5", date(2022, 6, 5), date(2022, 6, 5)),
        ("My thesis defense is set for May 30th", date(2023, 5, 30), date(2023, 5, 30)),
        ("The surgery is scheduled for June 5", date(2023, 6, 5), date(2023, 6, 5)),
    ],
)
def test_event_dates_resolve_relative_to_when_it_was_said(
    text: str, start: date, end: date
) -> None:
    assert _days(when.event_range(text, SAID)) == (start, end)


@pytest.mark.parametrize(
    "text",
    [
        "I have 3 kids",
        "I am 34 years old",
        "My flat is number 12",
        "I have 2000 euros in savings",
        "Went hiking with Sam",
        "We may go to the lake",
        "May I ask you something",
        "I march for the climate",
        "August is my cousin",
        "Jan likes green tea",
        "Do I have a dog?",
        "Guten Morgen, wie geht's",
        "The chess club meets on Thursday evenings",
        "My father's birthday is on the ninth of October",
        "I go swimming every Monday",
        "This may take a while",
        "June called about the flat",
        "April is my niece",
    ],
)
def test_numbers_names_and_verbs_are_not_dates(text: str) -> None:
    assert when.event_range(text, SAID) is None


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I eat in June?", date(2026, 6, 1), date(2026, 6, 30)),
        ("what did we do last year", date(2025, 1, 1), date(2025, 12, 31)),
        ("where was I last month?", date(2026, 10, 1), date(2026, 10, 31)),
        ("who called yesterday", date(2026, 11, 22), date(2026, 11, 22)),
        ("trips in 2023", date(2023, 1, 1), date(2023, 12, 31)),
        ("was habe ich letztes Jahr gelesen", date(2025, 1, 1), date(2025, 12, 31)),
        ("what happened in December", date(2025, 12, 1), date(2025, 12, 31)),
    ],
)
def test_questions_ask_about_the_latest_such_period(query: str, start: date, end: date) -> None:
    found = when.time_range(query, ASKED)
    assert _days(found) == (start, end)
    assert found is not None and found.text.lower() in query.lower()


def test_a_question_without_a_time_has_no_range() -> None:
    assert when.time_range("What is my sister's name?", ASKED) is None
    assert when.time_range("Do I have a dog?", ASKED) is None


def test_yesterday_is_the_persons_yesterday() -> None:
    late = datetime(2026, 11, 23, 23, 30, tzinfo=UTC)  # already the 24th in Berlin
    assert _days(when.time_range("yesterday", late, "Europe/Berlin")) == (
        date(2026, 11, 23),
        date(2026, 11, 23),
    )
    assert _days(when.time_range("yesterday", late, "UTC")) == (
        date(2026, 11, 22),
        date(2026, 11, 22),
    )


def test_a_transcript_line_says_when_it_was_said() -> None:
    time = when.stamp("[8 May 2023] Caroline: I went to the support group yesterday", None, "UTC")
    assert time.said_at == "2023-05-08T12:00:00.000Z"
    assert (time.event_start, time.event_end) == ("2023-05-07", "2023-05-07")
    dated = when.stamp("[2023-05-08 13:56] Bob: see you", None, "Europe/Berlin")
    assert dated.said_at == "2023-05-08T10:00:00.000Z"  # noon in Berlin
    # An explicit said_at wins; a prefix without a year or not a date is text.
    given = datetime(2024, 1, 2, 9, tzinfo=UTC)
    assert when.stamp("[8 May 2023] x", given, "UTC").said_at == "2024-01-02T09:00:00.000Z"
    assert when.stamp("[May] meeting notes", None, "UTC").said_at is None
    assert when.stamp("[todo] call the bank", None, "UTC").said_at is None


@pytest.mark.parametrize(
    ("query", "relation", "unit", "what"),
    [
        ("What did I take up the week after the concert?", "after", "week", "the concert"),
        ("Where did we eat before the wedding?", "before", None, "the wedding"),
        ("How has Amara been since her divorce?", "since", None, "her divorce"),
        ("What did Ana read following her surgery, and why?", "after", None, "her surgery"),
    ],
)
def test_a_question_can_be_timed_by_an_event(
    query: str, relation: str, unit: str | None, what: str
) -> None:
    found = anchors.find(query)
    assert found is not None
    assert (found.relation, found.unit, found.what) == (relation, unit, what)


@pytest.mark.parametrize(
    "query",
    [
        "Who looks after my daughter?",  # a phrasal verb, not a time
        "Which boat was named after her grandmother?",
        "What did we do before June 2023?",  # a date: when reads it
        "What did I eat?",
    ],
)
def test_not_every_before_or_after_is_an_event(query: str) -> None:
    assert anchors.find(query) is None


def test_the_period_around_an_event() -> None:
    wedding = date(2023, 6, 3)
    after = anchors.Anchor("after", "week", "the wedding", "the week after the wedding")
    assert _days(anchors.period(after, wedding, wedding, date(2026, 1, 1))) == (
        date(2023, 6, 3),
        date(2023, 6, 17),
    )
    before = anchors.Anchor("before", None, "the wedding", "before the wedding")
    assert _days(anchors.period(before, wedding, wedding, date(2026, 1, 1))) == (
        date(2023, 3, 3),
        date(2023, 6, 3),
    )


def test_a_text_full_of_unreadable_dates_costs_a_few_lookups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dateparser takes milliseconds per expression: 900 that do not resolve
    (31 February) made one 10,000-character fact cost seconds, a 5000-fact
    import hours. Only the first few spotted expressions are tried."""
    tried: list[str] = []
    real = when.resolve

    def counting(expression: str, base: datetime, default: str = "past") -> when.TimeRange | None:
        tried.append(expression)
        return real(expression, base, default)

    monkeypatch.setattr(when, "resolve", counting)
    text = "31.02.2023 " * 900
    assert when.event_range(text, SAID) is None
    assert when.time_range(text[:1000], ASKED) is None
    assert len(tried) <= 2 * when.MAX_TRIED
    assert _days(when.event_range("31.02.2023 then on 3 June 2023", SAID)) == (
        date(2023, 6, 3),
        date(2023, 6, 3),
    )
