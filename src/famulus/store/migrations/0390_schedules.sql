-- Run history (issue 11): what started each automation run, the session it
-- ran in and the usage its agent run reported. Runs recorded before this
-- migration have none of them (null).
ALTER TABLE automation_runs ADD COLUMN fired_by TEXT;   -- schedule | catch_up | calendar | manual
ALTER TABLE automation_runs ADD COLUMN session_id TEXT; -- kept when the session is gone
ALTER TABLE automation_runs ADD COLUMN usage TEXT;      -- JSON: the run_finished usage
