-- Conversation recall (issue 12): what was said in past sessions, searchable.
--
-- Each user or assistant message is cut into chunks (one for most messages);
-- a chunk row is the unit of full-text search and of embedding. Chunks are
-- written by a background indexer that follows the messages table by id
-- (its high-water mark lives in conversation_index_state), never on the
-- request path. Deleting a message (session delete, clear, revert) cascades
-- to its chunks, and the triggers below drop their full-text rows and their
-- vectors in the same transaction, so a deleted message cannot be found.

CREATE TABLE conversation_chunks (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id  INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    session_id  TEXT NOT NULL,
    role        TEXT NOT NULL,
    chunk_no    INTEGER NOT NULL,
    text        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (message_id, chunk_no)
);
CREATE INDEX conversation_chunks_session ON conversation_chunks (session_id, created_at);
CREATE INDEX conversation_chunks_time ON conversation_chunks (created_at);

CREATE VIRTUAL TABLE conversation_fts USING fts5 (
    text, content = 'conversation_chunks', content_rowid = 'id', tokenize = 'porter unicode61'
);
CREATE TRIGGER conversation_chunks_ai AFTER INSERT ON conversation_chunks BEGIN
    INSERT INTO conversation_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER conversation_chunks_ad AFTER DELETE ON conversation_chunks BEGIN
    INSERT INTO conversation_fts (conversation_fts, rowid, text) VALUES ('delete', old.id, old.text);
    DELETE FROM memory_vectors WHERE owner_type = 'message' AND owner_id = old.id;
END;

-- One row: the id of the last message the indexer has read.
CREATE TABLE conversation_index_state (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    last_message_id  INTEGER NOT NULL DEFAULT 0,
    updated_at       TEXT NOT NULL
);
