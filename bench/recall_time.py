"""Temporal recall benchmark: questions that name a time, with and without the time stage.

    .venv/bin/python bench/recall_time.py

A year of look-alike facts: for each of five everyday topics one fact a
month, worded alike ("Had dinner at Luigi's, the risotto"), each said in its
own month (``said_at``, as an import through ``POST /facts`` would give it),
plus one trip a month told the month after ("Last month I was in Lisbon",
so only its event date, not when it was said, names the month). The 200
facts of ``bench/data/recall_set.json`` are mixed in as unrelated memory.
Questions ask about one month ("What did I have for dinner in March?",
"… in March 2026?", "… last month?"); the wanted answer is that month's fact.
Recall@5 and @10 are printed for hybrid recall with and without
``famulus.memory.when`` (the time stage).
"""

from __future__ import annotations

import asyncio
import calendar
import json
import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from famulus.memory.embeddings import LocalEmbedder
from famulus.memory.index import VectorIndex
from famulus.memory.service import MemoryService
from famulus.memory.vectors import Space
from famulus.settings import Settings
from famulus.store.db import Database
from famulus.store.kv import KVStore
from famulus.timeutil import utcnow

DATA = Path(__file__).parent / "data" / "recall_set.json"
DIM = 384
BUDGET = Settings.model_fields["memory_budget_chars"].default

# topic: (question, twelve things, the fact's wording)
TOPICS: dict[str, tuple[str, list[str], str]] = {
    "dinner": (
        "What did I have for dinner {when}?",
        [
            "risotto",
            "ramen",
            "tacos",
            "curry",
            "paella",
            "pho",
            "lasagne",
            "sushi",
            "burgers",
            "dumplings",
            "falafel",
            "steak",
        ],
        "Had dinner out with Anna, we ordered {x}",
    ),
    "book": (
        "Which book was I reading {when}?",
        [
            "Dune",
            "Middlemarch",
            "Beloved",
            "Ulysses",
            "Emma",
            "Solaris",
            "Persuasion",
            "Hyperion",
            "Kindred",
            "Stoner",
            "Rebecca",
            "Neuromancer",
        ],
        "Reading {x} before bed these days",
    ),
    "film": (
        "What film did I see at the cinema {when}?",
        [
            "Alien",
            "Heat",
            "Vertigo",
            "Amelie",
            "Arrival",
            "Casablanca",
            "Fargo",
            "Jaws",
            "Psycho",
            "Rocky",
            "Tampopo",
            "Up",
        ],
        "Went to the cinema and watched {x}",
    ),
    "run": (
        "How far did I run {when}?",
        [f"{k} km" for k in (5, 7, 8, 10, 12, 15, 6, 9, 11, 14, 16, 21)],
        "Ran {x} along the river this weekend",
    ),
    "gift": (
        "What present did I buy {when}?",
        [
            "a scarf",
            "a teapot",
            "a lamp",
            "a kite",
            "a watch",
            "a puzzle",
            "a plant",
            "a pen",
            "a mug",
            "a wallet",
            "a book",
            "a candle",
        ],
        "Bought {x} as a present for my brother",
    ),
}
CITIES = [
    "Lisbon",
    "Oslo",
    "Porto",
    "Vienna",
    "Krakow",
    "Seville",
    "Ghent",
    "Turin",
    "Bergen",
    "Lyon",
    "Split",
    "Riga",
]


@dataclass(frozen=True)
class Fact:
    text: str
    said: datetime


@dataclass(frozen=True)
class Question:
    text: str
    wanted: int  # index into the facts


def _months(now: datetime) -> list[date]:
    """The twelve whole months before the current one, oldest first."""
    first = date(now.year, now.month, 1)
    out = []
    for back in range(12, 0, -1):
        index = first.year * 12 + first.month - 1 - back
        out.append(date(index // 12, index % 12 + 1, 1))
    return out


def _said(month: date, day: int) -> datetime:
    return datetime(month.year, month.month, day, 18, tzinfo=UTC)


def build(now: datetime) -> tuple[list[Fact], list[Question]]:
    months = _months(now)
    facts: list[Fact] = []
    questions: list[Question] = []
    for question, things, wording in TOPICS.values():
        for n, month in enumerate(months):
            facts.append(Fact(wording.format(x=things[n]), _said(month, 12 + n % 10)))
            questions.append(
                Question(question.format(when=_phrase(month, n, months)), len(facts) - 1)
            )
    for n, month in enumerate(months[:-1]):
        told = months[n + 1]
        facts.append(Fact(f"Last month I spent a few days in {CITIES[n]}", _said(told, 3)))
        when = _phrase(month, n, months)
        questions.append(Question(f"Which city did I travel to {when}?", len(facts) - 1))
    return facts, questions


def _phrase(month: date, n: int, months: list[date]) -> str:
    """Ways of naming a month: "in March", "in March 2026", "last month"."""
    name = calendar.month_name[month.month]
    if month == months[-1] and n % 2 == 0:
        return "last month"
    return f"in {name} {month.year}" if n % 3 == 0 else f"in {name}"


async def run() -> dict[str, dict[str, float]]:
    facts, questions = build(utcnow())
    background = json.loads(DATA.read_text(encoding="utf-8"))["facts"]
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "time.db")
        db.open()
        service = MemoryService(db, KVStore(db), lambda: None, budget_chars=BUDGET, zone="UTC")
        service.space = Space(LocalEmbedder(), VectorIndex(DIM), VectorIndex(DIM))
        ids = [(await service.add_fact(f.text, said_at=f.said)).id for f in facts]
        for text in background:
            await service.add_fact(text)
        out = {
            "with time stage": await _score(service, questions, ids, True),
            "without": await _score(service, questions, ids, False),
        }
        db.close()
    return out


async def _score(
    service: MemoryService, questions: list[Question], ids: list[int], use_time: bool
) -> dict[str, float]:
    hits = {1: 0, 5: 0, 10: 0}
    for q in questions:
        found = await service.recall(q.text, limit=10, use_time=use_time)
        got = [f.id for f, _ in found.facts]
        for k in hits:
            hits[k] += ids[q.wanted] in got[:k]
    return {f"recall@{k}": v / len(questions) for k, v in hits.items()}


def main() -> None:
    results = asyncio.run(run())
    facts, questions = build(utcnow())
    print(f"{len(facts)} dated facts (+ the recall set's 200), {len(questions)} questions")
    print(f"{'':18}{'recall@1':>10}{'recall@5':>10}{'recall@10':>10}")
    for name, scores in results.items():
        print(
            f"{name:18}"
            + "".join(f"{scores[k]:>10.2f}" for k in ("recall@1", "recall@5", "recall@10"))
        )


if __name__ == "__main__":
    main()
