"""The core every area builds on: settings, storage, events, sessions, hooks.

Areas receive a ``Core`` (and, typed, the other services they use) when
``wiring.py`` builds them; nothing here knows any area, so every area may
import it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from famulus.directives import DirectivesService
from famulus.events import EventHub
from famulus.hooks import Hooks
from famulus.sessions.service import SessionService
from famulus.settings import Settings
from famulus.store.db import Database
from famulus.store.events import EventStore
from famulus.store.kv import KVStore
from famulus.store.sessions import SessionStore


@dataclass(frozen=True)
class Core:
    settings: Settings
    db: Database
    kv: KVStore
    events: EventHub
    sessions: SessionService
    directives: DirectivesService
    hooks: Hooks


def build_core(settings: Settings) -> Core:
    """Open the database (migrating it) and build the services every area shares."""
    settings.ensure_home()
    db = Database(settings.db_path)
    db.open()
    kv = KVStore(db)
    events = EventHub(EventStore(db))
    hooks = Hooks()
    return Core(
        settings=settings,
        db=db,
        kv=kv,
        events=events,
        sessions=SessionService(SessionStore(db), events, hooks),
        directives=DirectivesService(kv),
        hooks=hooks,
    )
