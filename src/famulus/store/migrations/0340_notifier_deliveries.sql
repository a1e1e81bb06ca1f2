-- Deliveries of automation results to notifiers. A row is written in the same
-- transaction that records the run's result and stays until it is final
-- (delivered or failed), so neither a failing receiver nor a restart loses
-- it: a background loop tries again every row whose next_attempt_at is due.
CREATE TABLE notifier_deliveries (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    automation_id    INTEGER NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    run_id           INTEGER NOT NULL REFERENCES automation_runs (id) ON DELETE CASCADE,
    notifier         TEXT NOT NULL,
    title            TEXT NOT NULL,
    text             TEXT NOT NULL,
    -- pending (not tried yet) | retrying | delivered | failed
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT,                       -- null once final
    last_error       TEXT,
    tries            TEXT NOT NULL DEFAULT '[]', -- [{"attempt","at","status","error"}]
    created_at       TEXT NOT NULL,
    finished_at      TEXT
);
CREATE INDEX notifier_deliveries_due ON notifier_deliveries (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;
CREATE INDEX notifier_deliveries_by_run ON notifier_deliveries (run_id);
