"""Re-index progress is throttled, yet the last batch and the end are always told."""

from __future__ import annotations

from typing import Any

from famulus.memory.progress import Progress, under_way
from famulus.memory.vectors import ReindexState


class Heard:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def publish(self, type_: str, /, **fields: Any) -> None:
        self.events.append((type_, fields))


def test_progress_is_at_most_four_a_second_and_ends_at_the_total() -> None:
    sink, now = Heard(), [0.0]
    state = ReindexState(status="running", model="m", total=64 * 100)
    progress = Progress(sink, "reindex", state, clock=lambda: now[0])
    progress.started()
    for _ in range(100):  # 100 batches in one second
        now[0] += 0.01
        progress.advanced(64)
    state.status = "completed"
    progress.finished()
    kinds = [t for t, _ in sink.events]
    assert kinds[0] == "reindex_started" and kinds[-1] == "reindex_finished"
    done = [f["done"] for t, f in sink.events if t == "reindex_progress"]
    assert 4 <= len(done) <= 6, done  # not one per batch
    assert done[-1] == 6400 and done == sorted(done)
    assert sink.events[-1][1] == {
        "embedding_model": "m",
        "status": "completed",
        "done": 6400,
        "total": 6400,
    }


def test_a_failure_carries_its_error_and_no_extra_progress() -> None:
    sink = Heard()
    state = ReindexState(status="running", model="m", total=10)
    progress = Progress(sink, "backfill", state, clock=lambda: 0.0)
    progress.advanced(4)
    state.status, state.error = "failed", "boom"
    progress.finished()
    assert sink.events == [
        ("backfill_progress", {"embedding_model": "m", "done": 4, "total": 10}),
        (
            "backfill_finished",
            {"embedding_model": "m", "status": "failed", "done": 4, "total": 10, "error": "boom"},
        ),
    ]


def test_only_runs_under_way_are_told_to_a_new_subscriber() -> None:
    running = ReindexState(status="running", model="m", done=3, total=9)
    idle, done = ReindexState(), ReindexState(status="completed", model="m", done=9, total=9)
    assert under_way(("reindex", running), ("backfill", idle), ("x", done)) == [
        {"type": "reindex_progress", "embedding_model": "m", "done": 3, "total": 9}
    ]
