-- Time of facts (issue 12). said_at: when the fact was said or learned, an
-- ISO timestamp like created_at (the source message's time for extracted
-- facts; an import may give it); existing facts take their creation time.
-- event_start / event_end: the days (YYYY-MM-DD, both included) the event
-- happened, when the text or the extraction says so ("last Tuesday" said on
-- 8 May 2023 → 2023-05-02 .. 2023-05-02; "in June" → the whole month).
ALTER TABLE facts ADD COLUMN said_at TEXT;
ALTER TABLE facts ADD COLUMN event_start TEXT;
ALTER TABLE facts ADD COLUMN event_end TEXT;
UPDATE facts SET said_at = created_at WHERE said_at IS NULL;
