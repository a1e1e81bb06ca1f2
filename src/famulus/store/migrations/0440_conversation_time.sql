-- Time of conversation chunks (issue 12). event_start / event_end: the days
-- (YYYY-MM-DD, both included) of the event a chunk's text names, read
-- relative to when the message was said ("next Friday" said on Thursday
-- 23 April 2026 → 2026-04-24 .. 2026-04-24; "in May" → the whole month);
-- NULL when it names none. The indexer reads them in the background after
-- chunking, following the chunks by id from dated_chunk_id (the last chunk
-- read), so chunks written before this migration are read the same way.
ALTER TABLE conversation_chunks ADD COLUMN event_start TEXT;
ALTER TABLE conversation_chunks ADD COLUMN event_end TEXT;
CREATE INDEX conversation_chunks_event ON conversation_chunks (event_start)
    WHERE event_start IS NOT NULL;
ALTER TABLE conversation_index_state ADD COLUMN dated_chunk_id INTEGER NOT NULL DEFAULT 0;
