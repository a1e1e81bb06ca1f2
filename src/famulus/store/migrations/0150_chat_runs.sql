-- Chat runs: one row per agent run, so usage can be reported and a run that
-- was active when the process died can be marked interrupted at start-up.
-- Compaction summaries live in messages (role 'summary'); their meta holds
-- "through_id", the last raw message the summary covers.

CREATE TABLE runs (
    id                 TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    status             TEXT NOT NULL
                       CHECK (status IN ('running', 'finished', 'failed', 'cancelled', 'interrupted')),
    model_id           TEXT,
    skip_approvals     INTEGER NOT NULL DEFAULT 0,
    backgrounded       INTEGER NOT NULL DEFAULT 0,
    prompt_tokens      INTEGER NOT NULL DEFAULT 0,
    completion_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cost               REAL NOT NULL DEFAULT 0,
    error              TEXT,
    started_at         TEXT NOT NULL,
    finished_at        TEXT
);
CREATE INDEX runs_session ON runs (session_id, started_at);
CREATE INDEX runs_status ON runs (status);
