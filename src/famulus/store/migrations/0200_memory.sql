-- Memory: facts, entities, links, observations, profile, dreams, learning,
-- access events, and the indexes that serve recall.
--
-- Full text: FTS5 external-content tables kept in step by triggers, so an
-- edit or delete is searchable (or gone) in the same transaction.
-- Vectors: one BLOB per (owner, model). Rows for a new embedding model are
-- written beside the old ones during a re-index; recall keeps using the
-- current model's rows until the switch, then the old rows are dropped.

CREATE TABLE facts (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    text             TEXT NOT NULL,
    kind             TEXT NOT NULL DEFAULT 'fact',
    source_type      TEXT NOT NULL DEFAULT 'manual',
    source_ref       TEXT,
    salience         REAL NOT NULL DEFAULT 0.5,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    archived_at      TEXT,
    superseded_by    INTEGER REFERENCES facts (id) ON DELETE SET NULL,
    provenance       TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX facts_active ON facts (archived_at, updated_at DESC);
CREATE INDEX facts_kind ON facts (kind);

CREATE VIRTUAL TABLE facts_fts USING fts5 (
    text, content = 'facts', content_rowid = 'id', tokenize = 'porter unicode61'
);
CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER facts_ad AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER facts_au AFTER UPDATE OF text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO facts_fts (rowid, text) VALUES (new.id, new.text);
END;

CREATE TABLE entities (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    name  TEXT NOT NULL,
    type  TEXT NOT NULL DEFAULT 'thing',
    UNIQUE (name, type)
);

CREATE TABLE fact_entities (
    fact_id    INTEGER NOT NULL,
    entity_id  INTEGER NOT NULL,
    PRIMARY KEY (fact_id, entity_id)
) WITHOUT ROWID;

-- No foreign keys on links on purpose: the audit reports orphan links, and
-- deletes clean them up in the repository, where it can be tested.
CREATE TABLE fact_links (
    from_id    INTEGER NOT NULL,
    to_id      INTEGER NOT NULL,
    link_type  TEXT NOT NULL,
    weight     REAL NOT NULL DEFAULT 1.0,
    created_at TEXT NOT NULL,
    PRIMARY KEY (from_id, to_id, link_type)
) WITHOUT ROWID;

CREATE TABLE observations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    summary      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    archived_at  TEXT
);
CREATE VIRTUAL TABLE observations_fts USING fts5 (
    summary, content = 'observations', content_rowid = 'id', tokenize = 'porter unicode61'
);
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observations_fts (rowid, summary) VALUES (new.id, new.summary);
END;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, summary)
        VALUES ('delete', old.id, old.summary);
END;
CREATE TRIGGER observations_au AFTER UPDATE OF summary ON observations BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, summary)
        VALUES ('delete', old.id, old.summary);
    INSERT INTO observations_fts (rowid, summary) VALUES (new.id, new.summary);
END;

CREATE TABLE observation_facts (
    observation_id  INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    fact_id         INTEGER NOT NULL,
    PRIMARY KEY (observation_id, fact_id)
) WITHOUT ROWID;

-- owner_type: 'fact' | 'observation'. text_hash tells a stale vector apart.
CREATE TABLE memory_vectors (
    owner_type  TEXT NOT NULL,
    owner_id    INTEGER NOT NULL,
    model       TEXT NOT NULL,
    text_hash   TEXT NOT NULL,
    dim         INTEGER NOT NULL,
    vec         BLOB NOT NULL,
    PRIMARY KEY (owner_type, owner_id, model)
) WITHOUT ROWID;

CREATE TABLE profile_entries (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    kind                    TEXT NOT NULL,
    summary                 TEXT NOT NULL,
    source_fact_ids         TEXT NOT NULL DEFAULT '[]',
    source_observation_ids  TEXT NOT NULL DEFAULT '[]',
    confidence              REAL NOT NULL DEFAULT 0.8,
    created_at              TEXT NOT NULL,
    updated_at              TEXT NOT NULL,
    archived_at             TEXT
);

CREATE TABLE dreams (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    bridge           TEXT NOT NULL,
    insight          TEXT NOT NULL,
    source_fact_ids  TEXT NOT NULL DEFAULT '[]',
    created_at       TEXT NOT NULL
);

CREATE TABLE learning_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL,
    summary     TEXT NOT NULL,
    session_id  TEXT,
    run_id      TEXT,
    data        TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL
);

-- applied_state: JSON of exactly what applying changed (previous value), so
-- reverting restores it.
CREATE TABLE learning_candidates (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    status              TEXT NOT NULL DEFAULT 'proposed',
    change_type         TEXT NOT NULL,
    target_key          TEXT NOT NULL,
    proposal            TEXT NOT NULL,
    rationale           TEXT NOT NULL DEFAULT '',
    evidence_event_ids  TEXT NOT NULL DEFAULT '[]',
    applied_state       TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    applied_at          TEXT,
    reverted_at         TEXT
);

CREATE TABLE memory_access_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT,
    query       TEXT NOT NULL,
    owner_type  TEXT NOT NULL,
    owner_id    INTEGER NOT NULL,
    action      TEXT NOT NULL CHECK (action IN ('retrieved', 'injected', 'omitted')),
    score       REAL,
    created_at  TEXT NOT NULL
);
CREATE INDEX memory_access_owner ON memory_access_events (owner_type, owner_id);

-- Per-session extraction bookkeeping: the last message id already read.
CREATE TABLE memory_extraction_state (
    session_id       TEXT PRIMARY KEY,
    last_message_id  INTEGER NOT NULL DEFAULT 0,
    updated_at       TEXT NOT NULL
);
