"""``famulus usage``: the GET /usage report as a table in the terminal.

It reads the home's database directly, read-only, rather than asking a
running server: the server keeps only a hash of the API key, so a terminal
command has no key to send, and the database is on this machine anyway (the
same home ``famulus doctor`` and ``famulus backup`` read). It works whether
or not a server is running.
"""

from __future__ import annotations

from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from rich.console import Console
from rich.table import Table

from famulus.agent.clock import zone_name
from famulus.settings import Settings
from famulus.store.usage import sums_from_file
from famulus.usage.report import usage_report_sync


def report_from_home(
    settings: Settings, start: str | None, end: str | None, group_by: str
) -> dict[str, Any]:
    zone = ZoneInfo(zone_name(settings.timezone))
    summer = partial(sums_from_file, settings.db_path)
    return usage_report_sync(summer, zone, start, end, group_by)


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def render(body: dict[str, Any]) -> Table:
    table = Table(title=f"Usage by {body['group_by']}, {body['from'][:10]} – {body['to'][:10]}")
    table.add_column(body["group_by"].capitalize())
    for name in ("Calls", "Input", "Output", "Cache read", "Cost"):
        table.add_column(name, justify="right")
    rows = [*body["groups"], {"key": "Total", "label": None, **body["total"]}]
    for i, row in enumerate(rows):
        name = str(row["key"] if row["key"] is not None else "—")
        if row.get("label"):
            name += f" ({row['label']})"
        table.add_row(
            name,
            str(row["calls"]),
            f"{row['input_tokens']:,}",
            f"{row['output_tokens']:,}",
            f"{row['cache_read_tokens']:,}",
            _cost(row["cost"]),
            end_section=i == len(rows) - 2,
        )
    return table


def print_report(settings: Settings, start: str | None, end: str | None, group_by: str) -> None:
    Console().print(render(report_from_home(settings, start, end, group_by)))
