"""Backup and restore without a server: what a restore refuses, and that it
refuses before it touches the home."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from famulus.ops.backup import BackupError, backup, restore
from famulus.settings import Settings
from famulus.store.db import Database


def _home(path: Path, secret: str = "one") -> Settings:
    settings = Settings(home=path)  # type: ignore[call-arg]
    settings.ensure_home()
    db = Database(settings.db_path)
    db.open()
    db.close()
    settings.secrets_file.write_text(json.dumps({"provider:openai": secret}))
    return settings


def _rewrite(archive: Path, target: Path, change: dict[str, bytes]) -> None:
    """A copy of ``archive`` with some members' contents replaced."""
    with tarfile.open(archive) as src, tarfile.open(target, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member) if member.isfile() else None
            if member.name in change:
                member.size = len(change[member.name])
                data = io.BytesIO(change[member.name])
            dst.addfile(member, data)


def test_round_trip_and_refusals(tmp_path: Path) -> None:
    source = _home(tmp_path / "a")
    archive, manifest = backup(source, tmp_path / "a.tar.gz")
    assert manifest.schema == manifest.migrations[-1] and "famulus.db" in manifest.sha256
    with pytest.raises(BackupError, match="already exists"):
        backup(source, archive)

    other = _home(tmp_path / "b", secret="two")
    with pytest.raises(BackupError, match="not empty.*--force"):
        restore(other, archive)
    assert json.loads(other.secrets_file.read_text()) == {"provider:openai": "two"}
    restore(other, archive, force=True)
    assert json.loads(other.secrets_file.read_text()) == {"provider:openai": "one"}


def test_a_damaged_or_foreign_archive_leaves_the_home_alone(tmp_path: Path) -> None:
    archive, _ = backup(_home(tmp_path / "a"), tmp_path / "a.tar.gz")
    target = Settings(home=tmp_path / "new")  # type: ignore[call-arg]

    damaged = tmp_path / "damaged.tar.gz"
    _rewrite(archive, damaged, {"secrets.json": b'{"provider:openai": "forged"}'})
    with pytest.raises(BackupError, match="secrets.json .* checksum"):
        restore(target, damaged)

    newer = tmp_path / "newer.tar.gz"
    with tarfile.open(archive) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    manifest["format"] = 99
    _rewrite(archive, newer, {"manifest.json": json.dumps(manifest).encode()})
    with pytest.raises(BackupError, match="format 99"):
        restore(target, newer)

    foreign = tmp_path / "foreign.tar.gz"
    with tarfile.open(foreign, "w:gz") as tar:
        tar.add(tmp_path / "a" / "famulus.db", arcname="etc/passwd")
    with pytest.raises(BackupError, match="not a famulus backup"):
        restore(target, foreign)
    assert not target.home.exists()  # a refused restore into a new home leaves none

    escaping = tmp_path / "escaping.tar.gz"
    with tarfile.open(archive) as src, tarfile.open(escaping, "w:gz") as dst:
        for member in src.getmembers():
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        link = tarfile.TarInfo("skills/notes")
        link.type, link.linkname = tarfile.SYMTYPE, "../../../etc"
        dst.addfile(link)
    with pytest.raises(BackupError, match="'skills/notes' would leave the home"):
        restore(target, escaping)
    assert not target.home.exists() and not (tmp_path / "etc").exists()


def test_a_corrupt_database_is_not_backed_up(tmp_path: Path) -> None:
    settings = _home(tmp_path / "a")
    settings.db_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(BackupError, match="cannot be read"):
        backup(settings, tmp_path / "a.tar.gz")
    assert not (tmp_path / "a.tar.gz").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".famulus-backup")] == []


def test_an_archive_from_a_newer_famulus_is_refused(tmp_path: Path) -> None:
    import hashlib
    import sqlite3

    archive, _ = backup(_home(tmp_path / "a"), tmp_path / "a.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    db = tmp_path / "x" / "famulus.db"
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO _migrations VALUES ('9999_from_the_future', 'now')")
    conn.close()
    manifest = json.loads((tmp_path / "x" / "manifest.json").read_text())
    manifest["sha256"]["famulus.db"] = hashlib.sha256(db.read_bytes()).hexdigest()
    newer = tmp_path / "newer.tar.gz"
    change = {"famulus.db": db.read_bytes(), "manifest.json": json.dumps(manifest).encode()}
    _rewrite(archive, newer, change)
    with pytest.raises(BackupError, match="newer famulus.*9999_from_the_future.*upgrade"):
        restore(Settings(home=tmp_path / "new"), newer)  # type: ignore[call-arg]
