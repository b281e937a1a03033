"""Metadata files: JSON documents written so that a crash never leaves none readable.

The broker's managers (topics, subscription groups, consumer offsets) persist through
``write_json_atomic`` / ``read_json``. Writing follows RocketMQ's ``MixAll.string2File`` and
adds the fsyncs it lacks: the new content goes to ``<file>.tmp`` (fsynced), the current file
becomes ``<file>.bak``, the temp file is renamed over ``<file>``, and the directory is fsynced.
Reading falls back to ``.bak`` when the file is missing or does not parse, as RocketMQ's
``ConfigManager.load`` does. What the documents contain is the broker's business.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)


class ConfigFileError(RuntimeError):
    """Neither a config file nor its backup can be read."""


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Replace ``path`` with ``obj`` as pretty JSON; blocking (a few syscalls and two fsyncs)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError:
        tmp.unlink(missing_ok=True)  # on a full disk, a partial temp file holds blocks for nothing
        raise
    finally:
        os.close(fd)
    if path.exists():
        os.replace(path, path.with_name(path.name + ".bak"))
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: str | Path) -> Any | None:
    """The document at ``path``, else its ``.bak``; None when neither exists.

    A file that exists but does not parse falls back to the backup; if that is also unusable,
    ConfigFileError says so (starting with empty metadata would silently lose it).
    """
    path = Path(path)
    backup = path.with_name(path.name + ".bak")
    problems = []
    for candidate in (path, backup):
        try:
            raw = candidate.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{candidate}: {exc.strerror}")
            continue
        if not raw.strip():
            problems.append(f"{candidate}: empty")
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            problems.append(f"{candidate}: {exc}")
            continue
        if candidate is backup:
            log.warning("config %s unreadable, loaded its backup %s", path, backup)
        return value
    if problems:
        raise ConfigFileError("; ".join(problems))
    return None
