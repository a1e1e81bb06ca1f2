"""What memory puts into the system prompt, within a character budget.

The profile always goes in first (it is curated and short); recalled facts
and observations follow in fused order until the budget is used up, each
line saying where it came from (``memory.provenance``). The same
function serves the prompt and ``POST /memory/recall/inspect``, so what the
inspector shows is exactly what the agent would get.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from famulus.agent import scope
from famulus.memory import provenance, when
from famulus.memory import recall as fusion
from famulus.memory.service import MemoryService, Recalled
from famulus.store.memory.facts import FactRow
from famulus.store.memory.observations import ObservationRow
from famulus.store.memory.profile import ProfileRow
from famulus.store.memory.recall import AccessEvent

Row = TypeVar("Row", FactRow, ObservationRow)

PROFILE_HEADER = "## What you know about the person (profile)"
RECALL_HEADER = "## Memories that may be relevant (recalled for this message)"
OBS_HEADER = "## Patterns you have noticed"


@dataclass
class Assembled:
    formatted: str
    injected: list[tuple[str, int, float]] = field(default_factory=list)
    omitted: list[tuple[str, int, float]] = field(default_factory=list)
    retrieved: list[tuple[str, int, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Inspected(Generic[Row]):
    """A recalled row, how it scored, and whether it fits the prompt budget."""

    row: Row
    hit: fusion.Hit
    injected: bool


@dataclass(frozen=True)
class Inspection:
    facts: list[Inspected[FactRow]]
    observations: list[Inspected[ObservationRow]]
    formatted: str
    time_range: when.TimeRange | None = None


def assemble(
    profile: list[ProfileRow],
    recalled: Recalled,
    budget: int,
    zone: str = "UTC",
    session_names: dict[str, str] | None = None,
) -> Assembled:
    """The memory text within ``budget`` characters, provenance and dates included
    in each line's cost; ``session_names`` names the sessions facts came from."""
    names = session_names or {}
    out = Assembled("")
    lines: list[str] = []
    if profile:
        lines.append(PROFILE_HEADER)
        lines.extend(f"- [{e.kind}] {e.summary}" for e in profile)
    used = sum(len(x) + 1 for x in lines)
    sections: list[tuple[str, list[tuple[str, int, float, str]]]] = [
        (
            RECALL_HEADER,
            [
                ("fact", f.id, h.score, provenance.fact_line(f, names, when.label(f, zone)))
                for f, h in recalled.facts
            ],
        ),
        (
            OBS_HEADER,
            [
                ("observation", o.id, h.score, provenance.observation_line(o))
                for o, h in recalled.observations
            ],
        ),
    ]
    for header, items in sections:
        taken: list[str] = []
        for owner, item_id, score, line in items:
            out.retrieved.append((owner, item_id, score))
            cost = len(line) + 1 + (0 if taken else len(header) + 1)
            if used + cost <= budget:
                taken.append(line)
                used += cost
                out.injected.append((owner, item_id, score))
            else:
                out.omitted.append((owner, item_id, score))
        if taken:
            lines.extend([header, *taken])
    out.formatted = "\n".join(lines)
    return out


async def build(
    memory: MemoryService, query: str, limit: int = fusion.LIMIT
) -> tuple[Assembled, Recalled]:
    profile = await memory.stores.profile.entries()
    recalled = await memory.recall(query, limit=limit) if query.strip() else Recalled([], [])
    sessions = {s for f, _ in recalled.facts if (s := provenance.fact_session(f))}
    names = await memory.stores.conversations.session_names(sorted(sessions))
    return assemble(profile, recalled, memory.budget_chars, memory.zone, names), recalled


async def prompt_context(memory: MemoryService, session_id: str, query: str) -> str:
    if not await memory.enabled() or memory.space is None:
        return ""
    assembled, _ = await build(memory, query)
    if scope.read_only():  # reading is allowed; recording the access is a write
        return assembled.formatted
    events = [
        AccessEvent(owner, item_id, action, score)
        for action, items in (
            ("retrieved", assembled.retrieved),
            ("injected", assembled.injected),
            ("omitted", assembled.omitted),
        )
        for owner, item_id, score in items
    ]
    await memory.stores.recall.record(session_id, query, events)
    return assembled.formatted


async def inspect(memory: MemoryService, query: str, limit: int) -> Inspection:
    """What recall would give the agent; inspecting is not a use, so nothing is recorded."""
    assembled, recalled = await build(memory, query, limit)
    injected = {(o, i) for o, i, _ in assembled.injected}
    return Inspection(
        facts=[Inspected(f, h, ("fact", f.id) in injected) for f, h in recalled.facts],
        observations=[
            Inspected(o, h, ("observation", o.id) in injected) for o, h in recalled.observations
        ],
        formatted=assembled.formatted,
        time_range=recalled.time_range,
    )
