-- The Telegram channel (issue 10). Nobody talks to the agent over Telegram
-- until the owner approves their chat: an unknown chat is given a one-time
-- pairing code (telegram_pairings) and only approved chats (telegram_chats)
-- are served. Each approved chat has a current session; telegram_sessions
-- remembers every session a chat started, for /sessions. The update offset
-- lives in kv ('telegram.offset').

CREATE TABLE telegram_chats (
    chat_id     INTEGER PRIMARY KEY,
    title       TEXT NOT NULL,
    session_id  TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    approved_at TEXT NOT NULL
);

CREATE TABLE telegram_pairings (
    code        TEXT PRIMARY KEY,
    chat_id     INTEGER NOT NULL UNIQUE,
    title       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);

CREATE TABLE telegram_sessions (
    chat_id     INTEGER NOT NULL,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (chat_id, session_id)
) WITHOUT ROWID;
