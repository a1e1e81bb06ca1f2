-- The OpenAI-compatible endpoint (/v1): which famulus session a request's
-- `user` name, or an API client, stands for. `client_key` is 'user:<user>' or
-- 'client:<client name>'. Removing the session removes its mapping, so the
-- next request of that user or client starts a new session.
CREATE TABLE openai_sessions (
    client_key  TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at  TEXT NOT NULL
);
CREATE INDEX openai_sessions_by_session ON openai_sessions (session_id);
