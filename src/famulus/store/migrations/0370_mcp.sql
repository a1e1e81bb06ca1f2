-- MCP servers the person registered: their tools become agent tools. The values
-- of a server's env and headers are secrets and live in the secrets file, not here.
CREATE TABLE mcp_servers (
    name        TEXT PRIMARY KEY,
    transport   TEXT NOT NULL CHECK (transport IN ('stdio', 'http')),
    command     TEXT,
    args        TEXT NOT NULL DEFAULT '[]',
    url         TEXT,
    trusted     INTEGER NOT NULL DEFAULT 0,
    enabled     INTEGER NOT NULL DEFAULT 1,
    created_at  TEXT NOT NULL
);
