-- Automations and their run history.
CREATE TABLE automations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    trigger      TEXT NOT NULL,
    notifiers    TEXT NOT NULL DEFAULT '[]',
    enabled      INTEGER NOT NULL DEFAULT 1,
    writable     INTEGER NOT NULL DEFAULT 0,
    session_id   TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    last_run_at  TEXT,
    next_run_at  TEXT,
    last_result  TEXT,
    last_status  TEXT
);

CREATE TABLE automation_runs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    automation_id  INTEGER NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    run_id         TEXT,
    started_at     TEXT NOT NULL,
    finished_at    TEXT,
    status         TEXT NOT NULL,
    result         TEXT
);
CREATE INDEX automation_runs_by_automation ON automation_runs (automation_id, id DESC);
