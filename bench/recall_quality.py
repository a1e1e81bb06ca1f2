"""Recall quality on a long multi-session conversation set, per question type.

    .venv/bin/python bench/recall_quality.py                 # local default model
    .venv/bin/python bench/recall_quality.py --model ID      # another local model
    .venv/bin/python bench/recall_quality.py --latency       # plus p50/p95 at 1k/10k/100k
    .venv/bin/python bench/recall_quality.py --style third-person  # only part 3's questions
    .venv/bin/python bench/recall_quality.py --per-conversation    # a memory per conversation

Resembles the outside check of issue 12: every turn of bench/data/conversations_set.json
(built by bench/make_conversation_set.py) is stored as a fact through the real
MemoryService (as ``POST /facts`` does) and every question is asked through the
path of ``POST /memory/recall/inspect`` (limit 10). A question is found at k
when ANY of its evidence turns is among the first k facts.

Two splits: ``dev`` (the fusion constants may be tuned on it) and ``test``
(held out: reported, never tuned on). Each mode runs one retriever alone or
the full hybrid with a named set of fusion constants, so each ranking step
can be switched off and measured.

``--style`` keeps only the questions asked in the first person (the owner's
"I", parts 1 and 2) or the third person (two named friends, part 3); every
turn is stored either way, so the haystack does not change.
``--per-conversation`` stores each conversation in a memory of its own (one
person's memory, as famulus is used) instead of all twenty in one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from famulus.memory import anchors, context
from famulus.memory import recall as fusion
from famulus.memory.embeddings import LOCAL_MODEL_ID, Embedder, local_embedder
from famulus.memory.index import VectorIndex
from famulus.memory.service import MemoryService
from famulus.memory.vectors import Space
from famulus.settings import Settings
from famulus.store.db import Database
from famulus.store.kv import KVStore

DATA = Path(__file__).parent / "data" / "conversations_set.json"
BUDGET = Settings.model_fields["memory_budget_chars"].default
TYPES = ("single", "multi-hop", "temporal", "inference")
KS = (5, 10)
STYLES = ("first-person", "third-person", "all")

# Each variant: (retriever mode, fusion constants to set for the run).
# "hybrid" is the code as it stands; the others switch issue 12's steps off.
BEFORE = {"RRF_K": 20, "W_VEC": 1.0, "AGREEMENT": 0.0, "MIN_COSINE": 0.3, "anchors": False}
STEP1 = {"RRF_K": 10, "AGREEMENT": 0.0, "MIN_COSINE": 0.3, "anchors": False}
STEP2 = {"RRF_K": 10, "AGREEMENT": 0.5, "MIN_COSINE": 0.3, "anchors": False}
STEP3 = {"RRF_K": 10, "AGREEMENT": 0.5, "anchors": False}
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "bm25": ("fts", {}),
    "vectors": ("vector", {}),
    "hybrid before issue 12": ("hybrid", BEFORE),
    "+ k=10 vectors x1.5": ("hybrid", STEP1),
    "+ agreement x1.5": ("hybrid", STEP2),
    "+ floor 0.15": ("hybrid", STEP3),
    "+ k=5 no agreement": ("hybrid", {"anchors": False}),
    "hybrid now (+ event anchors)": ("hybrid", {}),
    "rejected: agreement at k=5": ("hybrid", {"AGREEMENT": 0.5}),
    "rejected: fresh step": ("hybrid", {"FRESH_STEP": 0.01}),
}


@contextmanager
def constants(overrides: dict[str, Any]) -> Iterator[None]:
    """Sets fusion constants for one run and puts the old values back; the key
    "anchors" False switches the event-anchored time stage off."""
    overrides = dict(overrides)
    use_anchors = overrides.pop("anchors", True)
    old = {name: getattr(fusion, name) for name in overrides}
    old_find = anchors.find
    for name, value in overrides.items():
        setattr(fusion, name, value)
    if not use_anchors:
        anchors.find = lambda query: None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(fusion, name, value)
        anchors.find = old_find  # type: ignore[method-assign]


async def store(
    embedder: Embedder, facts: list[str], path: Path
) -> tuple[MemoryService, list[int]]:
    db = Database(path)
    db.open()
    service = MemoryService(db, KVStore(db), lambda: None, budget_chars=BUDGET)
    dim = embedder.dimensions
    service.space = Space(embedder, VectorIndex(dim), VectorIndex(dim))
    ids = [(await service.add_fact(text)).id for text in facts]
    return service, ids


async def ranked(service: MemoryService, query: str, mode: str) -> list[int]:
    if mode == "hybrid":  # exactly what POST /memory/recall/inspect runs
        return [i.row.id for i in (await context.inspect(service, query, 10)).facts]
    return [f.id for f, _ in (await service.recall(query, limit=10, mode=mode)).facts]


@dataclass
class Memory:
    """One memory of the run and where the set's facts went in it."""

    service: MemoryService
    ids: dict[int, int]  # a fact's index in the set -> its id in this memory


async def memories(
    embedder: Embedder, data: dict[str, Any], tmp: Path, per_conversation: bool
) -> list[Memory]:
    """All turns in one memory, or (``per_conversation``) each conversation in its own."""
    spans = data["conversations"] if per_conversation else [[0, len(data["facts"])]]
    out = []
    for n, (first, end) in enumerate(spans):
        service, ids = await store(embedder, data["facts"][first:end], tmp / f"m{n}.db")
        out.append(Memory(service, {first + k: i for k, i in enumerate(ids)}))
    return out


async def score(
    stores: list[Memory], questions: list[dict[str, Any]], mode: str
) -> dict[tuple[str, str, int], float]:
    """(split, type, k) -> share found; each question asked of the memory holding its evidence."""
    rankings = []
    for q in questions:
        memory = next(m for m in stores if q["evidence"][0] in m.ids)
        rankings.append(await ranked(memory.service, q["q"], mode))
    ids = {i: fact for m in stores for i, fact in m.ids.items()}
    return tally(ids, questions, rankings)


def tally(
    ids: Mapping[int, int] | Sequence[int],
    questions: list[dict[str, Any]],
    rankings: list[list[int]],
) -> dict[tuple[str, str, int], float]:
    """Shares found from one ranked id list per question (shared with bench/rerank_quality.py)."""
    found: dict[tuple[str, str, int], list[float]] = {}
    for q, got in zip(questions, rankings, strict=True):
        wanted = {ids[i] for i in q["evidence"]}
        for k in KS:
            hit = 1.0 if wanted & set(got[:k]) else 0.0
            for split in (q.get("split", "all"), "all"):
                for kind in (q.get("type", q.get("lang", "all")), "all"):
                    found.setdefault((split, kind, k), []).append(hit)
    return {key: sum(v) / len(v) for key, v in found.items()}


def table(name: str, r: dict[tuple[str, str, int], float], splits: tuple[str, ...]) -> None:
    for split in splits:
        cells = "  ".join(
            f"{kind} {r.get((split, kind, 5), 0) * 100:3.0f}/{r.get((split, kind, 10), 0) * 100:3.0f}"
            for kind in (*TYPES, "all")
        )
        print(f"  {name:<24} {split:<4}  {cells}")


def of_style(questions: list[dict[str, Any]], style: str) -> list[dict[str, Any]]:
    """The questions asked in one person ("all" keeps them all)."""
    return [q for q in questions if style == "all" or q["style"] == style]


async def run(model: str, variants: list[str], style: str, per_conversation: bool) -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    data["questions"] = of_style(data["questions"], style)
    embedder = local_embedder(model)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        stores = await memories(embedder, data, Path(tmp), per_conversation)
        took = time.perf_counter() - start
        where = (
            f"{len(stores)} memories, one per conversation" if per_conversation else "one memory"
        )
        print(
            f"{len(data['facts'])} turns stored as facts ({where}) in {took:.1f} s with {model};"
            f" {len(data['questions'])} questions; recall@5/@10 in % per type"
            " (dev = tuned on, test = held out, never tuned on):"
        )
        for name in variants:
            mode, overrides = VARIANTS[name]
            with constants(overrides):
                table(name, await score(stores, data["questions"], mode), ("dev", "test"))
        print("Multilingual (German/Spanish questions about English turns), recall@5/@10 in %:")
        for name in ("vectors", "hybrid now (+ event anchors)"):
            mode, overrides = VARIANTS[name]
            with constants(overrides):
                r = await score(stores, data["multilingual"], mode)
            langs = "  ".join(
                f"{lang} {r[('all', lang, 5)] * 100:3.0f}/{r[('all', lang, 10)] * 100:3.0f}"
                for lang in ("de", "es")
            )
            print(f"  {name:<24} {langs}")
        for memory in stores:
            memory.service.db.close()


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=LOCAL_MODEL_ID, help="a local embedding model id")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--latency", action="store_true", help="also p50/p95 at 1k/10k/100k")
    parser.add_argument("--style", choices=STYLES, default="all", help="which questions to ask")
    parser.add_argument(
        "--per-conversation",
        action="store_true",
        help="each conversation in a memory of its own (one person's memory), not all in one",
    )
    args = parser.parse_args(argv)
    await run(args.model, args.variants.split(","), args.style, args.per_conversation)
    if args.latency:
        sys.path.insert(0, str(Path(__file__).parent))
        from recall import latency  # the existing latency part, same code path

        print("Recall latency (FTS5 + vectors + fusion; random query vectors), ms:")
        for n in (1_000, 10_000, 100_000):
            r = await latency(n)
            print(f"  {n:>7,} facts: p50 {r['p50']:6.2f}  p95 {r['p95']:6.2f}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
