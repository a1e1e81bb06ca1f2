-- Calendar-triggered automations: which (automation, event occurrence) pairs
-- have fired, so each fires exactly once. An occurrence is its UID plus its
-- start (UTC ISO), which tells the occurrences of a recurring event apart.
CREATE TABLE calendar_fired (
    automation_id  INTEGER NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    event_uid      TEXT NOT NULL,
    event_start    TEXT NOT NULL,
    fired_at       TEXT NOT NULL,
    PRIMARY KEY (automation_id, event_uid, event_start)
);
CREATE INDEX calendar_fired_by_start ON calendar_fired (event_start);
