"""Builds bench/data/conversations_set.json from the hand-written bench/convdata.

Twelve multi-session conversations between the memory's owner ("I" in the
questions) and a friend (parts 1 and 2, style "first-person"), then eight
longer ones between two named friends asked about in the third person
("When did Rafael ...?", part 3, style "third-person"), each turn stored as
one fact dated by its session ("[14 January 2023] Lena: ..."), with small
talk mixed in. Questions come in
four types: single (one turn answers), multi-hop (the answer joins two
turns), temporal (about when, or relative to another event) and inference
(the answer must be reasoned from what was said). Every question lists its
evidence turns; a question counts as found at k when ANY evidence turn is in
the first k results (as the outside check counts "a turn that holds the
answer").

Conversations alternate between a dev split (tune on it) and a test split
(report it, never tune on it). A multilingual part asks German and Spanish
questions about English turns. Run once; the JSON is committed.

    .venv/bin/python bench/make_conversation_set.py
"""

from __future__ import annotations

import json
import random
import sys
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from convdata import extra, part1, part2, part3  # noqa: E402

OUT = Path(__file__).parent / "data" / "conversations_set.json"
SPEAKERS = {"O": "owner", "F": "friend"}


def _when(iso: str) -> str:
    d = date.fromisoformat(iso)
    return f"{d.day} {d.strftime('%B %Y')}"


def _add_conversation(
    conv: dict[str, Any],
    number: int,
    rng: random.Random,
    facts: list[str],
    questions: list[dict[str, object]],
    style: str,
) -> dict[str, int]:
    """Appends one conversation's turns (small talk mixed in) and questions; returns its tags."""
    tags: dict[str, int] = {}
    for day, turns in conv["sessions"]:
        turns = list(turns)
        for line in rng.sample(extra.SMALL_TALK, 3):
            who = rng.choice("OF")
            turns.insert(rng.randint(1, len(turns)), f"{who}: {line}")
        for turn in turns:
            tag, _, rest = turn.rpartition("|")
            who, _, text = rest.partition(": ")
            name = conv[SPEAKERS[who]]
            if tag:
                if tag in tags:
                    raise ValueError(f"conversation {number}: tag {tag} used twice")
                tags[tag] = len(facts)
            facts.append(f"[{_when(day)}] {name}: {text}")
    split = "dev" if number % 2 == 0 else "test"
    for kind, text, evidence in conv["questions"]:
        questions.append(
            {
                "q": text,
                "type": kind,
                "style": style,
                "evidence": [tags[t] for t in evidence],
                "conversation": number,
                "split": split,
            }
        )
    return tags


def build(seed: int = 12) -> dict[str, object]:
    # Part 3 draws its small talk from its own generator, so parts 1 and 2
    # come out exactly as they did before part 3 existed (same facts, same ids).
    first = random.Random(seed)
    third = random.Random(seed + 3)
    parts = [
        *((conv, first, "first-person") for conv in [*part1.CONVERSATIONS, *part2.CONVERSATIONS]),
        *((conv, third, "third-person") for conv in part3.CONVERSATIONS),
    ]
    facts: list[str] = []
    questions: list[dict[str, object]] = []
    tags_of = []
    spans = []  # each conversation's first fact and one past its last
    for number, (conv, rng, style) in enumerate(parts):
        first_fact = len(facts)
        tags_of.append(_add_conversation(conv, number, rng, facts, questions, style))
        spans.append([first_fact, len(facts)])
    multilingual = []
    for number, tag, de, es in extra.MULTILINGUAL:
        for lang, text in (("de", de), ("es", es)):
            multilingual.append({"q": text, "lang": lang, "evidence": [tags_of[number][tag]]})
    return {
        "facts": facts,
        "questions": questions,
        "multilingual": multilingual,
        "conversations": spans,
    }


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    qs = data["questions"]
    assert isinstance(qs, list)
    print(f"{OUT}: {len(data['facts'])} facts, {len(qs)} questions")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
