"""What a registered MCP server may look like: the checks behind every 422 of ``/mcp/servers``.

A server's name becomes the prefix of its tools' names (``<name>_<tool>``),
and model APIs accept tool names of at most 64 letters, digits, ``_`` and
``-``, so names are short lowercase slugs. The rest keeps a config that could
never work (a stdio server without a command, a URL that is not http(s), an
env name a shell could not set, a header value that would split the request)
from being stored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from famulus.errors import InvalidRequest

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
MAX_ARGS = 100
MAX_TEXT = 4096
MAX_ENTRIES = 50
# famulus sets these itself or they would let a server impersonate the client.
RESERVED_HEADERS = frozenset({"host", "content-length", "content-type", "mcp-session-id"})


def check_name(name: str) -> None:
    if not NAME.match(name):
        raise InvalidRequest(
            "Server name must be 1-32 lowercase letters, digits, '-' or '_', starting with a"
            " letter or digit (it prefixes the server's tool names).",
            loc=["body", "name"],
        )


def check_stdio(command: str | None, args: Sequence[str], env: Mapping[str, str]) -> str:
    if command is None or not command.strip():
        raise InvalidRequest("A stdio server needs a command.", loc=["body", "command"])
    _text(command, ["body", "command"])
    if len(args) > MAX_ARGS:
        raise InvalidRequest(f"At most {MAX_ARGS} args.", loc=["body", "args"])
    for i, arg in enumerate(args):
        _text(arg, ["body", "args", i])
    _entries(env, "env")
    for key, value in env.items():
        if not ENV_NAME.match(key):
            raise InvalidRequest(
                f"{key!r} is not an environment variable name (letters, digits, '_').",
                loc=["body", "env", key],
            )
        _text(value, ["body", "env", key])
    return command.strip()


def check_http(url: str | None, headers: Mapping[str, str]) -> str:
    if url is None or not url.strip():
        raise InvalidRequest("An http server needs a url.", loc=["body", "url"])
    url = url.strip()
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise InvalidRequest(
            "url must be an http:// or https:// address with a host.", loc=["body", "url"]
        )
    _text(url, ["body", "url"])
    _entries(headers, "headers")
    for key, value in headers.items():
        if not HEADER_NAME.match(key) or key.lower() in RESERVED_HEADERS:
            raise InvalidRequest(
                f"{key!r} is not a header you may set.", loc=["body", "headers", key]
            )
        _text(value, ["body", "headers", key])
    return url


def refuse(field: str, transport: str) -> None:
    raise InvalidRequest(f"{field} does not apply to a {transport} server.", loc=["body", field])


def _entries(values: Mapping[str, str], field: str) -> None:
    if len(values) > MAX_ENTRIES:
        raise InvalidRequest(f"At most {MAX_ENTRIES} {field}.", loc=["body", field])


def _text(value: str, loc: list[str | int]) -> None:
    """One line of reasonable length: a NUL cannot be passed to a process, a line
    break would split an HTTP header."""
    if len(value) > MAX_TEXT:
        raise InvalidRequest(f"At most {MAX_TEXT} characters.", loc=loc)
    if any(ch in value for ch in "\x00\r\n"):
        raise InvalidRequest("Must not contain NUL or line breaks.", loc=loc)
