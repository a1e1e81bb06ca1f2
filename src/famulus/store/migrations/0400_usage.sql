-- The usage ledger: one row per model request, whoever made it (a chat run,
-- the research sub-agent, a memory job, compaction, an automation). The
-- session, run and automation are plain columns, not foreign keys, so the
-- spend stays on record after the session or automation is deleted.
-- cost is NULL when the price is unknown (a custom model, a subscription).

CREATE TABLE usage_ledger (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    ts                 TEXT NOT NULL,
    source             TEXT NOT NULL,
    session_id         TEXT,
    run_id             TEXT,
    automation_id      INTEGER,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    -- the 4-characters-a-token estimate of what was sent (GET /context scales
    -- its estimates by input_tokens / estimated_input of a session's last request)
    estimated_input    INTEGER,
    cost               REAL,
    priced_by          TEXT
);
CREATE INDEX usage_ledger_ts ON usage_ledger (ts);
CREATE INDEX usage_ledger_session ON usage_ledger (session_id, id);
CREATE INDEX usage_ledger_automation ON usage_ledger (automation_id, ts);

-- An automation's own cap: USD a day its runs may spend (NULL: none).
ALTER TABLE automations ADD COLUMN budget REAL;
