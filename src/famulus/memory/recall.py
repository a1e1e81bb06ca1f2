"""Hybrid recall: full text (BM25) + vectors (cosine) + recency/salience, fused by rank.

Why reciprocal rank fusion: BM25 scores and cosines live on different scales
that shift with the corpus; ranks do not. Each list votes ``w / (K + rank)``.
Recency/salience only re-orders what the two retrievers found (it is ranked
over their union), so a fresh but unrelated fact never gets in on age alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from famulus.memory.index import VectorIndex
from famulus.timeutil import parse_iso, utcnow

RRF_K = 20  # steeper than the usual 60: a clear first place in one list should count
CANDIDATES = 50
LIMIT = 8  # facts a recall returns unless asked for another number
OBS_LIMIT = 4  # observations a recall returns
MIN_COSINE = 0.3  # below this a vector hit is mostly noise for MiniLM-class models
W_FTS = 1.0
W_VEC = 1.0
W_RECENCY = 0.3
HALF_LIFE_DAYS = 30.0


@dataclass(frozen=True)
class Meta:
    """What recency/salience needs of a candidate."""

    updated_at: str
    salience: float
    access_count: int


@dataclass(frozen=True)
class Hit:
    id: int
    score: float
    fts_rank: int | None
    vec_rank: int | None
    cosine: float | None


def rrf(lists: Sequence[tuple[float, Sequence[int]]]) -> dict[int, float]:
    scores: dict[int, float] = {}
    for weight, ids in lists:
        for rank, item in enumerate(ids):
            scores[item] = scores.get(item, 0.0) + weight / (RRF_K + rank + 1)
    return scores


def freshness(meta: Meta, now: datetime) -> float:
    age_days = max(0.0, (now - parse_iso(meta.updated_at)).total_seconds() / 86400)
    decay = math.pow(0.5, age_days / HALF_LIFE_DAYS)
    return decay + meta.salience + 0.1 * math.log1p(meta.access_count)


def fuse(
    fts: list[int],
    vec: list[tuple[int, float]],
    meta: Callable[[list[int]], dict[int, Meta]],
    limit: int,
    *,
    use_fts: bool = True,
    use_vec: bool = True,
    use_recency: bool = True,
) -> list[Hit]:
    """Fuse the ranked lists; ``meta`` loads recency data for the union only."""
    vec = [(i, c) for i, c in vec if c >= MIN_COSINE] if use_vec else []
    fts = fts if use_fts else []
    vec_ids = [i for i, _ in vec]
    union = list(dict.fromkeys([*fts, *vec_ids]))
    lists: list[tuple[float, Sequence[int]]] = [(W_FTS, fts), (W_VEC, vec_ids)]
    if use_recency and union:
        metas = meta(union)
        now = utcnow()
        union = [i for i in union if i in metas]
        by_fresh = sorted(union, key=lambda i: -freshness(metas[i], now))
        lists.append((W_RECENCY, by_fresh))
    scores = rrf(lists)
    fts_pos = {i: n for n, i in enumerate(fts)}
    vec_pos = {i: n for n, (i, _) in enumerate(vec)}
    cos = dict(vec)
    ranked = sorted((i for i in union), key=lambda i: -scores.get(i, 0.0))[:limit]
    return [Hit(i, scores[i], fts_pos.get(i), vec_pos.get(i), cos.get(i)) for i in ranked]


def vector_hits(
    index: VectorIndex, query_vec: np.ndarray | None, k: int
) -> list[tuple[int, float]]:
    if query_vec is None:
        return []
    return index.search(query_vec, k)
