"""SQL for facts, entities, links, observations and their vectors.

Full-text rows follow the base rows through triggers (migration 0200); vector
rows are written by the memory service right after it embeds a text, keyed by
(owner, model) and tagged with a hash of the text so the audit can tell a
stale vector from a current one.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from famulus.store.db import Database
from famulus.timeutil import now_iso

Conn = sqlite3.Connection


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class FactRow:
    id: int
    text: str
    kind: str
    source_type: str
    source_ref: str | None
    salience: float
    created_at: str
    updated_at: str
    access_count: int
    last_accessed_at: str | None
    archived_at: str | None
    superseded_by: int | None
    provenance: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "kind": self.kind,
            "source_type": self.source_type,
            "source_ref": self.source_ref,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "access_count": self.access_count,
            "last_accessed_at": self.last_accessed_at,
            "archived_at": self.archived_at,
            "superseded_by": self.superseded_by,
            "provenance": self.provenance,
        }


@dataclass(frozen=True)
class ObservationRow:
    id: int
    summary: str
    evidence_count: int
    created_at: str
    updated_at: str
    archived_at: str | None

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "summary": self.summary,
            "evidence_count": self.evidence_count,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "archived_at": self.archived_at,
        }


def _fact(row: sqlite3.Row) -> FactRow:
    data = dict(row)
    data["provenance"] = json.loads(data.get("provenance") or "{}")
    return FactRow(**data)


_OBS_SELECT = (
    "SELECT o.*, (SELECT COUNT(*) FROM observation_facts f WHERE f.observation_id = o.id)"
    " AS evidence_count FROM observations o"
)


def _obs(row: sqlite3.Row) -> ObservationRow:
    return ObservationRow(**dict(row))


def fts_query(text: str) -> str:
    """A safe FTS5 expression: every word quoted, OR-ed (BM25 ranks the overlap)."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in text.lower()).split()]
    words = [w for w in words if w not in _STOPWORDS and len(w) > 1]
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words))


_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "did",
        "for",
        "from",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
        "about",
        "can",
        "could",
        "would",
        "should",
        "there",
        "been",
        "am",
    ]
)


class MemoryStore:
    """Facts, observations, entities, links, vectors."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- facts --------------------------------------------------------------

    async def insert_fact(
        self,
        text: str,
        kind: str,
        source_type: str,
        source_ref: str | None = None,
        *,
        salience: float = 0.5,
        provenance: dict[str, Any] | None = None,
    ) -> FactRow:
        now = now_iso()

        def op(conn: Conn) -> FactRow:
            cur = conn.execute(
                "INSERT INTO facts (text, kind, source_type, source_ref, salience, created_at,"
                " updated_at, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    text,
                    kind,
                    source_type,
                    source_ref,
                    salience,
                    now,
                    now,
                    json.dumps(provenance or {}),
                ),
            )
            return _get_fact(conn, int(cur.lastrowid or 0))  # type: ignore[return-value]

        return await self.db.write(op)

    async def insert_facts(self, items: list[tuple[str, str]], source_type: str) -> list[FactRow]:
        """Many (text, kind) facts in one transaction (bulk import); texts already
        held by an active fact, or repeated in ``items``, are left out."""
        now = now_iso()

        def op(conn: Conn) -> list[FactRow]:
            seen = {
                str(r[0]) for r in conn.execute("SELECT text FROM facts WHERE archived_at IS NULL")
            }
            ids: list[int] = []
            for text, kind in items:
                if text in seen:
                    continue
                seen.add(text)
                cur = conn.execute(
                    "INSERT INTO facts (text, kind, source_type, salience, created_at,"
                    " updated_at, provenance) VALUES (?, ?, ?, 0.5, ?, ?, '{}')",
                    (text, kind, source_type, now, now),
                )
                ids.append(int(cur.lastrowid or 0))
            return [f for f in (_get_fact(conn, i) for i in ids) if f is not None]

        return await self.db.write(op)

    async def get_fact(self, fact_id: int) -> FactRow | None:
        return await self.db.read(lambda conn: _get_fact(conn, fact_id))

    async def facts_by_ids(self, ids: list[int]) -> dict[int, FactRow]:
        if not ids:
            return {}

        def op(conn: Conn) -> dict[int, FactRow]:
            marks = ",".join("?" * len(ids))
            rows = conn.execute(f"SELECT * FROM facts WHERE id IN ({marks})", ids).fetchall()
            return {r["id"]: _fact(r) for r in rows}

        return await self.db.read(op)

    async def list_facts(
        self,
        *,
        limit: int,
        offset: int,
        q: str | None = None,
        kind: str | None = None,
        source_type: str | None = None,
        archived: bool = False,
    ) -> tuple[list[FactRow], int]:
        where = ["f.archived_at IS NOT NULL" if archived else "f.archived_at IS NULL"]
        params: list[Any] = []
        join = ""
        if q:
            expr = fts_query(q)
            if not expr:
                return [], 0
            join = " JOIN facts_fts ON facts_fts.rowid = f.id"
            where.append("facts_fts MATCH ?")
            params.append(expr)
        if kind:
            where.append("f.kind = ?")
            params.append(kind)
        if source_type:
            where.append("f.source_type = ?")
            params.append(source_type)
        clause = f" FROM facts f{join} WHERE " + " AND ".join(where)
        order = " ORDER BY facts_fts.rank" if q else " ORDER BY f.updated_at DESC, f.id DESC"

        def op(conn: Conn) -> tuple[list[FactRow], int]:
            total = conn.execute("SELECT COUNT(*)" + clause, params).fetchone()[0]
            rows = conn.execute(
                "SELECT f.*" + clause + order + " LIMIT ? OFFSET ?", [*params, limit, offset]
            ).fetchall()
            return [_fact(r) for r in rows], int(total)

        return await self.db.read(op)

    async def active_facts(self, limit: int = 10_000) -> list[FactRow]:
        def op(conn: Conn) -> list[FactRow]:
            rows = conn.execute(
                "SELECT * FROM facts WHERE archived_at IS NULL ORDER BY id LIMIT ?", (limit,)
            ).fetchall()
            return [_fact(r) for r in rows]

        return await self.db.read(op)

    async def update_fact(self, fact_id: int, **fields: Any) -> FactRow | None:
        fields = {k: v for k, v in fields.items() if v is not None}

        def op(conn: Conn) -> FactRow | None:
            if fields:
                sets = ", ".join(f"{k} = ?" for k in fields)
                conn.execute(
                    f"UPDATE facts SET {sets}, updated_at = ? WHERE id = ?",
                    [*fields.values(), now_iso(), fact_id],
                )
            return _get_fact(conn, fact_id)

        return await self.db.write(op)

    async def supersede(self, old_id: int, new_id: int, reason: str) -> None:
        """Archive the old fact, pointing at its successor; it stays readable by id."""
        now = now_iso()

        def op(conn: Conn) -> None:
            row = _get_fact(conn, old_id)
            if row is None:
                return
            prov = {**row.provenance, "superseded": {"by": new_id, "at": now, "reason": reason}}
            conn.execute(
                "UPDATE facts SET archived_at = ?, superseded_by = ?, provenance = ? WHERE id = ?",
                (now, new_id, json.dumps(prov), old_id),
            )
            conn.execute(
                "DELETE FROM memory_vectors WHERE owner_type = 'fact' AND owner_id = ?", (old_id,)
            )
            _link(conn, new_id, old_id, "supersedes", 1.0)

        await self.db.write(op)

    async def delete_fact(self, fact_id: int) -> bool:
        def op(conn: Conn) -> bool:
            n = conn.execute("DELETE FROM facts WHERE id = ?", (fact_id,)).rowcount
            conn.execute(
                "DELETE FROM memory_vectors WHERE owner_type = 'fact' AND owner_id = ?", (fact_id,)
            )
            conn.execute(
                "DELETE FROM fact_links WHERE from_id = ? OR to_id = ?", (fact_id, fact_id)
            )
            conn.execute("DELETE FROM fact_entities WHERE fact_id = ?", (fact_id,))
            conn.execute("DELETE FROM observation_facts WHERE fact_id = ?", (fact_id,))
            _drop_profile_source(conn, "source_fact_ids", fact_id)
            return n > 0

        return await self.db.write(op)

    async def record_access(self, fact_ids: list[int]) -> None:
        if not fact_ids:
            return
        now = now_iso()

        def op(conn: Conn) -> None:
            conn.executemany(
                "UPDATE facts SET access_count = access_count + 1, last_accessed_at = ?"
                " WHERE id = ?",
                [(now, i) for i in fact_ids],
            )

        await self.db.write(op)

    # -- full text ----------------------------------------------------------

    def fts_search_sync(self, conn: Conn, table: str, expr: str, k: int) -> list[int]:
        base = "facts" if table == "facts_fts" else "observations"
        rows = conn.execute(
            f"SELECT b.id FROM {table} JOIN {base} b ON b.id = {table}.rowid"
            f" WHERE {table} MATCH ? AND b.archived_at IS NULL ORDER BY {table}.rank LIMIT ?",
            (expr, k),
        ).fetchall()
        return [int(r[0]) for r in rows]

    async def fts_search(self, table: str, query: str, k: int) -> list[int]:
        expr = fts_query(query)
        if not expr:
            return []
        return await self.db.read(lambda conn: self.fts_search_sync(conn, table, expr, k))

    async def fts_facts_and_observations(self, query: str, k: int) -> tuple[list[int], list[int]]:
        """Both full-text candidate lists of one recall, read in one go."""
        expr = fts_query(query)
        if not expr:
            return [], []
        return await self.db.read(
            lambda conn: (
                self.fts_search_sync(conn, "facts_fts", expr, k),
                self.fts_search_sync(conn, "observations_fts", expr, k),
            )
        )

    # -- entities and links -------------------------------------------------

    async def attach_entities(self, fact_id: int, entities: list[tuple[str, str]]) -> None:
        def op(conn: Conn) -> None:
            for name, etype in entities:
                conn.execute(
                    "INSERT OR IGNORE INTO entities (name, type) VALUES (?, ?)", (name, etype)
                )
                eid = conn.execute(
                    "SELECT id FROM entities WHERE name = ? AND type = ?", (name, etype)
                ).fetchone()[0]
                conn.execute(
                    "INSERT OR IGNORE INTO fact_entities (fact_id, entity_id) VALUES (?, ?)",
                    (fact_id, eid),
                )

        await self.db.write(op)

    async def add_link(self, from_id: int, to_id: int, link_type: str, weight: float) -> None:
        await self.db.write(lambda conn: _link(conn, from_id, to_id, link_type, weight))

    async def entities_of(self, fact_id: int) -> list[dict[str, Any]]:
        def op(conn: Conn) -> list[dict[str, Any]]:
            rows = conn.execute(
                "SELECT e.id, e.name, e.type FROM entities e JOIN fact_entities fe"
                " ON fe.entity_id = e.id WHERE fe.fact_id = ? ORDER BY e.name",
                (fact_id,),
            ).fetchall()
            return [dict(r) for r in rows]

        return await self.db.read(op)

    async def linked_facts(self, fact_id: int) -> list[dict[str, Any]]:
        def op(conn: Conn) -> list[dict[str, Any]]:
            rows = conn.execute(
                "SELECT f.id, f.text, l.link_type, l.weight FROM fact_links l"
                " JOIN facts f ON f.id = CASE WHEN l.from_id = ? THEN l.to_id ELSE l.from_id END"
                " WHERE l.from_id = ? OR l.to_id = ? ORDER BY l.weight DESC",
                (fact_id, fact_id, fact_id),
            ).fetchall()
            return [dict(r) for r in rows]

        return await self.db.read(op)

    # -- observations -------------------------------------------------------

    async def insert_observation(self, summary: str, fact_ids: list[int]) -> ObservationRow:
        now = now_iso()

        def op(conn: Conn) -> ObservationRow:
            cur = conn.execute(
                "INSERT INTO observations (summary, created_at, updated_at) VALUES (?, ?, ?)",
                (summary, now, now),
            )
            oid = int(cur.lastrowid or 0)
            conn.executemany(
                "INSERT OR IGNORE INTO observation_facts (observation_id, fact_id) VALUES (?, ?)",
                [(oid, f) for f in fact_ids],
            )
            return _get_obs(conn, oid)  # type: ignore[return-value]

        return await self.db.write(op)

    async def get_observation(self, obs_id: int) -> ObservationRow | None:
        return await self.db.read(lambda conn: _get_obs(conn, obs_id))

    async def observations_by_ids(self, ids: list[int]) -> dict[int, ObservationRow]:
        if not ids:
            return {}

        def op(conn: Conn) -> dict[int, ObservationRow]:
            marks = ",".join("?" * len(ids))
            rows = conn.execute(f"{_OBS_SELECT} WHERE o.id IN ({marks})", ids).fetchall()
            return {r["id"]: _obs(r) for r in rows}

        return await self.db.read(op)

    async def list_observations(self, limit: int, offset: int) -> tuple[list[ObservationRow], int]:
        def op(conn: Conn) -> tuple[list[ObservationRow], int]:
            total = conn.execute(
                "SELECT COUNT(*) FROM observations WHERE archived_at IS NULL"
            ).fetchone()[0]
            rows = conn.execute(
                f"{_OBS_SELECT} WHERE o.archived_at IS NULL ORDER BY o.updated_at DESC, o.id DESC"
                " LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
            return [_obs(r) for r in rows], int(total)

        return await self.db.read(op)

    async def update_observation(self, obs_id: int, summary: str) -> ObservationRow | None:
        def op(conn: Conn) -> ObservationRow | None:
            conn.execute(
                "UPDATE observations SET summary = ?, updated_at = ? WHERE id = ?",
                (summary, now_iso(), obs_id),
            )
            return _get_obs(conn, obs_id)

        return await self.db.write(op)

    async def delete_observation(self, obs_id: int) -> bool:
        def op(conn: Conn) -> bool:
            conn.execute(
                "DELETE FROM memory_vectors WHERE owner_type = 'observation' AND owner_id = ?",
                (obs_id,),
            )
            _drop_profile_source(conn, "source_observation_ids", obs_id)
            return conn.execute("DELETE FROM observations WHERE id = ?", (obs_id,)).rowcount > 0

        return await self.db.write(op)

    async def supporting_facts(self, obs_id: int) -> list[FactRow]:
        def op(conn: Conn) -> list[FactRow]:
            rows = conn.execute(
                "SELECT f.* FROM facts f JOIN observation_facts o ON o.fact_id = f.id"
                " WHERE o.observation_id = ? ORDER BY f.id",
                (obs_id,),
            ).fetchall()
            return [_fact(r) for r in rows]

        return await self.db.read(op)

    # -- vectors ------------------------------------------------------------

    async def put_vectors(
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

    async def load_vectors(self, owner_type: str, model: str) -> tuple[list[int], np.ndarray]:
        base = "facts" if owner_type == "fact" else "observations"

        def op(conn: Conn) -> tuple[list[int], np.ndarray]:
            rows = conn.execute(
                f"SELECT v.owner_id, v.dim, v.vec FROM memory_vectors v JOIN {base} b"
                " ON b.id = v.owner_id WHERE v.owner_type = ? AND v.model = ?"
                " AND b.archived_at IS NULL",
                (owner_type, model),
            ).fetchall()
            if not rows:
                return [], np.zeros((0, 1), dtype=np.float32)
            ids = [int(r[0]) for r in rows]
            matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
            return ids, matrix.reshape(len(rows), int(rows[0][1]))

        return await self.db.read(op)

    async def vector_hashes(self, owner_type: str, model: str) -> dict[int, str]:
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
        """Every active fact or observation with its text (for a re-index)."""
        sql = (
            "SELECT id, text FROM facts WHERE archived_at IS NULL ORDER BY id"
            if owner_type == "fact"
            else "SELECT id, summary FROM observations WHERE archived_at IS NULL ORDER BY id"
        )
        return await self.db.read(
            lambda conn: [(int(r[0]), str(r[1])) for r in conn.execute(sql).fetchall()]
        )


def _get_fact(conn: Conn, fact_id: int) -> FactRow | None:
    row = conn.execute("SELECT * FROM facts WHERE id = ?", (fact_id,)).fetchone()
    return _fact(row) if row else None


def _get_obs(conn: Conn, obs_id: int) -> ObservationRow | None:
    row = conn.execute(f"{_OBS_SELECT} WHERE o.id = ?", (obs_id,)).fetchone()
    return _obs(row) if row else None


def _link(conn: Conn, from_id: int, to_id: int, link_type: str, weight: float) -> None:
    conn.execute(
        "INSERT INTO fact_links (from_id, to_id, link_type, weight, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (from_id, to_id, link_type)"
        " DO UPDATE SET weight = excluded.weight",
        (from_id, to_id, link_type, weight, now_iso()),
    )


def _drop_profile_source(conn: Conn, column: str, owner_id: int) -> None:
    """A deleted fact or observation leaves no dangling id in a profile entry's sources."""
    rows = conn.execute(
        f"SELECT p.id, p.{column} FROM profile_entries p, json_each(p.{column}) j"
        " WHERE j.value = ?",
        (owner_id,),
    ).fetchall()
    for row in rows:
        kept = [i for i in json.loads(row[1]) if i != owner_id]
        conn.execute(
            f"UPDATE profile_entries SET {column} = ? WHERE id = ?", (json.dumps(kept), row[0])
        )
