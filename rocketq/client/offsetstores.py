"""Offset stores: where a push consumer remembers how far it got in each queue.

Both stores keep the current offsets in memory (``update`` is called after every consumed
batch, with ``increase_only`` so an out-of-order completion never moves an offset back) and
write them out in the background every ``persistConsumerOffsetInterval`` and when a queue is
given up or the consumer closes.

- ``RemoteBrokerOffsetStore`` (CLUSTERING): the group's offsets live on the queue's broker
  master. Read with QUERY_CONSUMER_OFFSET, written with UPDATE_CONSUMER_OFFSET (oneway on the
  timer, as RocketMQ does; acknowledged when closing). A read or write that fails because the
  master is gone refreshes the route and, if it names a new master, goes there at once
  (``ClientInstance.call_current``).
- ``LocalFileOffsetStore`` (BROADCASTING): every member has its own offsets, in
  ``<dir>/<clientId>/<group>/offsets.json`` (``dir`` defaults to ``~/.rocketmq_offsets``),
  written atomically (temp file, fsync, rename; the previous version kept as ``.bak`` and read
  if the main file is damaged). The file is this SDK's JSON, not Java's fastjson map format.

``read_from_store`` returns None when no offset is stored (a new group) and raises when the
store cannot answer, so a caller never mistakes "unreachable" for "new".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Protocol

import orjson

from rocketq.client import wire
from rocketq.client.errors import ClientStateError
from rocketq.client.instance import ClientInstance
from rocketq.client.queues import MessageQueue

DEFAULT_LOCAL_DIR: Final = Path("~/.rocketmq_offsets")


class OffsetStore(Protocol):
    async def load(self) -> None: ...
    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = True) -> None: ...
    def read_memory(self, mq: MessageQueue) -> int | None: ...
    async def read_from_store(self, mq: MessageQueue) -> int | None: ...
    async def persist(self, mq: MessageQueue, *, acknowledged: bool = False) -> None: ...
    async def persist_all(self, mqs: Iterable[MessageQueue], *, acknowledged: bool = False) -> None: ...
    def remove(self, mq: MessageQueue) -> None: ...


class _MemoryTable:
    """The in-memory half both stores share."""

    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = True) -> None:
        if offset < 0:
            return
        current = self.table.get(mq)
        if current is None or not increase_only or offset > current:
            self.table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int | None:
        return self.table.get(mq)

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)


class RemoteBrokerOffsetStore(_MemoryTable):
    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__()
        self._instance = instance
        self._group = group

    async def load(self) -> None:
        """Nothing to load: offsets are read per queue when a queue is assigned."""

    async def read_from_store(self, mq: MessageQueue) -> int | None:
        offset = await self._instance.call_current(
            mq.topic, lambda: self._instance.subscribe_master(mq),
            lambda addr: wire.query_consumer_offset(self._instance.remoting, addr, self._group, mq,
                                                    self._instance.api_timeout))
        if offset is not None:
            self.update(mq, offset, increase_only=False)
        return offset

    async def persist(self, mq: MessageQueue, *, acknowledged: bool = False) -> None:
        offset = self.table.get(mq)
        if offset is None:
            return
        rc = self._instance.remoting

        async def write(addr: str) -> None:
            if acknowledged:
                await wire.update_consumer_offset(rc, addr, self._group, mq, offset, self._instance.api_timeout)
            else:
                await wire.update_consumer_offset_oneway(rc, addr, self._group, mq, offset)

        # the master; while the route has none, a slave: its metadata sync hands them over
        await self._instance.call_current(mq.topic, lambda: self._instance.subscribe_master(mq), write)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, acknowledged: bool = False) -> None:
        """Write the offsets of ``mqs``; offsets of queues no longer held are dropped from memory."""
        keep = set(mqs)
        for mq in [mq for mq in self.table if mq not in keep]:
            del self.table[mq]
        results = await asyncio.gather(*(self.persist(mq, acknowledged=acknowledged) for mq in keep),
                                       return_exceptions=True)
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            raise errors[0]


class LocalFileOffsetStore(_MemoryTable):
    def __init__(self, base_dir: str | Path, client_id: str, group: str) -> None:
        super().__init__()
        base = Path(base_dir or DEFAULT_LOCAL_DIR).expanduser()
        self.path = base / client_id.replace("/", "_") / group / "offsets.json"
        self._stored: dict[MessageQueue, int] = {}
        self._write_lock = asyncio.Lock()

    async def load(self) -> None:
        self._stored = await asyncio.to_thread(_read_offsets, self.path)
        self.table.update(self._stored)

    async def read_from_store(self, mq: MessageQueue) -> int | None:
        offset = self._stored.get(mq)
        if offset is not None:
            self.update(mq, offset, increase_only=False)
        return offset

    async def persist(self, mq: MessageQueue, *, acknowledged: bool = False) -> None:
        await self.persist_all([mq])

    async def persist_all(self, mqs: Iterable[MessageQueue], *, acknowledged: bool = False) -> None:
        changed = False
        for mq in mqs:
            offset = self.table.get(mq)
            if offset is not None and self._stored.get(mq) != offset:
                self._stored[mq] = offset
                changed = True
        if changed:
            async with self._write_lock:
                await asyncio.to_thread(_write_offsets, self.path, dict(self._stored))


def _encode(offsets: dict[MessageQueue, int]) -> bytes:
    entries = [{**mq.to_json(), "offset": offset} for mq, offset in sorted(offsets.items())]
    return orjson.dumps({"offsetTable": entries}, option=orjson.OPT_INDENT_2)


def _decode(raw: bytes, path: Path) -> dict[MessageQueue, int]:
    try:
        data: Any = orjson.loads(raw)
        entries = data["offsetTable"]
        out: dict[MessageQueue, int] = {}
        for entry in entries:
            offset = entry["offset"]
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise ValueError(f"offset {offset!r} is not a non-negative integer")
            out[MessageQueue.from_json(entry)] = offset
        return out
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} is not an offsets file: {exc}") from None


def _read_offsets(path: Path) -> dict[MessageQueue, int]:
    """The offsets file, else its backup; no file at all is a new consumer."""
    backup = path.with_suffix(".json.bak")
    errors = []
    for candidate in (path, backup):
        try:
            return _decode(candidate.read_bytes(), candidate)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            errors.append(str(exc))
    if errors:
        # Starting from scratch would silently re-consume or skip everything: refuse instead.
        raise ClientStateError(f"cannot load local offsets: {'; '.join(errors)}")
    return {}


def _write_offsets(path: Path, offsets: dict[MessageQueue, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "wb") as fh:
        fh.write(_encode(offsets))
        fh.flush()
        os.fsync(fh.fileno())
    if path.exists():
        os.replace(path, path.with_suffix(".json.bak"))
    os.replace(tmp, path)
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
