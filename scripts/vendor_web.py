"""Vendor the web client's third-party files from the npm registry.

famulus needs no Node to install or run: the libraries the web client uses
(``marked`` renders Markdown, ``dompurify`` sanitizes the HTML it makes,
highlight.js's browser build colours code blocks) are plain ES modules, so their published, built files are copied as they are into
``src/famulus/web/static/vendor/`` together with their licences, and
``VENDOR.json`` records name, version, licence and the sha256 of every copied
file. Re-run this script (it needs ``npm`` and the registry) to upgrade: change
a version below, run it, review the diff, commit the output.

    python scripts/vendor_web.py          # fetch and write
    python scripts/vendor_web.py --check  # verify the committed files' checksums
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[1] / "src" / "famulus" / "web" / "static" / "vendor"

# name, version, {file in the package: name in vendor/}
PACKAGES: list[tuple[str, str, dict[str, str]]] = [
    ("marked", "18.2.1", {"lib/marked.esm.js": "marked.esm.js", "LICENSE": "marked.LICENSE"}),
    (
        "@highlightjs/cdn-assets",
        "11.11.1",
        {
            "es/highlight.min.js": "highlight.min.js",
            "styles/github.min.css": "highlight-light.min.css",
            "styles/github-dark.min.css": "highlight-dark.min.css",
            "LICENSE": "highlight.LICENSE",
        },
    ),
    (
        "dompurify",
        "3.4.18",
        {"dist/purify.es.mjs": "purify.es.mjs", "LICENSE": "dompurify.LICENSE"},
    ),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(name: str, version: str, into: Path) -> tuple[Path, str]:
    """``npm pack`` downloads the tarball and checks the registry's integrity hash."""
    out = subprocess.run(
        ["npm", "pack", f"{name}@{version}", "--json", "--pack-destination", str(into)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    info = json.loads(out)[0]
    tarball = into / info["filename"]
    folder = into / name.replace("/", "+")
    with tarfile.open(tarball) as tar:
        tar.extractall(folder, filter="data")
    return folder / "package", str(info["integrity"])


def vendor() -> None:
    VENDOR.mkdir(parents=True, exist_ok=True)
    record: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, version, files in PACKAGES:
            package, integrity = fetch(name, version, Path(tmp))
            meta = json.loads((package / "package.json").read_text(encoding="utf-8"))
            assert meta["version"] == version, (name, meta["version"])
            copied = {}
            for source, target in files.items():
                shutil.copyfile(package / source, VENDOR / target)
                copied[target] = sha256(VENDOR / target)
            record.append(
                {
                    "name": name,
                    "version": version,
                    "license": meta.get("license"),
                    "tarball_integrity": integrity,
                    "files": copied,
                }
            )
    (VENDOR / "VENDOR.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def check() -> int:
    """Exit status 1 when a vendored file differs from what VENDOR.json records."""
    bad = [
        target
        for entry in json.loads((VENDOR / "VENDOR.json").read_text(encoding="utf-8"))
        for target, digest in entry["files"].items()
        if not (VENDOR / target).is_file() or sha256(VENDOR / target) != digest
    ]
    for target in bad:
        print(f"vendored file changed or missing: {target}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        sys.exit(check())
    vendor()
