"""The OpenAI-compatible endpoint's service side: which session a request
talks to, what its new message is, and the run's answer as pieces of text.

The HTTP shapes (chat completions, chunks, the error body) live in
``api/openai_compat.py``; the rules are written down in docs/api.md,
"OpenAI-compatible API".
"""
