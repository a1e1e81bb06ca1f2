"""Where the terminal client's lines come from: a prompt_toolkit line editor on
a terminal (history, ``/`` completion of commands and skills), or plain lines
from a pipe, so ``echo hello | famulus chat`` works too.

Both raise ``KeyboardInterrupt`` for Ctrl-C and ``EOFError`` for the end of
input, like ``input()``.
"""

from __future__ import annotations

import asyncio
import sys
import termios
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Protocol

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document


class LineInput(Protocol):
    """What the chat loop needs from its input."""

    def set_prompt(self, session_name: str) -> None: ...

    def set_skills(self, skills: dict[str, str]) -> None: ...

    def skills(self) -> dict[str, str]: ...

    async def line(self) -> str: ...

    async def confirm(self, question: str) -> bool: ...

    def hold(self) -> AbstractContextManager[None]: ...

    def interrupt(self) -> bool: ...


class SlashCompleter(Completer):
    """Completes ``/`` plus the start of a built-in command or a skill name,
    while the first word is typed; the skill's description is shown beside it."""

    def __init__(self, commands: dict[str, str]) -> None:
        self.commands = dict(commands)
        self.skills: dict[str, str] = {}

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        typed = document.text_before_cursor
        if not typed.startswith("/") or " " in typed:
            return
        start = typed[1:]
        # Built-in commands win over a skill of the same name, as in the loop.
        names = {**self.skills, **self.commands}
        for name in sorted(names):
            if name.startswith(start):
                meta = names[name]
                yield Completion(
                    "/" + name,
                    start_position=-len(typed),
                    display_meta=meta[:60],
                )


def _is_yes(answer: str) -> bool:
    return answer.strip().lower() in ("y", "yes")


class TerminalInput:
    """A line editor on the terminal."""

    def __init__(self, commands: dict[str, str]) -> None:
        self.completer = SlashCompleter(commands)
        self._prompt = "› "
        self._session: PromptSession[str] = PromptSession(
            completer=self.completer, complete_while_typing=True, reserve_space_for_menu=6
        )

    def set_prompt(self, session_name: str) -> None:
        self._prompt = f"{session_name[:30]} › "

    def set_skills(self, skills: dict[str, str]) -> None:
        self.completer.skills = dict(skills)

    def skills(self) -> dict[str, str]:
        return dict(self.completer.skills)

    async def line(self) -> str:
        return await self._session.prompt_async(self._prompt)

    async def confirm(self, question: str) -> bool:
        _discard_typeahead()  # keys pressed before the question are no answer
        answer: str = await PromptSession[str]().prompt_async(question)
        return _is_yes(answer)

    def interrupt(self) -> bool:
        """Ctrl-C that arrived as a signal just as the prompt was opening (the
        terminal not yet in raw mode): end the prompt as its own Ctrl-C would.
        False when no prompt is open."""
        app = self._session.app
        if app.future is None or app.future.done():
            return False
        app.exit(exception=KeyboardInterrupt, style="class:aborting")
        return True

    @contextmanager
    def hold(self) -> Iterator[None]:
        """While a run is drawn: keys are not echoed into the output (Ctrl-C
        still works), and what was typed meanwhile is dropped at the end, so
        nothing is sent that the person did not see."""
        fd = sys.stdin.fileno()
        try:
            saved = termios.tcgetattr(fd)
        except termios.error:
            yield
            return
        quiet = list(saved)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        try:
            yield
        finally:
            _discard_typeahead()
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def _discard_typeahead() -> None:
    try:
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (termios.error, ValueError, OSError):
        pass


class PipedInput:
    """Lines from standard input when it is not a terminal; no prompt shown.
    A question reads the next line as its answer."""

    def __init__(self) -> None:
        self._skills: dict[str, str] = {}

    def set_prompt(self, session_name: str) -> None:
        """No prompt on a pipe."""

    def set_skills(self, skills: dict[str, str]) -> None:
        self._skills = dict(skills)

    def skills(self) -> dict[str, str]:
        return dict(self._skills)

    async def line(self) -> str:
        text = await asyncio.to_thread(sys.stdin.readline)
        if not text:
            raise EOFError
        return text.rstrip("\n")

    async def confirm(self, question: str) -> bool:
        print(question, end="", flush=True)
        try:
            answer = await self.line()
        except EOFError:
            answer = ""
        print(answer)
        return _is_yes(answer)

    def hold(self) -> AbstractContextManager[None]:
        """Lines piped in while a run goes on wait for their turn."""
        return nullcontext()

    def interrupt(self) -> bool:
        return False


def make_input(commands: dict[str, str]) -> LineInput:
    """The line editor when both ends are a terminal, else plain lines.
    ``commands`` maps the built-in commands to what they do."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return TerminalInput(commands)
    return PipedInput()
