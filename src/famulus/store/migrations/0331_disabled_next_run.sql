-- A disabled automation has no next run: next_run_at is null while disabled
-- and is recomputed when it is enabled again.
UPDATE automations SET next_run_at = NULL WHERE enabled = 0;
