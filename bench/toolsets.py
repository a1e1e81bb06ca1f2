"""CPU per chat turn spent getting the agent's toolsets (what ``agent/factory.py``
asks for on every run), in a fresh app with the default areas.

    .venv/bin/python bench/toolsets.py [--runs 200]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from famulus.agent.factory import _research
from famulus.agent.research import read_only
from famulus.agent.tools import directives_toolset, time_toolset
from famulus.app import create_app
from famulus.settings import Settings


async def main(runs: int) -> None:
    home = Path(tempfile.mkdtemp()) / "home"
    app = create_app(Settings(home=home, api_key="bench-key"))  # type: ignore[arg-type]
    async with app.router.lifespan_context(app):
        c = app.state.container
        chat = c.chat
        t0 = time.process_time()
        for _ in range(runs):
            areas = await c.core.hooks.agent_toolsets()
            time_toolset()
            directives_toolset(c.directives)
            _research(chat.turns.resolve_research, tuple(read_only(areas)))
        per_turn = (time.process_time() - t0) / runs * 1000
    print(f"toolsets per chat turn: {per_turn:.3f} ms CPU ({runs} turns)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    asyncio.run(main(parser.parse_args().runs))
