"""Re-embedding everything with a new model, in the background, without a gap.

New vectors are written beside the old ones (the vector table is keyed by
model). Recall keeps using the old ``Space`` throughout. At the end, under the
service's write lock, rows written or edited meanwhile are caught up, the new
space is loaded and swapped in, the choice is saved, and old vectors dropped.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from famulus import config_keys
from famulus.errors import Conflict
from famulus.memory.embeddings import Embedder
from famulus.memory.progress import BACKFILL, REINDEX, Progress, under_way
from famulus.memory.service import MemoryService
from famulus.memory.vectors import ReindexState, load_space
from famulus.store.memory.common import text_hash

log = logging.getLogger(__name__)
BATCH = 64


@dataclass(frozen=True)
class ReindexStarted:
    embedding_model: str
    total: int  # rows to embed


async def start_reindex(memory: MemoryService, model_id: str) -> ReindexStarted:
    """Validate (422 on unknown or unusable model), then run in the background."""
    embedder = await memory.factory.build(model_id)
    if memory.reindex.status == "running":
        raise Conflict("A re-index is already running; wait for it to finish (GET /memory/audit).")
    todo = await _pending(memory, embedder)
    state = ReindexState(status="running", model=model_id, total=sum(len(v) for v in todo.values()))
    memory.reindex = state
    progress = Progress(memory.events, REINDEX, state)
    progress.started()
    state.task = asyncio.create_task(_run(memory, embedder, progress))
    return ReindexStarted(model_id, state.total)


def in_progress(memory: MemoryService) -> list[dict[str, Any]]:
    """The progress events a subscriber to the memory feed gets on joining."""
    return under_way((REINDEX, memory.reindex), (BACKFILL, memory.catch_up))


async def _pending(memory: MemoryService, embedder: Embedder) -> dict[str, list[tuple[int, str]]]:
    """Active rows whose vector for ``embedder`` is missing or stale."""
    out: dict[str, list[tuple[int, str]]] = {}
    for owner in ("fact", "observation", "message"):  # message: conversation recall's chunks
        have = await memory.stores.vectors.hashes(owner, embedder.model_id)
        rows = await memory.stores.vectors.texts_to_embed(owner)
        out[owner] = [(i, t) for i, t in rows if have.get(i) != text_hash(t)]
    return out


async def _embed_into_table(
    memory: MemoryService,
    embedder: Embedder,
    todo: dict[str, list[tuple[int, str]]],
    progress: Progress | None,
) -> None:
    for owner, rows in todo.items():
        for start in range(0, len(rows), BATCH):
            chunk = rows[start : start + BATCH]
            vectors = await embedder.embed([t for _, t in chunk])
            await memory.stores.vectors.put(
                owner, embedder.model_id, [(i, t, vectors[n]) for n, (i, t) in enumerate(chunk)]
            )
            if progress is not None:
                progress.advanced(len(chunk))


async def _run(memory: MemoryService, embedder: Embedder, progress: Progress) -> None:
    state = progress.state
    try:
        await _embed_into_table(memory, embedder, await _pending(memory, embedder), progress)
        async with memory.write_lock:
            # Rows added or edited while the bulk pass ran.
            await _embed_into_table(memory, embedder, await _pending(memory, embedder), None)
            memory.space = await load_space(memory.stores.vectors, embedder)
            await memory.kv.set(config_keys.EMBEDDING_MODEL, embedder.model_id)
            await memory.stores.vectors.drop_other_models(embedder.model_id)
        state.done = max(state.done, state.total)
        state.status = "completed"
    except asyncio.CancelledError:
        state.status = "failed"
        state.error = "The re-index was stopped before it finished; start it again."
        raise
    except Exception as exc:
        log.exception("re-index to %s failed", embedder.model_id)
        state.status = "failed"
        state.error = f"The re-index failed and the old model stays in use: {exc}"
    finally:
        progress.finished()


async def stop_reindex(memory: MemoryService) -> None:
    task = memory.reindex.task
    if task is not None and not task.done():
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass
