"""Builds bench/data/conversations_set.json from the hand-written bench/convdata.

Twelve multi-session conversations between the memory's owner ("I" in the
questions) and a friend, each turn stored as one fact dated by its session
("[14 January 2023] Lena: ..."), with small talk mixed in. Questions come in
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

sys.path.insert(0, str(Path(__file__).parent))

from convdata import extra, part1, part2  # noqa: E402

OUT = Path(__file__).parent / "data" / "conversations_set.json"
SPEAKERS = {"O": "owner", "F": "friend"}


def _when(iso: str) -> str:
    d = date.fromisoformat(iso)
    return f"{d.day} {d.strftime('%B %Y')}"


def build(seed: int = 12) -> dict[str, object]:
    rng = random.Random(seed)
    facts: list[str] = []
    questions: list[dict[str, object]] = []
    tags_of: list[dict[str, int]] = []
    conversations = [*part1.CONVERSATIONS, *part2.CONVERSATIONS]
    for number, conv in enumerate(conversations):
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
                    "evidence": [tags[t] for t in evidence],
                    "conversation": number,
                    "split": split,
                }
            )
        tags_of.append(tags)
    multilingual = []
    for number, tag, de, es in extra.MULTILINGUAL:
        for lang, text in (("de", de), ("es", es)):
            multilingual.append({"q": text, "lang": lang, "evidence": [tags_of[number][tag]]})
    return {"facts": facts, "questions": questions, "multilingual": multilingual}


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    qs = data["questions"]
    assert isinstance(qs, list)
    print(f"{OUT}: {len(data['facts'])} facts, {len(qs)} questions")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
