"""Continual learning: feedback events and the candidates proposed from them."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from famulus.store.db import Database
from famulus.store.memory.common import Conn, ids, obj
from famulus.timeutil import now_iso


@dataclass(frozen=True)
class LearningEventRow:
    id: int
    kind: str
    summary: str
    session_id: str | None
    run_id: str | None
    data: dict[str, Any]
    created_at: str


@dataclass(frozen=True)
class CandidateRow:
    id: int
    status: str
    change_type: str
    target_key: str
    proposal: str
    rationale: str
    evidence_event_ids: list[int]
    applied_state: dict[str, Any] | None  # what applying changed, for a revert
    created_at: str
    updated_at: str
    applied_at: str | None
    reverted_at: str | None


def _event(row: sqlite3.Row) -> LearningEventRow:
    data = dict(row)
    data["data"] = obj(data["data"])
    return LearningEventRow(**data)


def _candidate(row: sqlite3.Row) -> CandidateRow:
    data = dict(row)
    data["evidence_event_ids"] = ids(data["evidence_event_ids"])
    if data["applied_state"] is not None:
        data["applied_state"] = obj(data["applied_state"])
    return CandidateRow(**data)


def _get_candidate(conn: Conn, cand_id: int) -> CandidateRow | None:
    row = conn.execute("SELECT * FROM learning_candidates WHERE id = ?", (cand_id,)).fetchone()
    return _candidate(row) if row else None


class LearningStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def insert_event(
        self,
        kind: str,
        summary: str,
        session_id: str | None,
        run_id: str | None,
        data: dict[str, Any],
    ) -> LearningEventRow:
        def op(conn: Conn) -> LearningEventRow:
            cur = conn.execute(
                "INSERT INTO learning_events (kind, summary, session_id, run_id, data, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (kind, summary, session_id, run_id, json.dumps(data), now_iso()),
            )
            row = conn.execute(
                "SELECT * FROM learning_events WHERE id = ?", (cur.lastrowid,)
            ).fetchone()
            return _event(row)

        return await self.db.write(op)

    async def events(
        self, limit: int, offset: int, kind: str | None = None
    ) -> tuple[list[LearningEventRow], int]:
        where, params = (" WHERE kind = ?", [kind]) if kind else ("", [])

        def op(conn: Conn) -> tuple[list[LearningEventRow], int]:
            total = conn.execute(f"SELECT COUNT(*) FROM learning_events{where}", params)
            rows = conn.execute(
                f"SELECT * FROM learning_events{where} ORDER BY id DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return [_event(r) for r in rows], int(total.fetchone()[0])

        return await self.db.read(op)

    async def events_without_candidate(self) -> list[LearningEventRow]:
        """Events that no candidate cites yet: the evidence a proposal round reads."""

        def op(conn: Conn) -> list[LearningEventRow]:
            used: set[int] = set()
            for (cited,) in conn.execute("SELECT evidence_event_ids FROM learning_candidates"):
                used.update(ids(cited))
            rows = conn.execute("SELECT * FROM learning_events ORDER BY id").fetchall()
            return [e for e in (_event(r) for r in rows) if e.id not in used]

        return await self.db.read(op)

    async def insert_candidate(
        self,
        change_type: str,
        target_key: str,
        proposal: str,
        rationale: str,
        evidence: list[int],
    ) -> CandidateRow:
        now = now_iso()

        def op(conn: Conn) -> CandidateRow:
            cur = conn.execute(
                "INSERT INTO learning_candidates (change_type, target_key, proposal, rationale,"
                " evidence_event_ids, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (change_type, target_key, proposal, rationale, json.dumps(evidence), now, now),
            )
            return _get_candidate(conn, int(cur.lastrowid or 0))  # type: ignore[return-value]

        return await self.db.write(op)

    async def get_candidate(self, cand_id: int) -> CandidateRow | None:
        return await self.db.read(lambda conn: _get_candidate(conn, cand_id))

    async def candidates(
        self, status: str | None, limit: int, offset: int
    ) -> tuple[list[CandidateRow], int]:
        where, params = (" WHERE status = ?", [status]) if status else ("", [])

        def op(conn: Conn) -> tuple[list[CandidateRow], int]:
            total = conn.execute(f"SELECT COUNT(*) FROM learning_candidates{where}", params)
            rows = conn.execute(
                f"SELECT * FROM learning_candidates{where} ORDER BY id DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return [_candidate(r) for r in rows], int(total.fetchone()[0])

        return await self.db.read(op)

    async def set_candidate_status(
        self,
        cand_id: int,
        expect: str,
        status: str,
        *,
        applied_at: str | None = None,
        reverted_at: str | None = None,
        applied_state: dict[str, Any] | None = None,
    ) -> CandidateRow | None:
        """Compare-and-set: None when the status was no longer ``expect``. The
        other fields given (not None) are set with it."""
        values: dict[str, Any] = {
            "applied_at": applied_at,
            "reverted_at": reverted_at,
            "applied_state": json.dumps(applied_state) if applied_state is not None else None,
        }
        values = {k: v for k, v in values.items() if v is not None}

        def op(conn: Conn) -> CandidateRow | None:
            sets = "".join(f", {k} = ?" for k in values)
            n = conn.execute(
                f"UPDATE learning_candidates SET status = ?, updated_at = ?{sets}"
                " WHERE id = ? AND status = ?",
                [status, now_iso(), *values.values(), cand_id, expect],
            ).rowcount
            return _get_candidate(conn, cand_id) if n else None

        return await self.db.write(op)
