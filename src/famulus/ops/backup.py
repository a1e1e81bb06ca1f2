"""``famulus backup`` and ``famulus restore``: a home in one owner-only archive.

The archive is a ``.tar.gz`` holding ``manifest.json``, a consistent copy of the
database (SQLite's online backup, so it can be taken while a server runs),
``secrets.json`` and ``api_key.json`` (mode 0600 kept) and the ``skills/``
folder. One file because it is meant to travel to another machine; gzip
because a database compresses well. The manifest names the famulus version,
the last migration the database has and a SHA-256 of each file, so a restore
can tell a damaged or too-new archive before it touches the home.

A restore never writes into a home a server holds (it takes the home's lock
for its whole run, so no server can start meanwhile either), nor into a
non-empty home unless forced; it unpacks beside the home, checks everything,
and only then moves the files in.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from famulus import __version__
from famulus.home_lock import HomeInUse, HomeLock
from famulus.settings import Settings
from famulus.store.maintenance import (
    NotADatabase,
    integrity_problems,
    migration_state,
    online_backup,
)
from famulus.timeutil import now_iso

FORMAT = 1
MANIFEST = "manifest.json"
DB = "famulus.db"
SECRETS = "secrets.json"
KEY = "api_key.json"
SKILLS = "skills"
_FILES = (DB, SECRETS, KEY)  # what the manifest checksums
_MEMBERS = (MANIFEST, *_FILES, SKILLS)  # every top-level name an archive may hold


class BackupError(Exception):
    """Why a backup or restore did not happen, as one sentence for the person."""


@dataclass(frozen=True)
class Manifest:
    format: int
    famulus_version: str
    schema: str | None  # the last migration the database has
    migrations: list[str]
    created_at: str
    sha256: dict[str, str]

    @classmethod
    def parse(cls, raw: bytes) -> Manifest:
        try:
            data = json.loads(raw)
            manifest = cls(**data)
        except (ValueError, TypeError) as exc:
            raise BackupError(f"the archive's {MANIFEST} is not readable ({exc})") from None
        if manifest.format != FORMAT:
            raise BackupError(
                f"the archive has format {manifest.format}; this famulus reads format {FORMAT}"
            )
        return manifest


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def archive_path(dest: Path) -> Path:
    """An existing directory gets a time-stamped archive inside it; any other path
    is the archive's own name. An existing file is never overwritten."""
    if dest.is_dir():
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        dest = dest / f"famulus-backup-{stamp}.tar.gz"
    if dest.exists():
        raise BackupError(f"{dest} already exists; choose another name")
    if not dest.parent.is_dir():
        raise BackupError(f"{dest.parent} is not a directory")
    return dest


# -- backup --------------------------------------------------------------------


def backup(settings: Settings, dest: Path) -> tuple[Path, Manifest]:
    """Write the archive of ``settings.home``; safe while a server runs there."""
    target = archive_path(dest)
    if not settings.db_path.is_file():
        raise BackupError(f"there is no database at {settings.db_path}; nothing to back up")
    with tempfile.TemporaryDirectory(prefix=".famulus-backup-", dir=target.parent) as tmp:
        staging = Path(tmp) / "home"
        staging.mkdir(mode=0o700)
        manifest = _stage(settings, staging)
        partial = Path(tmp) / "archive.tar.gz"
        _pack(staging, partial)
        os.replace(partial, target)
    return target, manifest


def _stage(settings: Settings, staging: Path) -> Manifest:
    try:
        online_backup(settings.db_path, staging / DB)
        problems = integrity_problems(staging / DB)
        state = migration_state(staging / DB)
    except NotADatabase as exc:
        raise BackupError(f"the database cannot be read: {exc}") from None
    if problems:
        raise BackupError(
            f"the database copy fails its integrity check ({problems[0]}); run 'famulus doctor'"
        )
    for name, source in ((SECRETS, settings.secrets_file), (KEY, settings.key_file)):
        if source.is_file():
            shutil.copyfile(source, staging / name)
            (staging / name).chmod(0o600)
    if settings.skills_dir.is_dir():
        shutil.copytree(
            settings.skills_dir,
            staging / SKILLS,
            symlinks=True,
            ignore=shutil.ignore_patterns(".install-*"),  # an install in progress
        )
    manifest = Manifest(
        format=FORMAT,
        famulus_version=__version__,
        schema=state.latest,
        migrations=list(state.applied),
        created_at=now_iso(),
        sha256={name: _sha256(staging / name) for name in _FILES if (staging / name).is_file()},
    )
    (staging / MANIFEST).write_text(json.dumps(asdict(manifest), indent=1) + "\n")
    return manifest


def _pack(staging: Path, archive: Path) -> None:
    fd = os.open(archive, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name in _MEMBERS:
            if (staging / name).exists():
                tar.add(staging / name, arcname=name)


# -- restore -------------------------------------------------------------------


def restore(settings: Settings, source: Path, *, force: bool = False) -> Manifest:
    """Put the archive's files into ``settings.home``; see the module docstring."""
    if not source.is_file():
        raise BackupError(f"{source} is not a file")
    fresh = not settings.home.exists()
    settings.ensure_home()
    lock = HomeLock(settings.lock_file)
    try:
        lock.acquire()
    except HomeInUse as exc:
        raise BackupError(
            f"{exc.home} is in use by a famulus server ({exc.holder.describe()}); stop it first"
        ) from None
    try:
        return _restore_locked(settings, source, force=force)
    except BackupError:
        if fresh:  # a refused restore leaves no trace, not even the home it made
            shutil.rmtree(settings.home, ignore_errors=True)
        raise
    finally:
        lock.release()


def _restore_locked(settings: Settings, source: Path, *, force: bool) -> Manifest:
    occupied = _occupied(settings)
    if occupied and not force:
        raise BackupError(
            f"{settings.home} is not empty (it holds {', '.join(occupied)}); "
            "restore into an empty home, or pass --force to replace its data"
        )
    with tempfile.TemporaryDirectory(prefix=".restore-", dir=settings.home) as tmp:
        unpacked = Path(tmp)
        manifest = _unpack(source, unpacked)
        _check(unpacked, manifest)
        _move_in(settings, unpacked)
    return manifest


def _targets(settings: Settings) -> dict[str, Path]:
    """Where each archive member lives in the home."""
    return {
        DB: settings.db_path,
        SECRETS: settings.secrets_file,
        KEY: settings.key_file,
        SKILLS: settings.skills_dir,
    }


def _occupied(settings: Settings) -> list[str]:
    ignored = {settings.lock_file.name}
    return sorted(p.name for p in settings.home.iterdir() if p.name not in ignored)


def _unpack(source: Path, into: Path) -> Manifest:
    try:
        with tarfile.open(source, mode="r:gz") as tar:
            members = tar.getmembers()
            names = [m.name for m in members]
            stray = sorted({n.split("/")[0] for n in names} - set(_MEMBERS))
            if stray or MANIFEST not in names or DB not in names:
                raise BackupError(
                    f"{source} is not a famulus backup (it lacks {MANIFEST} or {DB}"
                    + (f", or holds {', '.join(stray)}" if stray else "")
                    + ")"
                )
            _refuse_unsafe(members)
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
                tar.extractall(into, filter="data")
            else:
                tar.extractall(into)  # every member was checked above
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BackupError(f"{source} cannot be unpacked ({exc})") from None
    return Manifest.parse((into / MANIFEST).read_bytes())


def _refuse_unsafe(members: list[tarfile.TarInfo]) -> None:
    """Only plain files, folders and links that stay inside their own top-level
    folder: an archive is data from elsewhere, and must not reach outside the
    home, nor point a skill at the secrets."""
    for member in members:
        path = PurePosixPath(member.name)
        escapes = path.is_absolute() or ".." in path.parts
        if member.issym() or member.islnk():
            target = PurePosixPath(member.linkname)
            base = path.parent if member.issym() else PurePosixPath()
            landing = posixpath.normpath(str(base / target))
            inside = landing.startswith(f"{path.parts[0]}/")  # a link in skills/ stays there
            escapes = escapes or target.is_absolute() or not inside
        elif not (member.isfile() or member.isdir()):
            escapes = True
        if escapes:
            raise BackupError(f"the archive member {member.name!r} would leave the home")


def _check(unpacked: Path, manifest: Manifest) -> None:
    for name, expected in manifest.sha256.items():
        path = unpacked / name
        if name not in _FILES or not path.is_file() or _sha256(path) != expected:
            raise BackupError(f"{name} in the archive does not match its manifest checksum")
    try:
        problems = integrity_problems(unpacked / DB)
        state = migration_state(unpacked / DB)
    except NotADatabase as exc:
        raise BackupError(f"the archive's database cannot be read: {exc}") from None
    if problems:
        raise BackupError(f"the archive's database fails its integrity check: {problems[0]}")
    if state.unknown:
        raise BackupError(
            f"the archive comes from a newer famulus ({manifest.famulus_version}; migrations "
            f"{', '.join(state.unknown)} are unknown here); upgrade famulus first"
        )


def _move_in(settings: Settings, unpacked: Path) -> None:
    """Replace the home's data with the unpacked files; renames within one
    filesystem, so each file appears whole."""
    for suffix in ("-wal", "-shm"):  # a stale WAL would be replayed into the new file
        settings.db_path.with_name(settings.db_path.name + suffix).unlink(missing_ok=True)
    for name, target in _targets(settings).items():
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        if (unpacked / name).exists():
            os.replace(unpacked / name, target)
    for name in _FILES:
        path = _targets(settings)[name]
        if path.exists():
            path.chmod(0o600)
    settings.home.chmod(0o700)
