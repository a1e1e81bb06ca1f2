"""Agent tools behind the skills: install a skill, add a custom model, list
skills, load a skill's instructions and run a skill's script (the methods of
``SkillTools``). The system prompt lists every skill by name and description
(``agent/prompt.py``); ``load_skill`` is how the agent reads the one it picks.

Every tool that changes something asks first (``requires_approval``); an
automation that is not writable has those requests denied. A refusal from the
services (bad input, a name that exists, an unreachable host) comes back to
the model as a plain sentence so it can explain it, never as an error that
ends the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError
from pydantic_ai.toolsets import FunctionToolset

from famulus.agent import scope
from famulus.agent.outcome import failure
from famulus.agent.scope import used
from famulus.agent.sink import AgentDeps
from famulus.errors import FamulusError
from famulus.llm.custom import CustomModelSpec
from famulus.llm.providers import ProviderAdmin
from famulus.skills.approvals import ScriptApprovals
from famulus.skills.installer import SkillInstaller
from famulus.skills.registry import SkillRegistry
from famulus.skills.sandbox import Jail, Sandbox, python_interpreter
from famulus.skills.skill import Skill
from famulus.store.kv import KVStore

SCRIPT_TIMEOUT_S = 60.0
OUTPUT_LIMIT = 16 * 1024
MAX_ARGS = 50
MAX_ARG_CHARS = 4096
# An unknown name in load_skill is answered with the names there are, this many at most.
NAMES_IN_REFUSAL = 50
# Interpreters for scripts that are not executable by themselves.
_INTERPRETERS: dict[str, Sequence[str]] = {
    ".py": (python_interpreter(),),
    ".sh": ("sh",),
    ".bash": ("bash",),
    ".js": ("node",),
    ".mjs": ("node",),
    ".rb": ("ruby",),
    ".pl": ("perl",),
}


def _validation_sentence(exc: ValidationError) -> str:
    first = exc.errors(include_input=False, include_url=False)[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "input"
    return f"{where}: {first.get('msg', 'invalid value')}"


def _describe(skill: Skill) -> str:
    line = f"- /{skill.name} ({skill.location}): {skill.description}"
    return line + (f" Scripts: {', '.join(skill.scripts)}." if skill.scripts else "")


def choose_script(skill: Skill, script: str | None) -> Path | str:
    """The script file to run, or a sentence saying why there is none."""
    if not skill.scripts:
        return f"The skill '{skill.name}' has no script to run."
    if script is None:
        if len(skill.scripts) > 1:
            return (
                f"The skill '{skill.name}' has several scripts ({', '.join(skill.scripts)});"
                " name one with the script argument."
            )
        script = skill.scripts[0]
    if script not in skill.scripts:
        return (
            f"'{script}' is not a script of '{skill.name}'; its scripts are:"
            f" {', '.join(skill.scripts)}."
        )
    root = skill.path.resolve()
    path = (skill.path / script).resolve()
    if not path.is_relative_to(root) or path == root or not path.is_file():
        return f"'{script}' points outside the skill's folder; it will not be run."
    return path


def command_for(path: Path) -> list[str] | str:
    """argv to start ``path`` without a shell, or a sentence saying why it cannot run."""
    executable = os.access(path, os.X_OK)
    with path.open("rb") as f:
        shebang = f.read(2) == b"#!"
    if executable and shebang:
        return [str(path)]
    interpreter = _INTERPRETERS.get(path.suffix)
    if interpreter is not None:
        program = interpreter[0] if os.path.isabs(interpreter[0]) else shutil.which(interpreter[0])
        if program is None:
            return f"'{path.name}' needs '{interpreter[0]}', which is not installed here."
        return [program, *interpreter[1:], str(path)]
    if executable:
        return [str(path)]
    return f"'{path.name}' is neither executable nor of a known script type."


async def _collect(stream: asyncio.StreamReader, into: bytearray, seen: list[int]) -> None:
    """Read to the end, keeping the first OUTPUT_LIMIT bytes (the pipe never fills)."""
    while chunk := await stream.read(65536):
        seen[0] += len(chunk)
        room = OUTPUT_LIMIT - len(into)
        if room > 0:
            into.extend(chunk[:room])


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_script(jail: Jail, cwd: Path, timeout: float) -> tuple[int | None, bytes, int]:
    """(exit code, or None when stopped at the timeout; first output bytes; total bytes).

    stdout and stderr are one stream; stdin is closed; the environment holds
    only a few harmless variables, never the server's keys (see sandbox.py).
    """
    proc = await asyncio.create_subprocess_exec(
        *jail.argv,
        cwd=cwd,
        env=jail.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # its own process group, so a kill reaches its children
    )
    assert proc.stdout is not None
    output, seen = bytearray(), [0]
    reader = asyncio.create_task(_collect(proc.stdout, output, seen))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout)
        except TimeoutError:
            timed_out = True
            _kill_group(proc)
        # Children left behind may still hold the pipe open: give them a moment.
        try:
            await asyncio.wait_for(asyncio.shield(reader), 2.0)
        except TimeoutError:
            _kill_group(proc)
    finally:
        if proc.returncode is None:  # cancelled from outside
            _kill_group(proc)
        await proc.wait()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(reader, 1.0)
    return (None if timed_out else proc.returncode), bytes(output), seen[0]


@dataclass(frozen=True)
class SkillServices:
    """What the skill tools call."""

    registry: SkillRegistry
    installer: SkillInstaller
    models: ProviderAdmin
    sandbox: Sandbox
    kv: KVStore  # script approvals


class SkillTools:
    """The builtin skills' agent tools, one method each, over the services they use."""

    def __init__(self, c: SkillServices) -> None:
        self.c = c

    def list_skills(self) -> str:
        """List the skills the person can invoke as /name, with their scripts."""
        skills = self.c.registry.all()
        return "\n".join(_describe(s) for s in skills) if skills else "No skills are installed."

    def load_skill(self, name: str) -> str:
        """Read the instructions of an installed skill, by the name the system prompt
        lists it under (without the slash). Do this when the person's request
        matches the skill's description, then follow the instructions."""
        wanted = name.strip().removeprefix("/")
        text = self.c.registry.loaded(wanted)
        if text is not None:
            return text
        names = sorted(s.name for s in self.c.registry.all())
        listed = ", ".join(names[:NAMES_IN_REFUSAL]) or "none"
        if len(names) > NAMES_IN_REFUSAL:
            listed += f" and {len(names) - NAMES_IN_REFUSAL} more (list_skills shows all)"
        return failure(f"Not loaded: no skill '{wanted}'; available: {listed}.")

    async def install_skill(self, source: str) -> str:
        """Install a skill from the code host into the global skills folder.

        source is shaped '<owner>/<repo>/<path to skill folder>'; the folder must
        hold a SKILL.md. The skill then becomes available as /<name>.
        """
        if not source.strip() or len(source) > 500:
            return failure(
                "Not installed: source must be 1-500 characters, owner/repo/path/to/skill."
            )
        try:
            skill = await self.c.installer.install(source)
        except FamulusError as exc:
            return failure(f"Not installed: {exc.detail}")
        used("skills")
        return f"Installed the skill /{skill.name}: {skill.description}" + (
            f" It has scripts: {', '.join(skill.scripts)}." if skill.scripts else ""
        )

    async def add_custom_model(
        self,
        model_id: str,
        base_url: str,
        context_window: int,
        max_output_tokens: int,
        api_key: str | None = None,
    ) -> str:
        """Register a custom OpenAI-compatible model endpoint (Ollama, vLLM, llama.cpp ...).

        base_url is the endpoint's base address, usually ending in /v1; api_key is
        optional (local servers usually need none).
        """
        try:
            spec = CustomModelSpec(
                model_id=model_id,
                base_url=base_url,
                context_window=context_window,
                max_output_tokens=max_output_tokens,
                api_key=api_key or None,
            )
            await self.c.models.add_custom(spec)
        except ValidationError as exc:
            return failure(f"Not added: {_validation_sentence(exc)}.")
        except FamulusError as exc:
            return failure(f"Not added: {exc.detail}")
        key = " with an API key" if spec.api_key else " without an API key"
        return (
            f"Added the custom model '{spec.model_id}' at {spec.base_url}{key}"
            f" (context window {spec.context_window}, max output {spec.max_output_tokens})."
            f" Remove it with DELETE /models/custom/{spec.model_id}."
        )

    async def run_skill_script(
        self, name: str, args: list[str] | None = None, script: str | None = None
    ) -> str:
        """Run the script of an installed skill (no shell, in the skill's folder, 60 s limit).

        args are passed to the script as separate arguments. script names which
        file to run when the skill has more than one.
        """
        extra = list(args or [])
        problem = _argument_problem(extra)
        if problem is not None:
            return failure(f"Not run: {problem}")
        skill = self.c.registry.get(name)
        if skill is None:
            return failure(f"Not run: no skill named '{name}'.")
        sandbox = self.c.sandbox
        approvals = ScriptApprovals(self.c.kv)
        prepared = await _prepare(skill, script, sandbox, approvals)
        if isinstance(prepared, str):
            return failure(f"Not run: {prepared}")
        chosen, argv = prepared
        timeout = SCRIPT_TIMEOUT_S
        folder = skill.path.resolve()
        jail = sandbox.jail([*argv, *extra], folder, network=skill.network)
        if scope.origin() != "automation":  # the person approved this run (or skipped asking)
            await approvals.record(skill)
        try:
            code, raw, total = await run_script(jail, folder, timeout)
        except OSError as exc:
            return failure(f"Not run: the script could not be started ({exc.strerror or exc}).")
        used("skills")
        return _report(chosen.relative_to(folder).as_posix(), code, raw, total, timeout)


def _argument_problem(args: list[str]) -> str | None:
    """Why these script arguments are refused, or None: the limits keep a model
    from passing a megabyte of text, and a NUL cannot cross exec at all."""
    if len(args) > MAX_ARGS or any(len(a) > MAX_ARG_CHARS for a in args):
        return f"at most {MAX_ARGS} arguments of {MAX_ARG_CHARS} characters each."
    if any("\x00" in a for a in args):
        return "arguments may not contain NUL characters."
    return None


async def _prepare(
    skill: Skill, script: str | None, sandbox: Sandbox, approvals: ScriptApprovals
) -> tuple[Path, list[str]] | str:
    """(script file, argv to start it), or why the script may not or cannot run.

    Checked in this order so the answer names the first thing the person can
    fix: the sandbox, the automation rule (see approvals.py), then the file.
    """
    problem = await sandbox.problem()
    if problem is not None:
        return problem
    if scope.origin() == "automation" and not await approvals.approved(skill):
        return (
            f"the person has not yet run a script of '{skill.name}' in a chat "
            "(or it changed since); automations run only scripts of skills the person "
            "approved once."
        )
    chosen = choose_script(skill, script)
    if isinstance(chosen, str):
        return chosen
    try:
        argv = command_for(chosen)
    except OSError as exc:
        return f"the script could not be read ({exc.strerror or exc})."
    return argv if isinstance(argv, str) else (chosen, argv)


def _report(rel: str, code: int | None, raw: bytes, total: int, timeout: float) -> str:
    """What the model is told about a finished (or stopped) run, output included."""
    if code is None:
        head = f"{rel} was stopped after {timeout:g} s without finishing."
    else:
        head = f"{rel} exited with code {code}."
    output = raw.decode(errors="replace")
    if total > len(raw):
        output += f"\n[output truncated: {total} bytes, the first {len(raw)} shown]"
    return f"{head}\nOutput:\n{output}" if output else f"{head} It printed nothing."


def skill_toolset(tools: SkillTools) -> FunctionToolset[AgentDeps]:
    """The five tools as one toolset; every one that changes something asks first.
    Built once (``wiring.py``): generating the tools' schemas on every run costs
    CPU (see agent/toolcache.py), and the tools keep no per-run state."""
    toolset: FunctionToolset[AgentDeps] = FunctionToolset()
    for read in (tools.list_skills, tools.load_skill):  # read-only: never ask
        toolset.add_function(read, takes_ctx=False)
    for write in (tools.install_skill, tools.add_custom_model, tools.run_skill_script):
        toolset.add_function(write, takes_ctx=False, requires_approval=True)
    return toolset
