"""The system prompt: who the agent is, the person's directives, now, the session.

Assembled fresh for every run so the date, directives and memory are current.
"""

from __future__ import annotations

from dataclasses import dataclass

from famulus.agent.clock import describe_now

BASE = (
    "You are famulus, a personal assistant running on the person's own server. "
    "Answer directly and concisely. Use tools when they help; a tool that changes "
    "something may need the person's approval, and a denial is final for that call."
)


@dataclass(frozen=True)
class PromptInputs:
    directives: str
    timezone: str
    session_name: str
    sources: list[str]
    summary: str | None = None
    memory: str = ""


def build_system_prompt(inputs: PromptInputs) -> str:
    sections = [BASE, f"Current date and time: {describe_now(inputs.timezone)}."]
    if inputs.directives.strip():
        sections.append("The person's standing directives:\n" + inputs.directives.strip())
    context = f"Session: {inputs.session_name}"
    if inputs.sources:
        context += f" (sources: {', '.join(inputs.sources)})"
    sections.append(context + ".")
    if inputs.memory.strip():
        sections.append("What you know about the person:\n" + inputs.memory.strip())
    if inputs.summary:
        sections.append(
            "Summary of the earlier part of this conversation (older turns were compacted):\n"
            + inputs.summary
        )
    return "\n\n".join(sections)
