"""Memory recall benchmark: latency at 1k/10k/100k facts and retrieval quality.

    .venv/bin/python bench/recall.py            # everything
    .venv/bin/python bench/recall.py --quick    # 1k and 10k only

Latency is a whole recall as the service runs it (FTS5 BM25 query, vector
search over the in-memory index, loading the candidate rows, rank fusion),
on a real SQLite file. Query embedding is measured separately: the latency
part uses random unit vectors so 100k texts need not be embedded.

Quality uses bench/data/recall_set.json (built by bench/make_recall_set.py)
embedded with the real local model: recall@5 and recall@10 for full text
alone, vectors alone and the hybrid.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from famulus.memory.embeddings import LocalEmbedder, local_runtime
from famulus.memory.index import VectorIndex
from famulus.memory.service import MemoryService
from famulus.memory.vectors import Space
from famulus.settings import Settings
from famulus.store.db import Database
from famulus.store.kv import KVStore
from famulus.timeutil import now_iso

DATA = Path(__file__).parent / "data" / "recall_set.json"
DIM = 384
BUDGET = Settings.model_fields["memory_budget_chars"].default  # the server's own default


class RandomEmbedder:
    """Stands in for the model in the latency part: unit vectors, no model time."""

    model_id = "bench/random"
    dimensions = DIM

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        m = self.rng.standard_normal((len(texts), DIM)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed(texts)


def _vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def _texts(n: int, vocab: list[str], rng: random.Random) -> list[str]:
    # Zipf-like word frequencies, as in real text: a few words are everywhere.
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    return [" ".join(rng.choices(vocab, weights, k=rng.randint(8, 16))) for _ in range(n)]


async def _service(db_path: Path, n: int) -> tuple[MemoryService, list[str]]:
    db = Database(db_path)
    db.open()
    rng = random.Random(n)
    vocab = _vocabulary(rng)
    texts = _texts(n, vocab, rng)
    now = now_iso()
    rows = [(t, "fact", "manual", now, now) for t in texts]
    await db.write(
        lambda conn: conn.executemany(
            "INSERT INTO facts (text, kind, source_type, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )
    )
    service = MemoryService(db, KVStore(db), lambda: None, budget_chars=BUDGET)
    embedder = RandomEmbedder(n)
    space = Space(embedder, VectorIndex(DIM), VectorIndex(DIM))
    space.facts.load(list(range(1, n + 1)), await embedder.embed(texts))
    service.space = space
    return service, vocab


async def latency(n: int, queries: int = 300) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        service, vocab = await _service(Path(tmp) / "bench.db", n)
        rng = random.Random(1)
        mid = vocab[50:5000]  # neither stop-word-like nor unseen
        qs = [" ".join(rng.sample(mid, 3)) for _ in range(queries)]
        for q in qs[:20]:
            await service.recall(q)
        times = []
        for q in qs:
            start = time.perf_counter()
            await service.recall(q)
            times.append((time.perf_counter() - start) * 1000)
        service.db.close()
    times.sort()
    return {
        "p50": statistics.median(times),
        "p95": times[int(len(times) * 0.95) - 1],
    }


async def quality() -> dict[str, dict[str, float]]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "quality.db")
        db.open()
        service = MemoryService(db, KVStore(db), lambda: None, budget_chars=BUDGET)
        embedder = LocalEmbedder()
        service.space = Space(embedder, VectorIndex(DIM), VectorIndex(DIM))
        ids = [(await service.add_fact(text)).id for text in data["facts"]]
        out: dict[str, dict[str, float]] = {}
        for mode in ("fts", "vector", "hybrid"):
            out[mode] = await _score(service, data["questions"], ids, mode)
        db.close()
    return out


async def _score(
    service: MemoryService, questions: list[dict[str, Any]], ids: list[int], mode: str
) -> dict[str, float]:
    hits = {5: 0.0, 10: 0.0}
    by_type: dict[str, list[float]] = {}
    for q in questions:
        got = [f.id for f, _ in (await service.recall(q["q"], limit=10, mode=mode)).facts]
        wanted = {ids[i] for i in q["evidence"]}
        for k in hits:
            hits[k] += len(wanted & set(got[:k])) / len(wanted)
        by_type.setdefault(q["type"], []).append(len(wanted & set(got[:5])) / len(wanted))
    n = len(questions)
    result = {"recall@5": hits[5] / n, "recall@10": hits[10] / n}
    for kind, values in by_type.items():
        result[f"recall@5 {kind}"] = sum(values) / len(values)
    return result


def _embedding_ms() -> float:
    runtime = local_runtime()
    runtime.embed(["warm up"])
    start = time.perf_counter()
    for i in range(50):
        runtime.embed([f"when is my dentist appointment number {i}"])
    return (time.perf_counter() - start) * 1000 / 50


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the 100k run")
    args = parser.parse_args(argv)
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    print("Recall latency (FTS5 + vectors + fusion; random query vectors), ms:")
    for n in sizes:
        r = await latency(n)
        print(f"  {n:>7,} facts: p50 {r['p50']:6.2f}  p95 {r['p95']:6.2f}")
    print(f"Query embedding, local MiniLM int8 (onnxruntime): {_embedding_ms():.1f} ms per query")
    data = json.loads(DATA.read_text(encoding="utf-8"))
    print(
        f"Retrieval quality on {DATA.relative_to(Path.cwd()) if DATA.is_relative_to(Path.cwd()) else DATA}"
        f" ({len(data['facts'])} facts, {len(data['questions'])} questions):"
    )
    for mode, r in (await quality()).items():
        extras = "  ".join(f"{k} {v:.3f}" for k, v in r.items() if k.count(" ") == 1)
        print(
            f"  {mode:<7} recall@5 {r['recall@5']:.3f}  recall@10 {r['recall@10']:.3f}  ({extras})"
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
