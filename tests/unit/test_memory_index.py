"""The vector index, rank fusion and FTS query building, without the app."""

from __future__ import annotations

import numpy as np

from famulus.memory.index import VectorIndex
from famulus.memory.recall import Meta, fuse, rrf
from famulus.store.memory.common import fts_query


def _unit(rng: np.random.Generator, n: int, dim: int = 8) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_index_upsert_remove_search_stay_exact() -> None:
    rng = np.random.default_rng(1)
    vecs = _unit(rng, 200)
    index = VectorIndex(8)
    for i, v in enumerate(vecs):
        index.upsert(i + 1, v)
    assert len(index) == 200
    assert index.search(vecs[41], 1)[0][0] == 42
    index.remove(42)
    assert 42 not in {i for i, _ in index.search(vecs[41], 200)}
    index.upsert(7, vecs[41])  # an edit moves the row's meaning
    assert index.search(vecs[41], 1)[0][0] == 7
    index.remove(999)  # unknown ids are ignored
    assert len(index) == 199


def test_index_loaded_from_read_only_bytes_takes_edits() -> None:
    """The store hands over vectors read from BLOBs (read-only buffers); a delete
    followed by an add after a restart must not write into them."""
    rng = np.random.default_rng(3)
    vecs = _unit(rng, 3)
    frozen = np.frombuffer(vecs.tobytes(), dtype=np.float32).reshape(3, 8)
    assert not frozen.flags.writeable
    index = VectorIndex(8)
    index.load([1, 2, 3], frozen)
    index.remove(1)  # moves the last row into the hole
    index.upsert(4, vecs[0])  # fills the freed slot
    index.upsert(2, vecs[2])  # edits a row in place
    assert index.ids() == {2, 3, 4}
    assert index.search(vecs[0], 1)[0][0] == 4


def test_index_load_replaces_content() -> None:
    rng = np.random.default_rng(2)
    index = VectorIndex(8)
    index.upsert(1, _unit(rng, 1)[0])
    index.load([5, 6], _unit(rng, 2))
    assert index.ids() == {5, 6}
    assert index.search(_unit(rng, 1)[0], 0) == []


def test_rrf_rewards_agreement() -> None:
    scores = rrf([(1.0, [1, 2, 3]), (1.0, [3, 4])])
    assert max(scores, key=lambda k: scores[k]) == 3


def test_fuse_drops_weak_vector_hits_and_uses_recency() -> None:
    now = "2026-01-01T00:00:00.000Z"
    metas = {i: Meta(now, 0.5, 0) for i in range(10)}
    hits = fuse([1], [(2, 0.9), (3, 0.05)], lambda ids: {i: metas[i] for i in ids}, 10)
    ids = [h.id for h in hits]
    assert set(ids) == {1, 2}
    assert hits[0].score > 0


def test_fts_query_quotes_words_and_drops_stopwords() -> None:
    assert fts_query("Who is my dentist?") == '"dentist"'
    assert fts_query('a "quoted" OR NOT') == '"quoted" OR "not"'
    assert fts_query("the of a") == ""
