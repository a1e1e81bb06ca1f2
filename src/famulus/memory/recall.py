"""Hybrid recall: full text (BM25) + vectors (cosine) + recency/salience, fused by rank.

Why reciprocal rank fusion: BM25 scores and cosines live on different scales
that shift with the corpus; ranks do not. Each list votes ``w / (K + rank)``.
Recency/salience only re-orders what the two retrievers found (it is ranked
over their union), so a fresh but unrelated fact never gets in on age alone.

Agreement (issue 12): the fused score of a candidate both retrievers return
can be multiplied by ``1 + AGREEMENT``. It changed nothing on the first,
smaller dev split (62 / 65 with and without) and was a wash on the larger
one with the third-person conversations (at k = 5: 2 points worse within 5,
1 better within 10), so it is off (0), kept as a constant so the bench can
show the variant. Candidates
equally fresh share a freshness rank, so a tie is never broken by which
retriever listed the fact first; a coarser tie (``FRESH_STEP``) was measured
and gave nothing on the dev split.

The constants were chosen on the dev split of bench/recall_quality.py (152
questions) and checked on bench/recall.py's exact-number set, which must
not lose ground (docs/performance.md has the figures).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from famulus.memory.index import VectorIndex
from famulus.timeutil import parse_iso, utcnow

RRF_K = 5  # far steeper than the usual 60: a clear first place in one list should count
CANDIDATES = 50
LIMIT = 8  # facts a recall returns unless asked for another number
OBS_LIMIT = 4  # observations a recall returns
# Below this a vector hit is left out. 0.3 cut real answers: a paraphrased
# question often meets its MiniLM answer at 0.2-0.3. Measured on the dev split
# of bench/recall_quality.py: 0.3 -> 62/65 (recall@5/@10), 0.2 -> 70/77,
# 0.15 and 0.1 -> 72/78; 0.15 is the highest floor with the full gain (about
# a quarter of everyday facts pass it, so it still drops the plainly unrelated).
MIN_COSINE = 0.15
# When the words match no fact, the vectors alone must find one at least this
# close, else nothing is recalled: with the low floor above, "hello" would
# bring four unrelated personal facts into the prompt (a landlord's name,
# a sister's city). No English question of the conversation bench is
# affected (each matches some word); MiniLM's German and Spanish ones are
# (they found their fact 11 % of the time anyway).
ALONE_COSINE = 0.3
W_FTS = 1.0
W_VEC = 1.5  # a paraphrased question shares meaning with its answer, seldom words
W_RECENCY = 0.3
HALF_LIFE_DAYS = 30.0
AGREEMENT = 0.0  # bonus share for a candidate both retrievers return; measured off
FRESH_STEP = 0.0  # > 0 makes freshness within a step a tie; 0.01 measured no gain on dev, so off


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


def fresh_ranks(metas: dict[int, Meta], ids: list[int]) -> dict[int, int]:
    """Rank by freshness, best first; candidates in the same ``FRESH_STEP`` share a rank."""
    now = utcnow()
    step = FRESH_STEP or 1e-12
    level = {i: round(freshness(metas[i], now) / step) for i in ids}
    ranks: dict[int, int] = {}
    previous: tuple[int, int] | None = None  # (level, rank) of the last one placed
    for n, i in enumerate(sorted(ids, key=lambda i: -level[i])):
        rank = previous[1] if previous and previous[0] == level[i] else n
        ranks[i] = rank
        previous = (level[i], rank)
    return ranks


def fuse(
    fts: list[int],
    vec: list[tuple[int, float]],
    meta: Callable[[list[int]], dict[int, Meta]],
    limit: int,
    *,
    use_fts: bool = True,
    use_vec: bool = True,
    use_recency: bool = True,
    min_cosine: float | None = None,
) -> list[Hit]:
    """Fuse the ranked lists; ``meta`` loads recency data for the union only.
    ``min_cosine`` overrides the vector floor (conversation search keeps a stricter one)."""
    floor = MIN_COSINE if min_cosine is None else min_cosine
    vec = [(i, c) for i, c in vec if c >= floor] if use_vec else []
    fts = fts if use_fts else []
    if use_fts and not fts and max((c for _, c in vec), default=1.0) < ALONE_COSINE:
        vec = []  # "hello", "thanks!": no word matched and no meaning either
    vec_ids = [i for i, _ in vec]
    union = list(dict.fromkeys([*fts, *vec_ids]))
    scores = rrf([(W_FTS, fts), (W_VEC, vec_ids)])
    for i in set(fts) & set(vec_ids):
        scores[i] *= 1.0 + AGREEMENT
    if use_recency and union:
        metas = meta(union)
        union = [i for i in union if i in metas]
        for i, rank in fresh_ranks(metas, union).items():
            scores[i] = scores.get(i, 0.0) + W_RECENCY / (RRF_K + rank + 1)
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
