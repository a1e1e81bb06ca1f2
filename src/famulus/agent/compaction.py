"""Compaction: fold older turns into a summary written by the chat model.

The plan keeps the last ``KEEP_USER_TURNS`` user turns verbatim and folds
everything before them (plus any earlier summary) into one new summary. The
caller stores it as a ``summary`` row; raw rows are never deleted. If the
model fails, nothing is written, so the conversation stays as it was, and
the caller is told why (``why_failed``: the provider's reason, never a key).
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.usage import UsageLimits

from famulus.agent.failures import describe
from famulus.agent.history import Conversation
from famulus.agent.retry import RetryingModel
from famulus.agent.tokens import text_tokens
from famulus.llm.types import ResolvedModel
from famulus.store.sessions import MessageRow
from famulus.usage.model import metered
from famulus.usage.tag import tagged

KEEP_USER_TURNS = 2
AUTO_THRESHOLD = 0.8
TOOL_RESULT_CHARS = 2_000
SUMMARY_LIMITS = UsageLimits(request_limit=2, total_tokens_limit=400_000)
SUMMARY_INSTRUCTIONS = (
    "You compress a conversation between a person and their assistant into a summary that "
    "lets the assistant continue seamlessly. Keep facts, decisions, open questions, names, "
    "numbers and what the person asked for; drop small talk. Write plain prose, at most "
    "about 400 words. Reply with the summary only."
)


def rows_to_fold(conversation: Conversation) -> list[MessageRow]:
    """The rows before the last KEEP_USER_TURNS user messages (empty: nothing to do)."""
    user_positions = [i for i, r in enumerate(conversation.rows) if r.role == "user"]
    if len(user_positions) <= KEEP_USER_TURNS:
        return []
    cut = user_positions[-KEEP_USER_TURNS]
    return conversation.rows[:cut]


class EmptySummary(ValueError):
    """The model answered, but with no summary."""


def why_failed(exc: BaseException, resolved: ResolvedModel) -> str:
    """A sentence on why the summary failed, for the 502 (no keys, no headers).

    Provider errors are told in the provider's own short words (``describe``);
    anything else only by its type, since its text could carry a URL or a key.
    """
    if isinstance(exc, EmptySummary):
        return "the model returned an empty summary."
    if isinstance(exc, ModelAPIError | UnexpectedModelBehavior | UsageLimitExceeded):
        return describe(exc, resolved).message
    return f"an unexpected {type(exc).__name__} (see the server log)."


def fold_tokens(rows: list[MessageRow]) -> int:
    """Roughly what folding ``rows`` could free: the tokens of their transcript."""
    return text_tokens(transcript(rows))


def transcript(rows: list[MessageRow]) -> str:
    lines: list[str] = []
    for row in rows:
        if row.role == "user":
            lines.append(f"Person: {row.content}")
        elif row.role == "assistant":
            calls = ", ".join(c["name"] for c in row.tool_calls or [])
            text = row.content + (f" [called tools: {calls}]" if calls else "")
            lines.append(f"Assistant: {text}")
        elif row.role == "tool":
            lines.append(f"Tool {row.tool_name} returned: {row.content[:TOOL_RESULT_CHARS]}")
    return "\n".join(lines)


async def summarize(resolved: ResolvedModel, previous: str | None, rows: list[MessageRow]) -> str:
    agent: Agent[None, str] = Agent(
        metered(resolved, RetryingModel(resolved.model)), instructions=SUMMARY_INSTRUCTIONS
    )
    body = transcript(rows)
    if previous:
        body = f"Summary so far:\n{previous}\n\nLater conversation:\n{body}"
    with tagged(source="compaction"):
        result = await agent.run(body, usage_limits=SUMMARY_LIMITS)
    summary = result.output.strip()
    if not summary:
        raise EmptySummary("the model returned an empty summary")
    return summary
