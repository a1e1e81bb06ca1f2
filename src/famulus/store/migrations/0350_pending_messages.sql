-- Messages accepted with "202 queued" while their session's run was busy. A row
-- is written before the 202 is sent and removed in the same transaction that
-- puts the message into history (taken in by the run, or left unanswered), so
-- a kill -9 in between loses nothing: start-up moves leftovers into history.

CREATE TABLE pending_messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id      TEXT NOT NULL,
    content     TEXT NOT NULL,
    images      TEXT,
    client_id   TEXT,
    created_at  TEXT NOT NULL
);
CREATE INDEX pending_messages_session ON pending_messages (session_id, id);
