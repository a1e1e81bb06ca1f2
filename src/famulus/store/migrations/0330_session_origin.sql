-- Where a session came from: 'chat' (a person's conversation) or 'automation'
-- (an automation's own session). The default session and GET /sessions only
-- consider chat sessions. Sessions automations already use are marked.
ALTER TABLE sessions ADD COLUMN origin TEXT NOT NULL DEFAULT 'chat';
UPDATE sessions SET origin = 'automation'
 WHERE id IN (SELECT session_id FROM automations WHERE session_id IS NOT NULL);
CREATE INDEX sessions_origin_activity ON sessions (origin, archived_at, last_activity DESC);
