-- Which documents the full-text index actually holds, for the audit.
CREATE VIRTUAL TABLE facts_fts_instance USING fts5vocab (facts_fts, instance);
CREATE VIRTUAL TABLE observations_fts_instance USING fts5vocab (observations_fts, instance);
