"""A message sent while a run is active, waiting for the next turn boundary."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_ai.messages import UserContent

from famulus.agent.history import user_content


@dataclass(frozen=True)
class QueuedMessage:
    text: str
    images: list[dict[str, str]] | None
    client_id: str | None
    # Its row in pending_messages (store/pending.py) until it reaches history.
    pending_id: int | None = None

    def content(self) -> str | list[UserContent]:
        return user_content(self.text, self.images)
