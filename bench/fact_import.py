"""Facts per second: one POST /facts per fact against one POST /facts/import.

In-process (the real app over httpx's ASGI transport, a real SQLite file, the
local embedding model), so the figures are famulus's own cost.

    .venv/bin/python bench/fact_import.py [--facts 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx

from famulus.app import create_app
from famulus.settings import Settings

KEY = "bench-key"


async def run(n: int) -> None:
    app = create_app(Settings(home=Path(tempfile.mkdtemp()) / "home", api_key=KEY))  # type: ignore[arg-type]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {KEY}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://b", headers=headers
        ) as c:
            t0 = time.perf_counter()
            for i in range(n):
                await c.post("/facts", json={"text": f"Single {i}: the parcel {i} is at door {i}"})
            single = n / (time.perf_counter() - t0)
            facts = [{"text": f"Bulk {i}: the parcel {i} is at door {i}"} for i in range(n)]
            t0 = time.perf_counter()
            r = await c.post("/facts/import", json={"facts": facts}, timeout=600)
            bulk = n / (time.perf_counter() - t0)
            assert r.status_code == 201 and r.json()["imported"] == n, r.text
    print(
        f"{n} facts: one POST /facts each {single:7.1f} facts/s;"
        f" one POST /facts/import {bulk:7.1f} facts/s"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=1000)
    asyncio.run(run(parser.parse_args().facts))
