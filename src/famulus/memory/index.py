"""The in-memory vector index: a numpy matrix searched by brute force.

Why brute force: at 100k x 384 float32 one matrix-vector product is a few
milliseconds on two cores (DESIGN.md measured numpy well ahead of a
file-backed vector extension), with exact results and no index to tune.
Rows live in SQLite as BLOBs; this index is a cache kept in step with every
write and rebuilt from the table at start-up or after a model switch.
"""

from __future__ import annotations

import threading

import numpy as np


class VectorIndex:
    """Ids and unit vectors; ``search`` returns (id, cosine) best first."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._ids = np.zeros(0, dtype=np.int64)
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._pos: dict[int, int] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def ids(self) -> set[int]:
        return set(self._pos)

    def load(self, ids: list[int], matrix: np.ndarray) -> None:
        """Replace the whole content (start-up, model switch)."""
        with self._lock:
            self._ids = np.array(ids, dtype=np.int64)
            # A copy, always: the matrix read from the store may be a read-only view of
            # its bytes, and remove/upsert write into this one in place.
            self._matrix = np.array(matrix, dtype=np.float32, copy=True).reshape(-1, self.dim)
            self._pos = {int(i): n for n, i in enumerate(ids)}
            self._size = len(ids)

    def upsert(self, item_id: int, vector: np.ndarray) -> None:
        with self._lock:
            pos = self._pos.get(item_id)
            if pos is not None:
                self._matrix[pos] = vector
                return
            if self._size == len(self._ids):
                self._grow()
            self._ids[self._size] = item_id
            self._matrix[self._size] = vector
            self._pos[item_id] = self._size
            self._size += 1

    def _grow(self) -> None:
        capacity = max(64, len(self._ids) * 2)
        ids = np.zeros(capacity, dtype=np.int64)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        ids[: self._size] = self._ids[: self._size]
        matrix[: self._size] = self._matrix[: self._size]
        self._ids, self._matrix = ids, matrix

    def remove(self, item_id: int) -> None:
        """Swap the last row into the hole: O(1), order does not matter."""
        with self._lock:
            pos = self._pos.pop(item_id, None)
            if pos is None:
                return
            last = self._size - 1
            if pos != last:
                moved = int(self._ids[last])
                self._ids[pos] = moved
                self._matrix[pos] = self._matrix[last]
                self._pos[moved] = pos
            self._size = last

    def search_among(self, query: np.ndarray, among: list[int], k: int) -> list[tuple[int, float]]:
        """``search`` restricted to the ids in ``among`` (a filter's rows): exact
        within them, and cheaper than the whole matrix when they are few."""
        with self._lock:
            rows = [p for p in (self._pos.get(i) for i in among) if p is not None]
            if not rows or k <= 0:
                return []
            scores = self._matrix[rows] @ query.astype(np.float32)
            ids = self._ids[rows]
        return _top(ids, scores, k)

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        with self._lock:
            n = self._size
            if n == 0 or k <= 0:
                return []
            scores = self._matrix[:n] @ query.astype(np.float32)
            ids = self._ids[:n]
        return _top(ids, scores, k)


def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    n = len(ids)
    k = min(k, n)
    top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    order = top[np.argsort(-scores[top])]
    return [(int(ids[i]), float(scores[i])) for i in order]
