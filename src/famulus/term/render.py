"""How the terminal client draws a run: streamed text in a live region that is
replaced by the finished Markdown, tool calls and results as dim one-liners.

On a terminal that cannot redraw (a pipe, ``TERM=dumb``) the deltas are
written as they come and not drawn again, so nothing is printed twice.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.text import Text

_ARGS_WIDTH = 80
_RESULT_WIDTH = 100


def one_line(value: object, width: int) -> str:
    """``value`` on one line of at most ``width`` characters (JSON for data)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def short_args(args: Any) -> str:
    """A tool call's arguments as shown beside its name; nothing for none."""
    if not args:
        return ""
    if isinstance(args, dict):
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return one_line(args, _ARGS_WIDTH)


class _Tail:
    """The live region's content: the end of the text streamed so far, as
    Markdown, cut to fit the screen (a live region taller than the screen
    cannot be redrawn in place), or the run's status before any text."""

    def __init__(self) -> None:
        self.text = ""
        self.status = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.text:
            if self.status:
                yield Text(self.status, style="dim italic")
            return
        lines = console.render_lines(Markdown(self.text), options, pad=False)
        for line in lines[-max(1, console.size.height - 2) :]:
            yield from line
            yield Segment.line()


class Renderer:
    """Draws the events of the followed run on one rich console."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.redraws = console.is_terminal and not console.is_dumb_terminal
        self._tail = _Tail()
        self._live: Live | None = None
        self._shown = ""  # text of the current block already printed for good
        self._raw_open = False  # without redraws: deltas written, line not yet ended

    # -- plain lines ---------------------------------------------------------
    def note(self, text: str, style: str = "dim") -> None:
        self.pause()
        self.console.print(Text(text, style=style))

    def error(self, text: str) -> None:
        self.note(text, "bold red")

    def markdown(self, text: str) -> None:
        self.pause()
        self.console.print(Markdown(text))

    def user(self, text: str) -> None:
        self.pause()
        self.console.print(Text("you: ", style="bold cyan") + Text(text))

    # -- a run ---------------------------------------------------------------
    def thinking(self, status: str) -> None:
        if self.redraws and not self._tail.text:
            self._tail.status = status
            self._start_live()

    def delta(self, content: str) -> None:
        self._tail.text += content
        if self.redraws:
            self._start_live()
        else:
            self.console.file.write(content)
            self.console.file.flush()
            self._raw_open = True

    def text(self, content: str, depth: int) -> None:
        """A complete text block: the Markdown replaces what was streamed."""
        if depth:
            self.note(f"{'  ' * depth}· {one_line(content, _RESULT_WIDTH)}")
            return
        streamed, shown = self._tail.text, self._shown
        self._stop_live()
        self._tail.text, self._tail.status, self._shown = "", "", ""
        if not self.redraws and streamed:
            # Deltas can be missing (a reconnect): write what they left out.
            missing = content[len(streamed) :] if content.startswith(streamed) else "\n" + content
            self.console.file.write(missing)
            self._raw_open = True
            self._end_raw_line()
            return
        rest = content[len(shown) :] if shown and content.startswith(shown) else content
        if rest.strip():
            self.console.print(Markdown(rest))

    def tool_call(self, name: str, args: Any, depth: int) -> None:
        self.pause()
        self.console.print(Text(f"{'  ' * depth}⚙ {name} {short_args(args)}".rstrip(), "dim"))

    def tool_result(self, name: str, result: str, error: bool, depth: int) -> None:
        self.pause()
        style = "red" if error else "dim"
        shown = one_line(result, _RESULT_WIDTH) if result else "(no output)"
        self.console.print(Text(f"{'  ' * depth}  ↳ {shown}", style))

    def usage(self, usage: dict[str, Any]) -> None:
        if not usage:
            return
        line = f"{usage.get('prompt_tokens', 0)} in · {usage.get('completion_tokens', 0)} out"
        cost = usage.get("cost") or 0
        self.note(f"({line} tokens{f' · ${cost:.4f}' if cost else ''})")

    def pause(self) -> None:
        """Put what was streamed so far on the screen for good (before a tool
        line or a question), so the live region never hides it."""
        if self._live is None:
            self._end_raw_line()
            return
        self._stop_live()
        pending = self._tail.text[len(self._shown) :]
        if pending.strip():
            self.console.print(Markdown(pending))
        self._shown = self._tail.text
        self._tail.status = ""

    def end_run(self) -> None:
        """After the run's last event: nothing stays live."""
        self.pause()
        self._tail.text, self._tail.status, self._shown = "", "", ""

    def _end_raw_line(self) -> None:
        if self._raw_open:
            self.console.file.write("\n")
            self.console.file.flush()
            self._raw_open = False

    def _start_live(self) -> None:
        if self._live is None:
            self._live = Live(
                _Shifted(self._tail, self),
                console=self.console,
                transient=True,
                refresh_per_second=10,
            )
            self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


class _Shifted:
    """The live region shows only the text not yet printed for good."""

    def __init__(self, tail: _Tail, renderer: Renderer) -> None:
        self.tail, self.renderer = tail, renderer

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        view = _Tail()
        view.status = self.tail.status
        view.text = self.tail.text[len(self.renderer._shown) :]
        yield view
