"""Continual learning: feedback events, proposals, and reversible changes.

Status machine (anything else is a 409)::

    proposed ─► approved ─► applied ─► reverted
        └─────► rejected

Approving applies at once (the answer shows ``applied``); if applying fails
the candidate stays ``approved`` and ``applied`` can be requested again.
Applying records exactly what it changed in ``applied_state``; reverting
undoes that and nothing else: an appended directive line is removed (if the
person has since removed it by hand, revert is a 409), a created profile entry
is deleted, an updated one gets its previous summary back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from famulus.directives import MAX_DIRECTIVES_CHARS, DirectivesService
from famulus.errors import Conflict, InvalidRequest, NotFound
from famulus.memory import prompts
from famulus.memory.service import MemoryService
from famulus.store.memory.learning import CandidateRow, LearningEventRow
from famulus.timeutil import now_iso

EVENT_KINDS = ("correction", "approval_denied", "tool_failed", "automation_outcome")
STATUSES = ("proposed", "approved", "applied", "rejected", "reverted")
CHANGE_TYPES = ("directive", "profile")
ALLOWED = {
    "proposed": {"approved", "rejected"},
    "approved": {"applied"},
    "applied": {"reverted"},
}


@dataclass(frozen=True)
class Proposed:
    """A proposal round: the candidates it created and how many it dropped."""

    created: list[CandidateRow]
    skipped: int


class Learning:
    def __init__(self, memory: MemoryService, directives: DirectivesService) -> None:
        self.memory = memory
        self.directives = directives

    async def record(
        self,
        kind: str,
        summary: str,
        *,
        session_id: str | None,
        run_id: str | None,
        data: dict[str, Any],
    ) -> LearningEventRow:
        if kind not in EVENT_KINDS:
            raise InvalidRequest(f"Unknown learning event kind {kind!r}; use one of {EVENT_KINDS}.")
        return await self.memory.stores.learning.insert_event(
            kind, summary, session_id, run_id, data
        )

    async def events(
        self, limit: int, offset: int, kind: str | None = None
    ) -> tuple[list[LearningEventRow], int]:
        return await self.memory.stores.learning.events(limit, offset, kind)

    async def candidates(
        self, status: str | None, limit: int, offset: int
    ) -> tuple[list[CandidateRow], int]:
        return await self.memory.stores.learning.candidates(status, limit, offset)

    async def propose(self) -> Proposed:
        events = await self.memory.stores.learning.events_without_candidate()
        if not events:
            return Proposed([], 0)
        listing = "\n".join(f"#{e.id} [{e.kind}] {e.summary}" for e in events)
        result: prompts.Proposals = await prompts.run_job(
            self.memory.llm_getter(),
            prompts.PROPOSE,
            prompts.Proposals,
            f"Current directives:\n{await self.directives.get() or '(none)'}\n\nEvents:\n{listing}",
        )
        known = {e.id for e in events}
        open_ = (await self.memory.stores.learning.candidates("proposed", 200, 0))[0]
        seen = {(c.change_type, c.proposal.strip().lower()) for c in open_}
        created: list[CandidateRow] = []
        skipped = 0
        for c in result.candidates:
            evidence = [i for i in c.evidence_event_ids if i in known]
            key = (c.change_type, c.proposal.strip().lower())
            if (
                c.change_type not in CHANGE_TYPES
                or not evidence
                or not c.proposal.strip()
                or key in seen
            ):
                skipped += 1
                continue
            seen.add(key)
            row = await self.memory.stores.learning.insert_candidate(
                c.change_type,
                c.target_key.strip() or _default_key(c.change_type),
                c.proposal.strip(),
                c.rationale.strip(),
                evidence,
            )
            created.append(row)
        return Proposed(created, skipped)

    async def get(self, cand_id: int) -> CandidateRow:
        row = await self.memory.stores.learning.get_candidate(cand_id)
        if row is None:
            raise NotFound(f"No learning candidate with id {cand_id}.")
        return row

    async def transition(self, cand_id: int, status: str) -> CandidateRow:
        if status not in STATUSES:
            raise InvalidRequest(f"Unknown status {status!r}; use one of {STATUSES}.")
        row = await self.get(cand_id)
        current = row.status
        if status not in ALLOWED.get(current, set()):
            raise Conflict(f"A candidate that is {current} cannot become {status}.")
        if status == "rejected":
            return await self._set(row, "rejected")
        if status == "reverted":
            await self._revert(row)
            return await self._set(row, "reverted", reverted_at=now_iso())
        if status == "approved":
            row = await self._set(row, "approved")
        state = await self._apply(row)
        return await self._set(row, "applied", applied_at=now_iso(), applied_state=state)

    async def _set(self, row: CandidateRow, status: str, **fields: Any) -> CandidateRow:
        updated = await self.memory.stores.learning.set_candidate_status(
            row.id, row.status, status, **fields
        )
        if updated is None:
            raise Conflict("The candidate changed meanwhile; reload it and try again.")
        return updated

    async def _apply(self, row: CandidateRow) -> dict[str, Any]:
        if row.change_type == "directive":
            before = await self.directives.get()
            block = row.proposal.strip()
            after = f"{before.rstrip()}\n{block}" if before.strip() else block
            if len(after) > MAX_DIRECTIVES_CHARS:
                raise Conflict("The directives would exceed 20,000 characters; shorten them first.")
            await self.directives.put(after)
            return {"kind": "directive", "appended": block, "previous": before}
        target = row.target_key
        if target.startswith("profile:"):
            entry_id = _entry_id(target)
            entry = await self.memory.stores.profile.get(entry_id)
            if entry is None:
                raise Conflict(f"Profile entry {entry_id} no longer exists.")
            await self.memory.stores.profile.update(entry_id, summary=row.proposal)
            return {
                "kind": "profile_update",
                "entry_id": entry_id,
                "previous_summary": entry.summary,
                "previous_archived_at": entry.archived_at,
            }
        created = await self.memory.stores.profile.insert(target, row.proposal, [], [], 0.7)
        return {"kind": "profile_create", "entry_id": created.id}

    async def _revert(self, row: CandidateRow) -> None:
        state = row.applied_state or {}
        kind = state.get("kind")
        if kind == "directive":
            await self._revert_directive(state)
        elif kind == "profile_create":
            await self.memory.stores.profile.delete(int(state["entry_id"]))
        elif kind == "profile_update":
            await self.memory.stores.profile.update(
                int(state["entry_id"]),
                summary=state["previous_summary"],
                archived_at=state.get("previous_archived_at"),
            )

    async def _revert_directive(self, state: dict[str, Any]) -> None:
        current = await self.directives.get()
        block = str(state["appended"])
        previous = str(state["previous"])
        if current == (f"{previous.rstrip()}\n{block}" if previous.strip() else block):
            await self.directives.put(previous)
            return
        lines = current.split("\n")
        if block not in lines:
            raise Conflict(
                "The applied directive is no longer in the directives; edit them by hand."
            )
        lines.remove(block)
        await self.directives.put("\n".join(lines))


def _default_key(change_type: str) -> str:
    return "directives" if change_type == "directive" else "preference"


def _entry_id(target: str) -> int:
    try:
        return int(target.split(":", 1)[1])
    except ValueError as exc:
        raise Conflict(f"Bad profile target {target!r}.") from exc
