"""Namespaced key/value settings a name server keeps for administrators, persisted to one file.

RocketMQ uses this for little more than ``ORDER_TOPIC_CONFIG`` (topic -> "brokerA:4;brokerB:4",
which turns a topic's route into an ordered one) but any namespace may be written with
PUT_KV_CONFIG. Unlike routes, these values survive a restart: every change is written to
``kvConfigPath`` (default ``~/namesrv/kvConfig.json``) in RocketMQ's own layout,
``{"configTable": {namespace: {key: value}}}``, so a Java name server's file loads as it is.

A change is durable before it is visible: the new table is written to a temporary file,
fsynced and renamed over the old one (off the event loop), and only then replaces the table in
memory. Changes are serialised by one lock, so two concurrent PUTs cannot write an older table
last. Name servers do not share this file or these values with each other.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Final

import orjson

NAMESPACE_ORDER_TOPIC_CONFIG: Final = "ORDER_TOPIC_CONFIG"
DEFAULT_PATH: Final = "~/namesrv/kvConfig.json"

Table = dict[str, dict[str, str]]


class KVConfigError(Exception):
    """The kvConfig file cannot be read, parsed or written."""


class KVConfig:
    def __init__(self, path: str | os.PathLike[str], table: Table | None = None) -> None:
        self.path = Path(path).expanduser()
        self._table: Table = table or {}
        self._lock = asyncio.Lock()

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> KVConfig:
        """Read the file (blocking; call at startup). A missing file is an empty table; a
        damaged one is an error, because starting empty would lose it at the next write."""
        file = Path(path).expanduser()
        try:
            raw = file.read_bytes()
        except FileNotFoundError:
            return cls(file)
        except OSError as exc:
            raise KVConfigError(f"cannot read {file}: {exc.strerror}") from None
        return cls(file, _parse(raw, file))

    # --- reads ----------------------------------------------------------------------------------

    def get(self, namespace: str, key: str) -> str | None:
        return self._table.get(namespace, {}).get(key)

    def namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of one namespace, or None when it was never written."""
        values = self._table.get(namespace)
        return None if values is None else dict(values)

    def snapshot(self) -> Table:
        return {ns: dict(values) for ns, values in self._table.items()}

    # --- writes ---------------------------------------------------------------------------------

    async def put(self, namespace: str, key: str, value: str) -> None:
        async with self._lock:
            table = self.snapshot()
            table.setdefault(namespace, {})[key] = value
            await self._commit(table)

    async def delete(self, namespace: str, key: str) -> bool:
        """Remove one key; False when it was not there (nothing is written then)."""
        async with self._lock:
            if key not in self._table.get(namespace, {}):
                return False
            table = self.snapshot()
            # The namespace itself stays, empty, as RocketMQ leaves it.
            del table[namespace][key]
            await self._commit(table)
            return True

    async def _commit(self, table: Table) -> None:
        data = orjson.dumps({"configTable": table}, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        try:
            await asyncio.to_thread(_write_atomically, self.path, data)
        except OSError as exc:
            raise KVConfigError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._table = table


def _parse(raw: bytes, file: Path) -> Table:
    try:
        doc = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise KVConfigError(f"{file} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise KVConfigError(f"{file}: expected a JSON object")
    config = doc.get("configTable")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise KVConfigError(f"{file}: configTable must be an object")
    table: Table = {}
    for namespace, values in config.items():
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise KVConfigError(f"{file}: namespace {namespace!r} must map keys to strings")
        table[namespace] = dict(values)
    return table


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
