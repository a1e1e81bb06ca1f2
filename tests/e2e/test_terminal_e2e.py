"""``famulus chat`` end to end: the terminal client under a real pseudo-terminal
(pexpect), talking over HTTP to a real ``famulus serve`` whose chat model is a
scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pexpect
import pytest
from tests.support.live import ServerProcess, free_port
from tests.support.scripted_openai import ScriptedOpenAI, Turn
from tests.support.sse_collector import SSECollector

KEY = "e2e-term-key-abcdefghijklmnopqrstuvwxyz0123"
AUTH = {"Authorization": f"Bearer {KEY}"}
MODEL = "scripted-model"
SKILL = "zeta-report"
SKILL_MARK = "Write the zeta report in three bullet points"
# Escape sequences (CSI, OSC, charset and keypad switches) and carriage returns.
_ANSI = re.compile(
    r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r"
)


def plain(raw: str) -> str:
    return _ANSI.sub("", raw)


@pytest.fixture(scope="module")
def openai_server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI([MODEL]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def famulus(
    tmp_path_factory: pytest.TempPathFactory, openai_server: ScriptedOpenAI
) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("term-e2e") / "home"
    skill = home / "skills" / SKILL
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {SKILL}\ndescription: A report on zeta.\n---\n{SKILL_MARK}.\n"
    )
    env = {"FAMULUS_API_KEY": KEY, "FAMULUS_LOG_LEVEL": "warning"}
    server = ServerProcess(home, env=env).start()
    with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=10) as http:
        r = http.post(
            "/models/custom",
            json={
                "model_id": MODEL,
                "base_url": openai_server.base_url,
                "context_window": 8000,
                "max_output_tokens": 500,
            },
        )
        assert r.status_code == 201, r.text
        r = http.patch("/config", json={"chat_model": MODEL, "research_model": MODEL})
        assert r.status_code == 200, r.text
    yield server
    server.stop()


@pytest.fixture
def http(famulus: ServerProcess, openai_server: ScriptedOpenAI) -> Iterator[httpx.Client]:
    openai_server.reset()
    with httpx.Client(base_url=famulus.base_url, headers=AUTH, timeout=10) as client:
        yield client


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAMULUS_")}
    # A known terminal and size; no colours; no cursor-position queries that a
    # pty without a terminal on the other end would never answer.
    env.update(TERM="xterm", NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="100", LINES="40")
    return env


class Term:
    """``famulus chat`` under a pty; waits read the screen's text without escapes."""

    def __init__(self, *args: str) -> None:
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "famulus", "chat", *args],
            env=_env(),
            dimensions=(40, 100),
            encoding="utf-8",
            codec_errors="replace",
        )
        self.raw = ""
        self.seen = 0  # where the next wait starts looking

    def _pump(self, timeout: float) -> None:
        try:
            self.raw += self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            pass

    @property
    def text(self) -> str:
        return plain(self.raw)

    def wait(self, needle: str, timeout: float = 20.0) -> str:
        """Everything shown up to and including ``needle``'s next appearance."""
        deadline = time.monotonic() + timeout
        while True:
            at = self.text.find(needle, self.seen)
            if at >= 0:
                self.seen = at + len(needle)
                return self.text[: self.seen]
            if time.monotonic() > deadline or not self.child.isalive():
                self._pump(0.2)
                raise AssertionError(f"{needle!r} not shown; screen:\n{self.text[-3000:]}")
            self._pump(0.1)

    def prompt(self, name: str = "Terminal") -> None:
        self.wait(f"{name} ›")

    def say(self, line: str) -> None:
        self.child.send(line + "\r")

    def exit_status(self, timeout: float = 10.0) -> int | None:
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.raw += self.child.before or ""
        self.child.close()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture
def term(famulus: ServerProcess) -> Iterator[Term]:
    shell = Term("--url", famulus.base_url, "--key", KEY)
    yield shell
    shell.close()


def _session_id(shown: str) -> str:
    found = re.findall(r"\((s_[0-9a-zA-Z_-]+)\)", shown)
    assert found, shown
    return found[-1]


def _history(http: httpx.Client, sid: str) -> list[tuple[str, str]]:
    messages = http.get("/session/history", params={"session_id": sid}).json()["messages"]
    return [(m["role"], m["content"]) for m in messages]


def test_a_streamed_answer_is_drawn_as_it_comes_then_as_markdown(
    term: Term, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi **omega**"
    openai_server.push(Turn(text=words, chunk_delay=0.25))  # 3.5 s from first to last
    sid = _session_id(term.wait("New session 'Terminal'") + term.wait(")"))
    term.wait("Tab completes")
    term.prompt()
    term.say("hello there")
    term.wait("alpha")
    assert "omega" not in term.text[term.seen :], "the answer appeared only at the end"
    term.wait("omega")
    term.wait("out tokens")
    term.prompt()
    assert "**omega**" not in term.text  # drawn as Markdown, not as its source
    assert _history(http, sid) == [("user", "hello there"), ("assistant", words)]


def test_an_approval_is_asked_inline_and_answered(
    term: Term, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    rule = "Always answer in haiku."
    openai_server.push(
        Turn(tool_calls=[("update_directives", {"mode": "append", "text": rule})]),
        Turn(text="Rule added."),
    )
    term.prompt()
    term.say("add a rule")
    term.wait("Approve update_directives")
    term.wait("[y/N]")
    term.say("y")
    term.wait("Approved.")
    term.wait("Rule added.")
    term.prompt()
    assert rule in http.get("/directives").json()["content"]


def test_ctrl_c_at_an_approval_question_cancels_the_run(
    term: Term, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    rule = "Never say never."
    openai_server.push(
        Turn(tool_calls=[("update_directives", {"mode": "append", "text": rule})]),
        Turn(text="Should not come."),
    )
    term.prompt()
    term.say("add another rule")
    term.wait("[y/N]")
    term.child.sendintr()
    term.wait("Cancelled.")
    term.prompt()
    assert rule not in http.get("/directives").json()["content"]
    assert "Should not come." not in term.text


def test_ctrl_c_cancels_a_run_and_twice_at_the_prompt_quits(
    term: Term, http: httpx.Client, famulus: ServerProcess, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(text=" ".join(f"w{i}" for i in range(400)), chunk_delay=0.05))
    sid = _session_id(term.wait("New session 'Terminal'") + term.wait(")"))
    term.prompt()
    term.say("go on and on")
    term.wait("w3")
    started = time.monotonic()
    term.child.sendintr()
    term.wait("Cancelled.")
    assert time.monotonic() - started < 5
    term.prompt()
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        cancelled = sse.wait_for("run_cancelled")
    assert cancelled.data["run_id"].startswith("r_")
    kept = _history(http, sid)[-1]
    assert kept[0] == "assistant" and kept[1].startswith("w0 w1 w2") and "w399" not in kept[1]
    term.child.sendintr()
    term.wait("press Ctrl-C again to quit")
    term.child.sendintr()
    assert term.exit_status() == 0


def test_tab_completes_a_skill_name(
    term: Term, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(text="Zeta report done."))
    sid = _session_id(term.wait("New session 'Terminal'") + term.wait(")"))
    term.prompt()
    term.child.send("/zeta-r")
    time.sleep(0.3)
    term.child.send("\t")
    term.wait(f"/{SKILL}")
    time.sleep(0.3)
    term.child.send(" quarterly\r")
    term.wait("Zeta report done.")
    term.prompt()
    term.child.sendeof()  # Ctrl-D at the prompt quits
    assert term.exit_status() == 0
    assert _history(http, sid)[0] == ("user", f"/{SKILL} quarterly")
    prompt = str(openai_server.requests[-1]["messages"])
    assert SKILL_MARK in prompt and "quarterly" in prompt


def test_session_resumes_with_its_last_messages(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    sid = http.post("/sessions", json={"name": "Earlier talk"}).json()["session_id"]
    openai_server.push(Turn(text="The capital is Paris."), Turn(text="Lyon is second."))
    with SSECollector(famulus.base_url, AUTH, sid) as sse:
        r = http.post("/chat/message", json={"message": "capital of France?", "session_id": sid})
        sse.wait_for("run_finished", run_id=r.json()["run_id"])
    shell = Term("--url", famulus.base_url, "--key", KEY, "--session", sid)
    try:
        shell.wait(f"Resumed session 'Earlier talk' ({sid}), 2 messages")
        shell.wait("capital of France?")
        shell.wait("The capital is Paris.")
        shell.prompt("Earlier talk")
        shell.say("and the second city?")
        shell.wait("Lyon is second.")
        shell.prompt("Earlier talk")
        shell.say("/new Side talk")
        shell.wait("New session 'Side talk'")
        shell.prompt("Side talk")
        shell.say("/sessions")
        shell.wait(sid)
        shell.prompt("Side talk")
        shell.say(f"/switch {sid}")
        shell.wait(f"Switched to session 'Earlier talk' ({sid}), 4 messages")
        shell.wait("Lyon is second.")
        shell.prompt("Earlier talk")
        shell.say("/quit")
        assert shell.exit_status() == 0
    finally:
        shell.close()
    assert _history(http, sid)[-2:] == [
        ("user", "and the second city?"),
        ("assistant", "Lyon is second."),
    ]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("bad-key", "refused the API key"),
        ("no-server", "cannot reach famulus at"),
        ("no-session", "no session 's_missing'"),
        ("no-key", "no API key: pass --key or set FAMULUS_API_KEY"),
        ("odd-key", "the API key has a character no famulus key has"),
        ("padded-key", "no session 's_missing'"),  # the key was taken: blanks around it go
    ],
)
def test_start_failures_are_one_line_and_exit_2(
    famulus: ServerProcess, target: str, message: str
) -> None:
    url = famulus.base_url if target != "no-server" else f"http://127.0.0.1:{free_port()}"
    keys = {"bad-key": "wrong-key-0123456789", "odd-key": "“sécret-0123456789”"}
    key = keys.get(target, f" {KEY}\n" if target == "padded-key" else KEY)
    extra = ["--session", "s_missing"] if target in ("no-session", "padded-key") else []
    extra += [] if target == "no-key" else ["--key", key]
    done = subprocess.run(
        [sys.executable, "-m", "famulus.cli", "chat", "--url", url, *extra],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert key not in done.stderr


def test_piped_lines_are_answered_without_a_terminal(
    famulus: ServerProcess, http: httpx.Client, openai_server: ScriptedOpenAI
) -> None:
    openai_server.push(Turn(text="Piped answer."))
    done = subprocess.run(
        [sys.executable, "-m", "famulus.cli", "chat", "--url", famulus.base_url, "--key", KEY],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=30,
        input="hello from a pipe\n",
    )
    assert done.returncode == 0, done
    assert "Piped answer." in done.stdout and "\x1b[" not in done.stdout


def test_sse_parser_reads_events_comments_and_multiline_data() -> None:
    from famulus.term.client import SSEParser

    parser = SSEParser()
    lines = [
        ": connected",
        "id: 7",
        "event: text",
        'data: {"type": "text",',
        'data: "content": "hi"}',
        "",
    ]
    got = [e for e in map(parser.feed, lines) if e is not None]
    assert [(e.type, e.id) for e in got] == [("comment", None), ("text", 7)]
    assert got[1].data == {"type": "text", "content": "hi"}
    assert parser.feed("") is None  # a blank line with nothing pending is no event


async def test_control_characters_from_the_server_never_reach_the_terminal() -> None:
    """The model's text (steerable by a web page or an MCP tool) must not carry
    escape sequences to the terminal: OSC 52 sets the clipboard, CSI moves the
    cursor or clears the screen."""
    from famulus.term.client import ApiError, FamulusClient, SSEParser

    evil = "a\x1b[2J\x1b]52;c;aGk=\x07b\r\x9b1Ac\u0000d\r\ne\tf"
    parser = SSEParser()
    data = json.dumps({"type": "text", "content": evil, "args": {evil: [evil]}})
    (event,) = [e for e in map(parser.feed, [f"data: {data}", ""]) if e is not None]
    clean = "a[2J]52;c;aGk=b1Acd\ne\tf"
    assert event.data == {"type": "text", "content": clean, "args": {clean: [clean]}}

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/sessions":
            return httpx.Response(200, json={"sessions": [{"name": evil}]})
        return httpx.Response(409, json={"detail": evil, "code": "conflict"})

    client = FamulusClient("http://famulus.test", KEY, transport=httpx.MockTransport(answer))
    try:
        assert await client.sessions() == [{"name": clean}]
        with pytest.raises(ApiError) as failed:
            await client.cancel(session_id="s_1")
        assert failed.value.detail == clean
    finally:
        await client.aclose()
