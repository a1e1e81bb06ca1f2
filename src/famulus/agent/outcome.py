"""A tool's answer that says it did not do what was asked.

Tools in famulus do not raise when they fail for a reason the model can act on
(a refused address, a search backend down, "Not sent: …"): the sentence is the
tool's result, so the model can explain it and the run goes on. A client still
needs to know the call failed, so such a result is a ``ToolFailure`` — a str,
so the model sees exactly the same text — and the driver reports
``tool_result.error: true`` for it.
"""

from __future__ import annotations


class ToolFailure(str):
    """A tool result that reports a failure (see the module docstring)."""


def failure(text: str) -> ToolFailure:
    return ToolFailure(text)
