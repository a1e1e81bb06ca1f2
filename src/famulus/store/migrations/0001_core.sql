-- Core: sessions, message history, the per-session event log, key/value settings.

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    sources       TEXT NOT NULL DEFAULT '[]',
    created_at    TEXT NOT NULL,
    last_activity TEXT NOT NULL,
    archived_at   TEXT
);
CREATE INDEX sessions_activity ON sessions (archived_at, last_activity DESC);

-- One row per completed message. tool_calls/images are JSON; a tool result is
-- role 'tool' with tool_call_id. 'compacted_into' marks turns folded into a
-- summary by compaction; the raw rows are never deleted by compaction.
CREATE TABLE messages (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id         TEXT,
    role           TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system', 'summary')),
    content        TEXT NOT NULL DEFAULT '',
    tool_calls     TEXT,
    tool_call_id   TEXT,
    tool_name      TEXT,
    images         TEXT,
    meta           TEXT,
    created_at     TEXT NOT NULL
);
CREATE INDEX messages_session ON messages (session_id, id);

CREATE TABLE events (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    type        TEXT NOT NULL,
    run_id      TEXT,
    data        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE TABLE kv (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
