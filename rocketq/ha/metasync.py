"""A slave's copy of its master's metadata (RocketMQ's SlaveSynchronize).

Replication copies messages; a slave also needs the master's *tables* to serve them and, once
promoted, to carry on: which topics exist (a pull for an unknown topic is TOPIC_NOT_EXIST),
which subscription groups, and where every group got to. Every ``SYNC_INTERVAL_S`` (first after
``FIRST_SYNC_S``; sooner after a replicated message of a topic it does not know, or when the
master reappears) the slave asks the master's remoting address (learned at registration) for:

1. GET_ALL_TOPIC_CONFIG, page by page (``rocketq.admin.tablepages``, RocketMQ 5's split
   metadata, pages of ``PAGE_SIZE``): the first page asks for one topic, and when its
   DataVersion is the one the slave holds the table is unchanged and nothing more is asked;
   otherwise the pages are read and the table is adopted whole, with the master's DataVersion.
   A RocketMQ 4.x master, which does not page, answers the whole table every time;
2. GET_ALL_CONSUMER_OFFSET: each ``topic@group`` entry replaces the slave's (written to
   consumerOffset.json only when an entry changed);
3. GET_ALL_DELAY_OFFSET: the master's delay-level offsets (``rocketq.broker.schedule``),
   written to ``config/delayOffset.json`` when they changed. The slave delivers no delayed
   messages itself; the file lets it resume delivery where its master got to if it is ever
   restarted as a master;
4. GET_ALL_SUBSCRIPTIONGROUP_CONFIG: like topics.

Every request goes through the broker's outgoing client, which signs it when the broker is
given ``innerClientAuthenticationCredentials`` (``rocketq.acl.settings``): a master with
``aclEnable=true`` refuses unsigned calls. What each round cost (requests, answer bytes per
table, time) is in GET_BROKER_RUNTIME_INFO (``runtime_info``).

Offsets committed *to the slave* (consumers fall back to it while the master is gone) are not
simply overwritten: an entry that changed on the slave since the last sync and is ahead of the
master's is first sent to the master (UPDATE_CONSUMER_OFFSET), so a group resumes where it got
to on the slave instead of consuming that stretch twice. While the master cannot be reached they
are held. Each call has ``CALL_TIMEOUT_S``; a failed round is logged and retried next period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rocketq.admin import fastjson, tablepages
from rocketq.broker import schedule
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.metadatapages import SPLIT_METADATA_SIZE
from rocketq.broker.offsets import TOPIC_GROUP_SEPARATOR, ConsumerOffsetManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import (
    GetAllSubscriptionGroupRequestHeader,
    GetAllTopicConfigRequestHeader,
    Header,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.sharedbodies import BodyError, DataVersion, SubscriptionGroupConfig, TopicConfig
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.errors import RemotingError
from rocketq.store import configfiles
from rocketq.tasks import OwnedTask

log = logging.getLogger(__name__)
limited = LogLimiter(log, interval=60.0)

FIRST_SYNC_S: Final = 3.0
SYNC_INTERVAL_S: Final = 10.0
CALL_TIMEOUT_S: Final = 3.0
MASTER_CHECK_S: Final = 1.0
"""How often a waiting sync looks whether the master changed (registration learns it)."""
MIN_GAP_S: Final = 0.2
"""Shortest time between two rounds when new topics keep arriving."""
PAGE_SIZE: Final = SPLIT_METADATA_SIZE
"""Topics or groups per page: the most a master serves in one (RocketMQ 5's default, 2 000)."""

OffsetTable = dict[str, dict[int, int]]


class SyncError(Exception):
    """The master refused a request or answered something unreadable."""


@dataclass(frozen=True, slots=True)
class PagedTable:
    """How one paged table is asked for and read."""

    code: RequestCode
    table_key: str
    total_field: str
    header: Callable[[int, str, int], Header]
    """(seq, dataVersion text, page size) -> the request header."""
    entry: Callable[[Any, str], Any]
    """(raw entry, its name) -> the parsed entry."""


TOPICS: Final = PagedTable(
    RequestCode.GET_ALL_TOPIC_CONFIG, "topicConfigTable", "totalTopicNum",
    lambda seq, version, size: GetAllTopicConfigRequestHeader(topic_seq=seq, data_version=version,
                                                              max_topic_num=size),
    lambda raw, name: TopicConfig.from_json(raw, f"topicConfigTable[{name!r}]", name=name))
GROUPS: Final = PagedTable(
    RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, "subscriptionGroupTable", "totalGroupNum",
    lambda seq, version, size: GetAllSubscriptionGroupRequestHeader(group_seq=seq, data_version=version,
                                                                    max_group_num=size),
    lambda raw, name: SubscriptionGroupConfig.from_json(raw, f"subscriptionGroupTable[{name!r}]"))
TABLE_NAMES: Final[dict[int, str]] = {
    RequestCode.GET_ALL_TOPIC_CONFIG: "Topic", RequestCode.GET_ALL_CONSUMER_OFFSET: "Offset",
    RequestCode.GET_ALL_DELAY_OFFSET: "Delay", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: "Group"}
"""Each table's name in ``RoundTraffic.bytes`` and in the runtime info keys."""


@dataclass(slots=True)
class RoundTraffic:
    """What one round cost: requests sent, answer body bytes per table, seconds taken."""

    requests: int = 0
    bytes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLE_NAMES.values(), 0))
    seconds: float = 0.0


class SlaveSynchronizer:
    """Owner of the slave's metadata sync task."""

    def __init__(self, client: RemotingClient, master_addr: Callable[[], str | None], own_addr: Callable[[], str],
                 topics: TopicConfigManager, groups: SubscriptionGroupManager, offsets: ConsumerOffsetManager,
                 on_topics_changed: Callable[[], None], *, delay_offset_path: Path | None = None,
                 first_delay: float = FIRST_SYNC_S, interval: float = SYNC_INTERVAL_S) -> None:
        self._client = client
        self._master_addr = master_addr
        self._own_addr = own_addr
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._on_topics_changed = on_topics_changed
        self._delay_offset_path = delay_offset_path
        """Where the master's delay offsets are written (None: not copied)."""
        self._delay_offsets: dict[int, int] | None = None
        """The delay offsets as this sync last wrote them."""
        self._first_delay = first_delay
        self._interval = interval
        self._synced_offsets: OffsetTable = {}
        """The offset table as the last sync left it: entries that differ now were committed here."""
        self._wake = asyncio.Event()
        self._task = OwnedTask("ha-metadata-sync", self._run)
        self._traffic = RoundTraffic()
        """The round under way (each request adds to it)."""
        self.last_round = RoundTraffic()
        self.rounds = 0
        self.last_sync_at = 0.0

    def start(self) -> None:
        self._task.start()

    async def close(self) -> None:
        await self._task.stop()

    def runtime_info(self) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO keys: rounds done, and what the last one cost."""
        last = self.last_round
        return {"metadataSyncRounds": str(self.rounds), "metadataSyncLastRequests": str(last.requests),
                "metadataSyncLastMillis": str(round(last.seconds * 1000)),
                **{f"metadataSyncLast{name}Bytes": str(size) for name, size in last.bytes.items()}}

    def message_arrived(self, topic: str, _queue_id: int, _next_offset: int) -> None:
        """Store arrival listener: a replicated message of a topic this slave does not know yet
        (created on the master moments ago) brings the next sync forward, so the slave can
        serve it before the 10 s period comes round."""
        if topic not in self._topics.table:
            self._wake.set()

    async def _pause(self, seconds: float, master: str | None) -> None:
        """Sleep ``seconds``, less when woken or when a master appears (it came back: hand it
        the offsets committed here without waiting a whole period)."""
        deadline = asyncio.get_running_loop().time() + seconds
        absent = master is None
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(left, MASTER_CHECK_S)):
                    await self._wake.wait()
            now = self._master_addr()
            if self._wake.is_set() or (now and (absent or now != master)):
                break
            absent = absent or now is None
        self._wake.clear()

    async def _run(self) -> None:
        await self._pause(self._first_delay, None)
        while True:
            master = self._master_addr()
            if master and master != self._own_addr():
                try:
                    await self.sync_all(master)
                except (RemotingError, SyncError, BodyError, fastjson.FastJsonError, OSError) as exc:
                    limited.warning(master, "metadata sync from master %s failed: %s", master, exc)
            await asyncio.sleep(MIN_GAP_S)  # a burst of new topics costs one round, not one each
            await self._pause(self._interval, master)

    async def sync_all(self, master: str) -> None:
        """One round: topics, consumer offsets, delay offsets, subscription groups, in RocketMQ's order."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        self._traffic = RoundTraffic()
        self._sync_topics(await self._read_table(master, TOPICS, self._topics.data_version))
        await self._sync_offsets(master, await self._fetch(master, RequestCode.GET_ALL_CONSUMER_OFFSET))
        if self._delay_offset_path is not None:
            await self._sync_delay_offsets(self._delay_offset_path,
                                           await self._fetch_raw(master, RequestCode.GET_ALL_DELAY_OFFSET))
        self._sync_groups(await self._read_table(master, GROUPS, self._groups.data_version))
        self._traffic.seconds = loop.time() - began
        self.last_round = self._traffic
        self.rounds += 1
        self.last_sync_at = loop.time()

    async def _invoke(self, master: str, request: RemotingCommand) -> RemotingCommand:
        response = await self._client.invoke(master, request, CALL_TIMEOUT_S)
        self._traffic.requests += 1
        name = TABLE_NAMES.get(request.code)
        if name is not None:
            self._traffic.bytes[name] += len(response.body)
        if response.code != ResponseCode.SUCCESS:
            raise SyncError(f"{RequestCode(request.code).name} answered {response.code}: {response.remark}")
        return response

    async def _fetch_raw(self, master: str, code: RequestCode) -> bytes:
        return bytes((await self._invoke(master, RemotingCommand(code=code))).body)

    async def _fetch(self, master: str, code: RequestCode) -> Any:
        return _document(await self._fetch_raw(master, code), code)

    async def _read_table(self, master: str, spec: PagedTable, held: DataVersion
                          ) -> tablepages.Table[Any] | None:
        """The master's table, page by page; None when its DataVersion is ``held``."""
        async def fetch(seq: int, version: DataVersion | None, size: int) -> tablepages.Page[Any]:
            header = spec.header(seq, tablepages.version_text(version), size)
            response = await self._invoke(master, RemotingCommand(code=spec.code, ext_fields=header.to_ext()))
            body = _document(bytes(response.body), spec.code)
            raw_version = body.get("dataVersion")
            if raw_version is None:
                raise SyncError(f"{spec.code.name} answered without a dataVersion")
            return tablepages.Page(_table(body, spec.table_key, spec.entry), DataVersion.from_json(raw_version),
                                   tablepages.total_of(response.ext_fields.get(spec.total_field)))

        return await tablepages.read(fetch, PAGE_SIZE, held=held)

    def _sync_topics(self, table: tablepages.Table[TopicConfig] | None) -> None:
        if table is None or table.version is None:  # unchanged (every answer has a version)
            return
        self._topics.table = table.entries
        self._topics.data_version = table.version
        self._topics.persist()
        self._on_topics_changed()
        log.info("metadata sync: adopted the master's %d topics", len(table.entries))

    async def _sync_delay_offsets(self, path: Path, raw: bytes) -> None:
        """Write the master's delay offsets (a Java master's fastjson included) when they changed;
        an unreadable answer is refused whole, so the file is never replaced by garbage."""
        try:
            offsets = schedule.parse_delay_offsets(raw)
        except ValueError as exc:  # orjson's decode error is a ValueError too
            raise SyncError(f"GET_ALL_DELAY_OFFSET answered an unreadable body: {exc}") from None
        if offsets == self._delay_offsets:
            return  # unchanged: no fsync every round
        await asyncio.to_thread(configfiles.write_json_atomic, path, schedule.render_delay_offsets(offsets))
        self._delay_offsets = offsets
        log.info("metadata sync: wrote the master's delay offsets of %d levels", len(offsets))

    def _sync_groups(self, table: tablepages.Table[SubscriptionGroupConfig] | None) -> None:
        if table is None or table.version is None:
            return
        self._groups.table = table.entries
        self._groups.data_version = table.version
        self._groups.persist()
        log.info("metadata sync: adopted the master's %d subscription groups", len(table.entries))

    async def _sync_offsets(self, master: str, body: dict[str, Any]) -> None:
        theirs = _offset_table(body)
        for key, queues in self._local_commits().items():
            topic, group = key.split(TOPIC_GROUP_SEPARATOR, 1)
            for queue_id, offset in queues.items():
                if offset > theirs.get(key, {}).get(queue_id, -1):
                    await self._forward(master, group, topic, queue_id, offset)
                    theirs.setdefault(key, {})[queue_id] = offset
        table = self._offsets.table
        if any(table.get(key) != queues for key, queues in theirs.items()):
            table.update(theirs)
            self._offsets.persist(force=True)  # the manager does not see a table changed behind its back
        self._synced_offsets = {key: dict(queues) for key, queues in table.items()}

    def _local_commits(self) -> OffsetTable:
        """Entries committed on this slave since the last sync."""
        changed: OffsetTable = {}
        for key, queues in self._offsets.table.items():
            synced = self._synced_offsets.get(key, {})
            moved = {q: o for q, o in queues.items() if synced.get(q) != o}
            if moved:
                changed[key] = moved
        return changed

    async def _forward(self, master: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        header = UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id,
                                                   commit_offset=offset)
        request = RemotingCommand(code=RequestCode.UPDATE_CONSUMER_OFFSET, ext_fields=header.to_ext())
        try:
            await self._invoke(master, request)
        except SyncError as exc:
            raise SyncError(f"the master refused the offset {offset} of {group} on {topic}/{queue_id}: {exc}") from None
        log.info("metadata sync: forwarded %s's offset %d on %s/%d, committed here, to the master",
                 group, offset, topic, queue_id)


def _document(raw: bytes, code: RequestCode) -> dict[str, Any]:
    body = fastjson.loads(raw)
    if not isinstance(body, dict):
        raise SyncError(f"{code.name} answered a body that is not an object")
    return body


def _table(body: dict[str, Any], key: str, parse: Callable[[Any, str], Any]) -> dict[str, Any]:
    raw = body.get(key) or {}
    if not isinstance(raw, dict):
        raise SyncError(f"{key} is not an object")
    return {str(name): parse(entry, str(name)) for name, entry in raw.items()}


def _offset_table(body: dict[str, Any]) -> OffsetTable:
    raw = body.get("offsetTable") or {}
    if not isinstance(raw, dict):
        raise SyncError("offsetTable is not an object")
    table: OffsetTable = {}
    for key, queues in raw.items():
        if not isinstance(key, str) or TOPIC_GROUP_SEPARATOR not in key or not isinstance(queues, dict):
            raise SyncError(f"offsetTable entry {key!r} is not topic@group -> {{queueId: offset}}")
        try:
            table[key] = {int(q): int(o) for q, o in queues.items()}
        except (TypeError, ValueError):
            raise SyncError(f"offsetTable entry {key!r} holds a non-integer queue id or offset") from None
    return table
