"""Embedding vectors of facts, observations and message chunks, keyed by (owner, model).

Each vector is tagged with a hash of the text it was made from, so the audit
and the backfill can tell a stale vector from a current one.
"""

from __future__ import annotations

import numpy as np

from famulus.store.db import Database
from famulus.store.memory.common import Conn, text_hash

# owner type -> (table, which of its rows count as live). Messages are indexed
# by chunk (``conversation_chunks``, see store/memory/conversations.py); a chunk
# lives until its message is deleted.
_BASE = {
    "fact": ("facts", "b.archived_at IS NULL"),
    "observation": ("observations", "b.archived_at IS NULL"),
    "message": ("conversation_chunks", "1"),
}
_TEXTS = {
    "fact": "SELECT id, text FROM facts WHERE archived_at IS NULL ORDER BY id",
    "observation": "SELECT id, summary FROM observations WHERE archived_at IS NULL ORDER BY id",
    "message": "SELECT id, text FROM conversation_chunks ORDER BY id",
}


class VectorStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def put(
        self, owner_type: str, model: str, items: list[tuple[int, str, np.ndarray]]
    ) -> None:
        """items: (owner_id, text, unit vector)."""

        def op(conn: Conn) -> None:
            conn.executemany(
                "INSERT INTO memory_vectors (owner_type, owner_id, model, text_hash, dim, vec)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (owner_type, owner_id, model) DO UPDATE"
                " SET text_hash = excluded.text_hash, dim = excluded.dim, vec = excluded.vec",
                [
                    (
                        owner_type,
                        oid,
                        model,
                        text_hash(text),
                        int(vec.shape[0]),
                        vec.astype(np.float32).tobytes(),
                    )
                    for oid, text, vec in items
                ],
            )

        await self.db.write(op)

    async def load(self, owner_type: str, model: str) -> tuple[list[int], np.ndarray]:
        """The vectors of active rows: ids and one matrix, row n for ids[n]."""
        base, live = _BASE[owner_type]

        def op(conn: Conn) -> tuple[list[int], np.ndarray]:
            rows = conn.execute(
                f"SELECT v.owner_id, v.dim, v.vec FROM memory_vectors v JOIN {base} b"
                " ON b.id = v.owner_id WHERE v.owner_type = ? AND v.model = ?"
                f" AND {live}",
                (owner_type, model),
            ).fetchall()
            if not rows:
                return [], np.zeros((0, 1), dtype=np.float32)
            ids = [int(r[0]) for r in rows]
            matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
            return ids, matrix.reshape(len(rows), int(rows[0][1]))

        return await self.db.read(op)

    async def hashes(self, owner_type: str, model: str) -> dict[int, str]:
        return await self.db.read(
            lambda conn: {
                int(r[0]): str(r[1])
                for r in conn.execute(
                    "SELECT owner_id, text_hash FROM memory_vectors"
                    " WHERE owner_type = ? AND model = ?",
                    (owner_type, model),
                )
            }
        )

    async def drop_other_models(self, keep_model: str) -> int:
        return await self.db.write(
            lambda conn: (
                conn.execute("DELETE FROM memory_vectors WHERE model != ?", (keep_model,)).rowcount
            )
        )

    async def texts_to_embed(self, owner_type: str) -> list[tuple[int, str]]:
        """Every active fact, observation or message chunk with its text (for a re-index)."""
        sql = _TEXTS[owner_type]
        return await self.db.read(
            lambda conn: [(int(r[0]), str(r[1])) for r in conn.execute(sql).fetchall()]
        )
