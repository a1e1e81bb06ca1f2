-- Run history (issue 11): what started each automation run, the session it
-- ran in and the usage its agent run reported. Runs recorded before this
-- migration have none of them (null).
ALTER TABLE automation_runs ADD COLUMN fired_by TEXT;   -- schedule | catch_up | calendar | manual
ALTER TABLE automation_runs ADD COLUMN session_id TEXT; -- kept when the session is gone
ALTER TABLE automation_runs ADD COLUMN usage TEXT;      -- JSON: the run_finished usage
-- What a run does: 'task' gives the description to the agent; 'reminder'
-- sends the description as it is (no agent, no model), e.g. "Reminder: call Anna".
ALTER TABLE automations ADD COLUMN kind TEXT NOT NULL DEFAULT 'task';
