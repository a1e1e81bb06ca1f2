"""Conversation recall benchmark: search latency at 10k and 100k messages.

    .venv/bin/python bench/conversation_recall.py            # 10k and 100k
    .venv/bin/python bench/conversation_recall.py --quick    # 10k only

A real SQLite file with sessions of 100 messages (user and assistant in
turn, synthetic text of 8-40 words with Zipf-like word frequencies), indexed
by the server's own indexer step (``ConversationStore.index_new`` with
``chunk_text``); random unit vectors (384 dims) stand in for embeddings so
100k texts need not be embedded. Latency is a whole
``ConversationIndex.search`` as the endpoint runs it: FTS5 BM25 top 50,
brute-force cosine over the in-memory message index, loading and filtering
the candidate chunks, rank fusion, one hit per message. Three kinds of
query: unfiltered, one session (its chunks few enough for an exact vector
search over them alone), and the assistant's messages over the last half of
the history (too many for that: the whole index is searched ten times
deeper, then filtered); and (issue 12) unfiltered with "yesterday" in the
query, so the time stage runs: the day's chunks are loaded as date-only
candidates and every candidate is checked against the day.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from famulus.memory.conversations import ConversationIndex, chunk_text, make_filter
from famulus.memory.index import VectorIndex
from famulus.memory.service import MemoryService
from famulus.memory.vectors import Space
from famulus.store.db import Database
from famulus.store.kv import KVStore
from famulus.store.memory.conversations import ChunkFilter
from famulus.timeutil import iso, utcnow

DIM = 384
PER_SESSION = 100


class RandomEmbedder:
    """Unit vectors, no model time (query embedding is measured in bench/recall.py)."""

    model_id = "bench/random"
    dimensions = DIM

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        m = self.rng.standard_normal((len(texts), DIM)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def _vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


async def _history(db: Database, n: int, vocab: list[str], rng: random.Random) -> list[str]:
    """``n`` messages in sessions of ``PER_SESSION``, one a minute up to now."""
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    sessions = [f"s{k}" for k in range(n // PER_SESSION)]
    start = utcnow().timestamp() - n * 60
    rows = []
    for i in range(n):
        when = iso(datetime.fromtimestamp(start + i * 60, UTC))
        text = " ".join(rng.choices(vocab, weights, k=rng.randint(8, 40)))
        role = "user" if i % 2 == 0 else "assistant"
        rows.append((sessions[i // PER_SESSION], role, text, when))

    def op(conn: sqlite3.Connection) -> None:
        conn.executemany(
            "INSERT INTO sessions (id, name, created_at, last_activity) VALUES (?, ?, ?, ?)",
            [(s, f"Session {s}", rows[0][3], rows[-1][3]) for s in sessions],
        )
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            rows,
        )

    await db.write(op)
    return sessions


async def _index(db_path: Path, n: int) -> tuple[ConversationIndex, list[str], list[str]]:
    db = Database(db_path)
    db.open()
    rng = random.Random(n)
    vocab = _vocabulary(rng)
    sessions = await _history(db, n, vocab, rng)
    service = MemoryService(db, KVStore(db), lambda: None, budget_chars=4000)
    embedder = RandomEmbedder(n)
    service.space = Space(embedder, VectorIndex(DIM), VectorIndex(DIM), VectorIndex(DIM))
    index = ConversationIndex(service)
    started = time.perf_counter()
    while await index.store.index_new(5000, chunk_text):
        pass
    print(f"  indexed {n:,} messages (FTS) in {time.perf_counter() - started:.1f} s")
    chunks = [i for i, _ in await index.store.unembedded(embedder.model_id, n * 2)]
    service.space.messages.load(chunks, await embedder.embed(["x"] * len(chunks)))
    return index, vocab, sessions


def _stats(times: list[float]) -> tuple[float, float]:
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


async def latency(n: int, queries: int = 200) -> dict[str, tuple[float, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        index, vocab, sessions = await _index(Path(tmp) / "bench.db", n)
        rng = random.Random(1)
        mid = vocab[50:5000]
        since = iso(datetime.fromtimestamp(utcnow().timestamp() - n * 30, UTC))  # half of it
        kinds: dict[str, tuple[Callable[[], ChunkFilter], str]] = {
            "unfiltered": (lambda: ChunkFilter(), ""),
            "one session": (lambda: make_filter(session_id=rng.choice(sessions)), ""),
            "assistant, since": (lambda: make_filter(speaker="assistant", since=since), ""),
            "unfiltered, yesterday": (lambda: ChunkFilter(), " yesterday"),
        }
        out = {}
        for name, (where, said) in kinds.items():
            qs = [" ".join(rng.sample(mid, 3)) + said for _ in range(queries)]
            for q in qs[:20]:
                await index.search(q, where())
            times = []
            for q in qs:
                w = where()
                begin = time.perf_counter()
                await index.search(q, w)
                times.append((time.perf_counter() - begin) * 1000)
            out[name] = _stats(times)
        index.memory.db.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k messages only")
    args = parser.parse_args()
    sizes = [10_000] if args.quick else [10_000, 100_000]
    print("| messages | query | p50 | p95 |\n|---:|---|---:|---:|", file=sys.stderr)
    for n in sizes:
        for name, (p50, p95) in asyncio.run(latency(n)).items():
            print(f"| {n:,} | {name} | {p50:.2f} ms | {p95:.2f} ms |")


if __name__ == "__main__":
    main()
