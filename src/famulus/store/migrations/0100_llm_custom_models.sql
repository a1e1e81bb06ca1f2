-- llm: custom OpenAI-compatible models. Their optional api_key lives in the
-- secrets file (secrets.json), never here.

CREATE TABLE llm_custom_models (
    model_id          TEXT PRIMARY KEY,
    base_url          TEXT NOT NULL,
    context_window    INTEGER NOT NULL CHECK (context_window > 0),
    max_output_tokens INTEGER NOT NULL CHECK (max_output_tokens > 0),
    vision            INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL
);
