-- Notifier configs: where automation results are sent.
CREATE TABLE notifiers (
    name        TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    config      TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
