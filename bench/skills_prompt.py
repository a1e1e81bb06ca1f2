"""What the skills block costs in the system prompt, by number of installed skills.

Installs 0, 10, 50 and 200 skills with realistic names and descriptions (the
Agent Skills style: what it does, then "Use when ...") in a temporary
``FAMULUS_HOME/skills`` and prints, for each, the block's size in characters
and estimated tokens (``agent/tokens.py``), how many skills it describes,
names only or only counts, and the time to read the skills from disk (done
once per run, off the event loop): the first read parses every SKILL.md, later
ones only those that changed. The three builtin skills are always there.

    .venv/bin/python bench/skills_prompt.py [--reads 20]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

from famulus.agent.prompt import SKILLS_BLOCK_CHARS, skills_block
from famulus.agent.tokens import text_tokens
from famulus.settings import Settings
from famulus.skills.registry import SkillRegistry

COUNTS = (0, 10, 50, 200)
NAMES_ONLY = "- also installed (names only): "
SUBJECTS = {
    "pdf": ("PDF files", "PDFs, forms or scanned documents"),
    "invoice": ("invoices", "bills, invoices or payment reminders"),
    "travel": ("trip plans", "flights, hotels or itineraries"),
    "recipe": ("recipes", "cooking, meal plans or shopping lists"),
    "tax": ("tax records", "tax returns, receipts or deductions"),
    "garden": ("garden notes", "plants, watering or sowing dates"),
    "fitness": ("training logs", "workouts, runs or heart-rate data"),
    "budget": ("household budgets", "spending, savings or bank exports"),
    "photo": ("photo albums", "pictures, EXIF data or albums"),
    "contract": ("contracts", "leases, terms or notice periods"),
    "school": ("school letters", "homework, teachers or parent evenings"),
    "car": ("car records", "servicing, tyres or inspections"),
    "health": ("medical letters", "appointments, prescriptions or lab results"),
    "repo": ("code repositories", "pull requests, issues or release notes"),
    "slides": ("slide decks", "presentations, talks or speaker notes"),
    "sheet": ("spreadsheets", "CSV files, tables or pivot summaries"),
    "mail": ("mail threads", "newsletters, replies or follow-ups"),
    "home": ("home devices", "thermostats, lights or energy use"),
    "book": ("reading lists", "books, highlights or library loans"),
    "music": ("music practice", "scales, pieces or practice time"),
}
ACTIONS = {
    "summarize": "Summarizes {what} into a short brief with dates and amounts.",
    "organize": "Sorts {what} into folders by date and topic and names files consistently.",
    "check": "Checks {what} for missing items, errors and deadlines, and lists what to fix.",
    "draft": "Drafts replies and documents about {what} in the person's own tone.",
    "track": "Keeps a running log of {what} and reports changes since last time.",
    "extract": "Extracts text, tables and key fields from {what} into structured notes.",
    "remind": "Sets up reminders for {what} and says what is due this week.",
    "compare": "Compares {what} side by side and recommends one with reasons.",
    "convert": "Converts {what} between formats without losing structure.",
    "archive": "Archives old {what} and keeps an index that can be searched.",
}


def catalogue(count: int) -> list[tuple[str, str]]:
    """``count`` distinct (name, description) pairs, varied in length like real skills."""
    pairs = itertools.product(ACTIONS.items(), SUBJECTS.items())
    out = []
    for (verb, sentence), (subject, (what, mentions)) in itertools.islice(pairs, count):
        out.append(
            (
                f"{subject}-{verb}",
                sentence.format(what=what) + f" Use when the person mentions {mentions}.",
            )
        )
    return out


def install(root: Path, skills: list[tuple[str, str]]) -> None:
    for name, description in skills:
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\n---\n"
            "Step 1: ask what is missing.\nStep 2: do the work.\nStep 3: report.\n"
        )


def shown(block: str) -> tuple[int, int]:
    """(skills listed with a description, skills listed by name only) in ``block``."""
    if not block:
        return 0, 0
    lines = block.split("\n<skills>\n", 1)[1].split("\n")[:-1]
    named = [line for line in lines if line.startswith(NAMES_ONLY)]
    more = [line for line in lines if line.endswith("call list_skills to see them all")]
    described = len(lines) - len(named) - len(more)
    return described, (len(named[0].removeprefix(NAMES_ONLY).split(", ")) if named else 0)


def measure(count: int, reads: int) -> str:
    base = Path(tempfile.mkdtemp())
    settings = Settings(
        home=base / "home",
        project_dir=base / "project",
        api_key="bench-key",  # type: ignore[arg-type]
    )
    install(settings.skills_dir, catalogue(count))
    registry = SkillRegistry(settings)
    times = []
    for _ in range(reads):
        t0 = time.perf_counter()
        listed = registry.catalog()
        times.append((time.perf_counter() - t0) * 1000)
    block = skills_block(listed)
    described, named = shown(block)
    return (
        f"| {count} | {len(listed)} | {len(block)} | {text_tokens(block)} | {described} | {named}"
        f" | {len(listed) - described - named} | {times[0]:.1f} ms | {statistics.median(times[1:]):.1f} ms |"
    )


def main(reads: int) -> None:
    print(f"cap: SKILLS_BLOCK_CHARS = {SKILLS_BLOCK_CHARS}")
    print(
        "| installed | listed (with 3 builtin) | block chars | block tokens | described"
        " | names only | counted | read skills: first | again (median) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for count in COUNTS:
        print(measure(count, reads))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=20)  # at least 2
    main(parser.parse_args().reads)
