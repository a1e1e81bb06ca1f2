-- When an automation last became active (created enabled, enabled again, or
-- its trigger changed while enabled). Calendar triggers only fire for events
-- that start at or after this moment, so an event already under way when an
-- automation is created or switched on never fires late. Existing enabled
-- automations count from their last change.
ALTER TABLE automations ADD COLUMN enabled_at TEXT;
UPDATE automations SET enabled_at = updated_at WHERE enabled = 1;
