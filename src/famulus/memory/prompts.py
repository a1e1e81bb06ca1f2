"""Structured outputs and instructions for the memory model's jobs.

Each job is a pydantic-ai Agent with an ``output_type``, so the model answers
with validated data rather than prose we would have to parse.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import Agent

from famulus.errors import NotConfigured
from famulus.usage.model import metered
from famulus.usage.tag import tagged


class EntityOut(BaseModel):
    name: str
    type: str = "thing"


class FactOut(BaseModel):
    text: str = Field(description="One self-contained statement about the person or their world.")
    kind: str = Field(
        default="fact", description="fact, preference, event, relationship, instruction"
    )
    salience: float = Field(default=0.5, ge=0.0, le=1.0)
    entities: list[EntityOut] = Field(default_factory=list)
    supersedes_fact_ids: list[int] = Field(
        default_factory=list,
        description="Ids of known facts this new fact contradicts or replaces.",
    )
    event_date: str | None = Field(
        default=None,
        description="YYYY-MM-DD the event happened, when the conversation says so "
        "('last Tuesday' counts from the date the conversation took place); else null.",
    )


class Extraction(BaseModel):
    facts: list[FactOut] = Field(default_factory=list)


class ObservationOut(BaseModel):
    summary: str
    fact_ids: list[int]


class ProfileOut(BaseModel):
    kind: str
    summary: str
    source_fact_ids: list[int] = Field(default_factory=list)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    replaces_entry_id: int | None = None


class Maintenance(BaseModel):
    observations: list[ObservationOut] = Field(default_factory=list)
    profile: list[ProfileOut] = Field(default_factory=list)


class DreamOut(BaseModel):
    bridge: str
    insight: str
    fact_ids: list[int]


class Dreams(BaseModel):
    dreams: list[DreamOut] = Field(default_factory=list)


class CandidateOut(BaseModel):
    change_type: str = Field(description="'directive' or 'profile'")
    target_key: str = Field(description="'directives', or a profile kind, or 'profile:<id>'")
    proposal: str
    rationale: str = ""
    evidence_event_ids: list[int]


class Proposals(BaseModel):
    candidates: list[CandidateOut] = Field(default_factory=list)


EXTRACT = (
    "You maintain the long-term memory of a personal assistant. From the conversation, "
    "extract durable facts about the person, their preferences, people, places, plans and "
    "instructions. Skip small talk and anything only true for this moment. Each fact must "
    "stand alone. When a new fact contradicts a known fact, list the known fact's id in "
    "supersedes_fact_ids."
)
MAINTAIN = (
    "You curate a personal assistant's memory. Group related facts into observations "
    "(patterns supported by at least two facts, citing their ids), and propose profile "
    "entries: short, durable statements that should always be in the assistant's prompt, "
    "citing source fact ids. To update an existing profile entry give replaces_entry_id."
)
DREAM = (
    "Find non-obvious, useful connections between these distant memories. Each dream names "
    "the bridge between the facts, an insight, and the fact ids it links."
)
PROPOSE = (
    "You improve how a personal assistant behaves. From the feedback events (corrections, "
    "denied approvals, failed tools, automation outcomes) propose concrete changes: a "
    "'directive' (a standing instruction added to the directives) or a 'profile' entry. "
    "Cite the event ids each proposal is based on. Propose nothing without evidence."
)


async def run_job(llm: Any, instructions: str, output_type: type[BaseModel], prompt: str) -> Any:
    """Run the memory model once with structured output (503 if no model is set)."""
    if llm is None:
        raise NotConfigured("No memory model is configured; connect a provider first.")
    resolved = await llm.resolve("memory")
    agent: Agent[None, Any] = Agent(
        metered(resolved), output_type=output_type, instructions=instructions, retries=2
    )
    # Memory work is nobody's run: only the session it read stays on the tag.
    with tagged(source="memory", run_id=None, automation_id=None):
        result = await agent.run(prompt)
    return result.output
