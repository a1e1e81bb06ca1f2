"""A local server speaking the subset of GitHub's contents API the installer uses."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from tests.support.local_http import LocalHTTPServer

# repo "owner/name" → {path: bytes (a file) | ("symlink", target) | ("submodule", "")}
Repos = dict[str, dict[str, Any]]


def _listing(files: dict[str, Any], folder: str) -> list[dict[str, Any]] | None:
    prefix = folder + "/"
    entries: dict[str, dict[str, Any]] = {}
    for path, value in files.items():
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :]
        name = rest.split("/")[0]
        child = prefix + name
        if "/" in rest:
            entries[child] = {"name": name, "path": child, "type": "dir", "size": 0}
        elif isinstance(value, tuple):
            entries[child] = {
                "name": name,
                "path": child,
                "type": value[0],
                "target": value[1],
                "size": 0,
            }
        else:
            entries[child] = {"name": name, "path": child, "type": "file", "size": len(value)}
    return list(entries.values()) if entries else None


@contextmanager
def fake_codehost(
    repos: Repos,
    lie_about_paths: dict[str, str] | None = None,
    extra_entries: dict[str, list[dict[str, Any]]] | None = None,
    extra_files: dict[str, bytes] | None = None,
    delay: float = 0.0,
    log: list[str] | None = None,
) -> Iterator[str]:
    """Serve ``repos``; ``lie_about_paths`` rewrites listed paths (traversal tests).

    A hostile host: ``extra_entries`` adds raw entries to a folder's listing and
    ``extra_files`` serves file contents at paths the listing does not explain;
    ``delay`` slows every answer; ``log`` collects every requested path.
    """

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:  # noqa: N802
            if log is not None:
                log.append(self.path)
            if delay:
                time.sleep(delay)
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) < 3 or parts[0] != "repos":
                return self._send(404, {"message": "Not Found"})
            repo = f"{parts[1]}/{parts[2]}"
            files = repos.get(repo)
            if files is None:
                return self._send(404, {"message": "Not Found"})
            if len(parts) == 3:
                return self._send(200, {"full_name": repo})
            path = unquote("/".join(parts[4:]))
            if path in (extra_files or {}):
                content = base64.b64encode((extra_files or {})[path]).decode()
                return self._send(
                    200, {"type": "file", "path": path, "encoding": "base64", "content": content}
                )
            if path in files and isinstance(files[path], bytes):
                content = base64.b64encode(files[path]).decode()
                return self._send(
                    200, {"type": "file", "path": path, "encoding": "base64", "content": content}
                )
            listing = _listing(files, path)
            if listing is not None:
                listing += (extra_entries or {}).get(path, [])
            if listing is None:
                return self._send(404, {"message": "Not Found"})
            for entry in listing:
                entry["path"] = (lie_about_paths or {}).get(entry["path"], entry["path"])
            return self._send(200, listing)

    with LocalHTTPServer(Handler) as server:
        yield server.url
