"""Pieces the memory stores share: text hashing, the full-text query, JSON columns."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

Conn = sqlite3.Connection


def text_hash(text: str) -> str:
    """Tags a vector with the text it was made from, so a stale one can be told apart."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fts_query(text: str) -> str:
    """A safe FTS5 expression: every word quoted, OR-ed (BM25 ranks the overlap)."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in text.lower()).split()]
    words = [w for w in words if w not in _STOPWORDS and len(w) > 1]
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words))


def fts_all_query(text: str) -> str:
    """Like ``fts_query`` but every word must be there (AND): the facts that hold all of it."""
    return " AND ".join(fts_query(text).split(" OR ")) if fts_query(text) else ""


def ids(value: str | None) -> list[int]:
    """A JSON id-list column as a list."""
    return [int(i) for i in json.loads(value or "[]")]


def obj(value: str | None) -> dict[str, Any]:
    """A JSON object column as a dict."""
    loaded = json.loads(value or "{}")
    return loaded if isinstance(loaded, dict) else {}


def drop_profile_source(conn: Conn, column: str, owner_id: int) -> None:
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
