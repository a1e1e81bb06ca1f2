"""Skills: user-facing commands (``/name``) described by a ``SKILL.md``."""
