"""MessageStore: the broker's one entry point to its messages on disk.

The store appends messages to the CommitLog, derives a ConsumeQueue unit and IndexFile entries
for each, serves pulls as slices of the CommitLog, flushes, recovers after crashes and deletes
old data. It owns everything under ``storePathRootDir`` except ``config/`` (which the broker
writes through ``configfiles``).

Lifecycle: ``open()`` (sync: takes ``<root>/lock``, recovers, creates ``<root>/abort``) →
``await start()`` (flush and retention tasks) → ``put``/``get_messages``/... →
``await close()`` (idempotent: stops the tasks, flushes everything, writes the checkpoint,
removes ``abort``, releases the lock).

The put path is synchronous from encoding to dispatch, so appends are atomic with respect to
each other on the event loop without a lock; only waiting for SYNC_FLUSH's group commit
yields. Arrival listeners (the broker's long polling) are called at the end of each put with
the queue's new max offset. Replication (HA/DLedger) is not this module's concern.

``MessageStore`` is the façade that composes the parts: the table of ConsumeQueues
(``queuetable``), the first half of a put, which validates and encodes every message into a
``PreparedMessage`` before anything is appended (``putting``), and the read path that answers
pulls from a queue's units (``reading``). What stays here is what needs all of them at once:
the append loop (CommitLog, queue units, index entries, rollback), flush waits, lifecycle,
replication hooks and statistics.
"""

from __future__ import annotations

import bisect
import enum
import errno
import fcntl
import logging
import os
import time
from collections.abc import Callable, Container, Iterable, Sequence, Sized
from dataclasses import replace
from typing import Final

from rocketq.protocol import messageerrors, msgid, storedrecords
from rocketq.protocol.messageerrors import MessageIllegalError, PropertiesSizeExceededError
from rocketq.ratelimit import LogLimiter
from rocketq.store import (
    batchappend,
    checkpoint,
    committed,
    consumequeue,
    dispatch,
    flushing,
    groupappend,
    inplace,
    mappedfile,
    putting,
    reading,
    recovery,
    retention,
)
from rocketq.store import commitlog as commitlog_mod
from rocketq.store import reput as reput_mod
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import BLANK_UNIT_SIZE, ConsumeQueue
from rocketq.store.errors import StoreError, StoreFileError, StoreLockedError, describe
from rocketq.store.index import IndexService
from rocketq.store.queuetable import QueueTable
from rocketq.store.results import (
    BatchPutRequest,
    GetResult,
    GetStatus,
    PutRequest,
    PutResult,
    PutStatus,
    QueryResult,
    new_put_result,
)
from rocketq.store.settings import FlushDiskType, StoreSettings
from rocketq.store.stats import PUT_LATENCY_BOUNDS_MS, StoreStats

__all__ = [  # the façade's callers take the values it exchanges from here too
    "ArrivalListener", "BatchPutRequest", "GetResult", "GetStatus", "MessageStore", "PutRequest", "PutResult",
    "PutStatus", "QueryResult", "StoreError", "StoreState",
]

log = logging.getLogger(__name__)

MAX_QUERY_MESSAGES: Final = 64
"""QUERY_MESSAGE answers at most this many messages (RocketMQ's maxMsgsNumBatch)."""
_WRITE_ERRORS = LogLimiter(log)
"""Every put on a full disk fails the same way: one line per 10 s says so."""

ArrivalListener = Callable[[str, int, int], None]
"""``listener(topic, queue_id, next_queue_offset)``, called after messages land in a queue."""
RoundListener = Callable[[], None]
"""Called once after each round of arrival notices (every queue one append or one replicated
range touched), for a listener that gathers work across a round's queues."""
Waiting = Sized
"""What a listener keeps of the work an arrival may wake (held pulls, connected slaves): while
it is empty the listener would do nothing with a notice, so the store does not call it, and a
round in which no listener is called is no round (a lone send with no pull held: no listener
or round listener runs)."""
WaitingQueues = Container[tuple[str, int]]
"""The (topic, queue id) a listener has something waiting on (the pull service's held pulls by
queue): the store calls it for those queues only."""


class StoreState(enum.Enum):
    NEW = "new"
    OPEN = "open"
    RUNNING = "running"
    CLOSED = "closed"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MessageStore:
    """CommitLog + ConsumeQueues + IndexFiles + flush, recovery and retention tasks."""

    def __init__(
        self,
        settings: StoreSettings,
        store_host: tuple[str, int],
        *,
        clock: Callable[[], float] = time.time,
        fsync: flushing.Fsync = os.fdatasync,
        disk_usage: retention.DiskUsage = retention.disk_usage_ratio,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock`` (wall seconds) drives retention, ``fsync`` flushes, ``disk_usage`` the
        disk-full checks and ``monotonic`` the page-cache-busy timing; tests inject them."""
        settings.validate()
        self._monotonic = monotonic
        self.settings = settings
        self.store_host = store_host
        self._msg_id_prefix = msgid.offset_msg_id_prefix(store_host)
        self._clock = clock
        self._fsync = fsync
        self._sync_flush = settings.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self.puts_wait: Final = self._sync_flush
        """A put may wait after its append (SYNC_FLUSH's group commit): ``put_group_now`` is
        only for a store where this is False. An attribute, not a property: the broker reads
        it once per read of sends."""
        self._sync_timeout = settings.sync_flush_timeout / 1000
        self._delay_levels = settings.delay_levels_ms
        self.commitlog = CommitLog(settings.commitlog_dir, settings.mapped_file_size_commit_log)
        self.index = (IndexService(settings.index_dir, settings.max_hash_slot_num, settings.max_index_num,
                                   lambda: int(self._clock() * 1000))
                      if settings.message_index_enable else None)
        self.queues = QueueTable(settings.consumequeue_dir, settings.mapped_file_size_consume_queue)
        self._preparer = putting.Preparer(
            storedrecords.RecordEncoder(store_host, settings.max_message_size), self.queues,
            settings.mapped_file_size_commit_log,
            settings.mapped_file_size_commit_log - commitlog_mod.END_FILE_MIN_BLANK_LENGTH)
        self._plain_parts = self._preparer.plain_parts()
        """``prepare_plain``'s first three arguments, for ``put_one_now``."""
        self.flusher = flushing.CommitLogFlusher(self.commitlog, settings, fsync)
        self.retention = retention.Retention(settings, self.commitlog, self.queues.all, self.index,
                                             clock=clock, disk_usage=disk_usage, monotonic=monotonic)
        self._logic_flusher: flushing.LogicFlusher | None = None
        self._listeners: list[tuple[ArrivalListener, Waiting | None, WaitingQueues | None, str | None]] = []
        """(listener, what it has waiting, the queues something waits on, its one topic; each
        None when not asked): ``add_arrival_listener``."""
        self._round_listeners: list[RoundListener] = []
        self.busy_until = 0.0
        """The monotonic time until which puts are refused as OS_PAGECACHE_BUSY (a put held the
        CommitLog too long); 0.0 while no such period was ever set, so that a caller can skip
        ``is_os_page_cache_busy`` (the broker's check of every read of sends)."""
        self._write_failure: OSError | None = None
        self._lock_fd = -1
        self.state = StoreState.NEW
        self.stats = StoreStats()
        self.recovery_report: recovery.RecoveryReport | None = None
        self._reput: reput_mod.Reput | None = None
        """Dispatches replicated appends (a slave's); made on the first one."""
        self._pending: committed.PendingOffsets | None = None
        """Committed-only dispatch (DLedger, ``committed``): queue offsets appended ahead of dispatch."""
        self._dispatch_limit = -1
        """Committed-only dispatch: records end here at most; -1 = dispatch what arrives."""
        self.append_hook: committed.AppendHook | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def open(self) -> None:
        """Lock the directory, load and recover the files, mark the store as running (abort)."""
        if self.state is not StoreState.NEW:
            raise StoreError(f"open() on a store that is {self.state.value}")
        root = self.settings.root_dir
        try:
            root.mkdir(parents=True, exist_ok=True)
            self.settings.config_dir.mkdir(parents=True, exist_ok=True)
            self._lock()
        except OSError as exc:
            raise StoreError(f"cannot open the store at {root}: {describe(exc)}") from exc
        try:
            self._load_and_recover()
        except BaseException as exc:
            self._close_files()
            self._unlock()
            if isinstance(exc, OSError):  # a disk error, or no space to rebuild what recovery must
                raise StoreError(f"cannot recover the store at {root}: {describe(exc)}") from exc
            if isinstance(exc, ValueError):
                raise StoreError(f"cannot recover the store at {root}: {type(exc).__name__}: {exc}") from exc
            raise
        self.state = StoreState.OPEN

    def _lock(self) -> None:
        """flock ``lock`` and write our pid into it, so that a second process can name us."""
        fd = os.open(self.settings.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            by = f"pid {holder}" if holder.isdigit() else "another process"
            raise StoreLockedError(f"{self.settings.root_dir} is in use by {by} (it holds "
                                   f"{self.settings.lock_path})") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            os.close(fd)
            raise
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _load_and_recover(self) -> None:
        abnormal = self.settings.abort_path.exists()
        if abnormal:
            log.warning("store %s was not shut down cleanly: recovering from the checkpoint",
                        self.settings.root_dir)
        self.commitlog.load()
        for cq in consumequeue.load_all(self.settings.consumequeue_dir, self.settings.mapped_file_size_consume_queue):
            self.queues.add(cq)
        if self.index is not None:
            self.index.load()
        values = checkpoint.read(self.settings.checkpoint_path)
        self.recovery_report = recovery.recover(
            self.commitlog, self.queues.all(), self.queues.get_or_create, self.index, values, self._delay_levels,
            abnormal=abnormal, check_crc=self.settings.check_crc_on_recover)
        for cq in self.queues.all():
            cq.correct_min_offset(self.commitlog.min_offset)
        log.info("store recovered: %s", self.recovery_report)
        self._logic_flusher = flushing.LogicFlusher(
            self.commitlog, self.queues.all, self.index, self.settings, self.settings.checkpoint_path,
            values, self._fsync)
        self._write_abort_file()
        self.retention.check_disk()

    def _write_abort_file(self) -> None:
        fd = os.open(self.settings.abort_path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            self._fsync(fd)
        finally:
            os.close(fd)
        mappedfile.fsync_dir(self.settings.root_dir)

    async def start(self) -> None:
        """Start the flush and retention tasks; puts are accepted from now on."""
        if self.state is not StoreState.OPEN:
            raise StoreError(f"start() on a store that is {self.state.value}")
        self.flusher.start()
        assert self._logic_flusher is not None
        self._logic_flusher.start()
        self.retention.start()
        self.state = StoreState.RUNNING

    async def close(self) -> None:
        """Stop tasks, flush everything, write the checkpoint, release the directory. Idempotent."""
        if self.state in (StoreState.NEW, StoreState.CLOSED):
            self.state = StoreState.CLOSED
            return
        self.state = StoreState.CLOSED
        await self.retention.close()
        try:
            await self.flusher.flush()
        finally:
            await self.flusher.close()
        clean = self.flusher.failure is None
        if self._logic_flusher is not None:
            await self._logic_flusher.close()
            try:
                await self._logic_flusher.flush(thorough=True)
            except OSError as exc:
                log.error("final consume queue / checkpoint flush failed: %s", exc)
                clean = False
        self._close_files()
        if clean:
            self.settings.abort_path.unlink(missing_ok=True)
        else:
            log.error("store closed without a complete flush: the next start recovers as after a crash")
        self._unlock()

    def _close_files(self) -> None:
        for cq in self.queues.all():
            cq.close()
        if self.index is not None:
            self.index.close()
        self.commitlog.close()

    # --- queues -------------------------------------------------------------------------------

    def add_arrival_listener(self, listener: ArrivalListener, waiting: Waiting | None = None, *,
                             queues: WaitingQueues | None = None, topic: str | None = None) -> None:
        """``listener(topic, queue_id, next_offset)`` after messages land in a queue; with
        ``waiting`` (see ``Waiting``) only while that collection is not empty, with ``queues``
        only for a queue in it (``WaitingQueues``), with ``topic`` only for that topic's queues
        (the delay service's SCHEDULE_TOPIC_XXXX)."""
        self._listeners.append((listener, waiting, queues, topic))

    def remove_arrival_listener(self, listener: ArrivalListener) -> None:
        for i, (known, *_gates) in enumerate(self._listeners):
            if known == listener:
                del self._listeners[i]
                return

    def add_arrival_round_listener(self, listener: RoundListener) -> None:
        """``listener()`` after each round of arrival notices, once the round's queues have all
        been notified (the broker's held pulls write a round's answers to a consumer at once);
        a round is one in which some arrival listener was called."""
        self._round_listeners.append(listener)

    # --- put ----------------------------------------------------------------------------------

    async def put(self, request: PutRequest) -> PutResult:
        """Store one message; under SYNC_FLUSH, answer once it is on disk."""
        return await self._put((request,))

    async def put_batch(self, requests: Sequence[PutRequest] | BatchPutRequest) -> PutResult:
        """Store messages back to back under one append: consecutive offsets per queue, one
        store timestamp, one flush wait. All or none are stored."""
        return await self._put(requests)

    async def put_group(self, puts: Sequence[Sequence[PutRequest] | BatchPutRequest]) -> list[PutResult]:
        """Store several independent puts (one connection's sends of one read) as one append.

        Each put is what ``put_batch`` takes and gets its own result, exactly as if it had been
        put alone, in order: one that fails (illegal, too large) changes nothing of the others.
        What they share is the work around the records: one refusal check, one store
        timestamp, one index commit, one arrival notice per queue and, under SYNC_FLUSH, one
        wait for the group commit (to the end of the last put that waits).
        """
        return await self._put_many(puts)

    def put_group_now(self, puts: Sequence[Sequence[PutRequest] | BatchPutRequest]) -> list[PutResult]:
        """``put_group`` for a store whose puts never wait (``puts_wait`` is False, ASYNC_FLUSH):
        the same appends, results and statistics, without a coroutine per layer (the broker's
        send path calls this once per socket read)."""
        assert not self._sync_flush, "put_group_now on a SYNC_FLUSH store"
        if len(puts) == 1:  # one put of one message (a read of one send): put_one_now's fewer layers
            put = puts[0]
            if put.__class__ is list and len(put) == 1:
                return [self.put_one_now(put[0])]
        started = self._monotonic()
        results = self._append_many(puts)
        self._count_puts(results, started)
        return results

    def put_one_now(self, request: PutRequest) -> PutResult:
        """``put_group_now`` of one put of one message (a lone send): the same append, result,
        arrival notice and statistics, through fewer layers: no group lists, the plain put
        prepared by one C call (a put it declines is prepared by ``Preparer`` without asking it
        again), three clock reads (the put's latency ends with its append, where its hold of
        the CommitLog ends; the arrival notices that follow are not the put's)."""
        assert not self._sync_flush, "put_one_now on a SYNC_FLUSH store"
        if self._pending is not None:  # committed-only dispatch (DLedger): the general way
            return self.put_group_now(((request,),))[0]
        monotonic = self._monotonic
        started = monotonic()
        prepared: list[putting.PreparedMessage] | PutResult | None = self._refusal()
        if prepared is None:
            encode, by_topic, max_record = self._plain_parts
            try:  # the plain put prepared in one call; anything else (None) by the whole Preparer
                plain = putting.prepare_plain(encode, by_topic, max_record, request)
            except MessageIllegalError:  # (as _prepare reports it)
                plain = None
            prepared = [plain] if plain is not None else self._prepare((request,), plain_tried=True)
        if isinstance(prepared, PutResult):
            self._count_puts([prepared], started)
            return prepared
        began = monotonic()
        touched: dict[int, ConsumeQueue] = {}
        placed: list[PutResult] = []
        try:  # _append_singles of one put, inline
            now = _now_ms()
            if not groupappend.append_singles(self.commitlog, self.index, prepared, 0, now, self._msg_id_prefix,
                                              placed, touched):
                placed.append(self._append_one(prepared[0], now, touched))
        finally:
            ended = monotonic()
            self._note_hold_time(began, ended)
        put = placed[0]
        if not put.wrote_offsets:
            self._notify_queues(touched)
            self._count_puts([put], started)
            return put
        self._notify_queues(touched, put.queue_offsets[0] + 1)  # (its one queue now ends after its unit)
        stats = self.stats
        stats.put_requests += 1  # _count_puts of one stored message, without its loop
        stats.put_message_times += 1
        stats.put_message_bytes += put.wrote_sizes[0]
        stats.put_latency[bisect.bisect_left(PUT_LATENCY_BOUNDS_MS, (ended - started) * 1000)] += 1
        return put

    async def _put(self, requests: Sequence[PutRequest] | BatchPutRequest) -> PutResult:
        return (await self._put_many([requests]))[0]

    async def _put_many(self, puts: Sequence[Sequence[PutRequest] | BatchPutRequest]) -> list[PutResult]:
        started = self._monotonic()
        results = self._append_many(puts)
        if self._sync_flush:
            await self._wait_flushed(puts, results)
        self._count_puts(results, started)
        return results

    def _count_puts(self, results: list[PutResult], started: float) -> None:
        """The group's statistics in one update (every put of a group took the same time),
        written here rather than by a StoreStats method: a call costs more than the additions."""
        failed = messages = size = 0
        for result in results:
            offsets = result.wrote_offsets
            if offsets:
                messages += len(offsets)
                size += sum(result.wrote_sizes)
            else:
                failed += 1
        stats = self.stats
        stored = len(results) - failed
        stats.put_requests += stored
        stats.put_message_times += messages
        stats.put_message_bytes += size
        if failed:
            stats.put_failures += failed
        if stored:
            elapsed_ms = (self._monotonic() - started) * 1000
            stats.put_latency[bisect.bisect_left(PUT_LATENCY_BOUNDS_MS, elapsed_ms)] += stored

    async def _wait_flushed(self, puts: Sequence[Sequence[PutRequest] | BatchPutRequest],
                            results: list[PutResult]) -> None:
        """SYNC_FLUSH: hold the puts that want it (WAIT, the default) until they are on disk;
        one wait for all of them, to the end of the last one."""
        waiting: list[int] = []
        for i, (requests, result) in enumerate(zip(puts, results, strict=True)):
            if result.ok:
                last = requests.messages[-1][2] if isinstance(requests, BatchPutRequest) else requests[-1].properties
                if putting.wants_flush_wait(last):
                    waiting.append(i)
                else:
                    self.flusher.wakeup()
        if not waiting:
            return
        last_result = results[waiting[-1]]
        end = last_result.wrote_offsets[-1] + last_result.wrote_sizes[-1]
        if not await self.flusher.wait_flushed(end, self._sync_timeout):
            for i in waiting:
                self.stats.flush_timeouts += 1
                results[i] = replace(results[i], status=PutStatus.FLUSH_DISK_TIMEOUT)

    def _refusal(self) -> PutResult | None:
        if self.state is not StoreState.RUNNING:
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, error=f"message store is {self.state.value}")
        failure = self.flusher.failure or self._write_failure
        if failure is not None:
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, error=f"message store is not writeable: {failure}")
        if self.retention.disk_full and self.retention.refuses_writes():
            return PutResult(PutStatus.DISK_FULL, error="disk usage above diskSpaceWarningLevelRatio")
        if self.busy_until > 0.0 and self.is_os_page_cache_busy():  # the call only when it can be
            return PutResult(PutStatus.OS_PAGECACHE_BUSY, error="[PC_SYNCHRONIZED]broker busy")
        if self.append_hook is not None:
            why = self.append_hook.refusal()
            if why is not None:
                return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, error=why)
        return None

    def _prepare(self, requests: Sequence[PutRequest] | BatchPutRequest,
                 plain_tried: bool = False) -> list[putting.PreparedMessage] | PutResult:
        """``Preparer.prepare``, its errors as results (``plain_tried``: as there)."""
        if not len(requests):
            return PutResult(PutStatus.MESSAGE_ILLEGAL, error="empty batch")
        try:
            return self._preparer.prepare(requests, plain_tried)
        except PropertiesSizeExceededError as exc:
            return PutResult(PutStatus.PROPERTIES_SIZE_EXCEEDED, error=str(exc))
        except MessageIllegalError as exc:
            return PutResult(PutStatus.MESSAGE_ILLEGAL, error=str(exc))

    def _prepared_singles(self, puts: Sequence[Sequence[PutRequest] | BatchPutRequest]
                          ) -> list[putting.PreparedMessage] | None:
        """``_prepare`` of every put, when each is a list of one message (a read of single
        sends, the broker's common group), in one ``Preparer.prepare`` call: one prepared
        message per put. None when some put is not, or one of them cannot be stored: then each
        is prepared alone, so that only that one fails (``prepare`` changes no state but the
        queues it looks up)."""
        requests: list[PutRequest] = []
        for put in puts:
            if put.__class__ is not list or len(put) != 1:
                return None
            requests.append(put[0])
        try:
            return self._preparer.prepare(requests)
        except MessageIllegalError:  # (and PropertiesSizeExceededError) each alone, as _prepare
            return None

    def _append_many(self, puts: Sequence[Sequence[PutRequest] | BatchPutRequest]) -> list[PutResult]:
        """Append each put whole or not at all; one result per put, in order."""
        refusal = self._refusal()
        if refusal is not None:
            return [refusal] * len(puts)
        singles = self._prepared_singles(puts)
        pending = self._pending
        if pending is not None:  # committed-only dispatch (DLedger): units and index entries come at the commit
            each = [[message] for message in singles] if singles is not None else map(self._prepare, puts)
            return [p if isinstance(p, PutResult) else self._append_undispatched(p, pending) for p in each]
        prepared = () if singles is not None else [self._prepare(requests) for requests in puts]
        began = self._monotonic()
        now = _now_ms()
        touched: dict[int, ConsumeQueue] = {}
        """Every queue the group adds units to, notified once at the end."""
        try:
            if singles is not None:  # a read of single sends, each prepared: no result or batch to tell apart
                results = self._append_singles(singles, now, touched)
            else:
                results = [p if isinstance(p, PutResult)
                           else self._append_one(p[0], now, touched) if len(p) == 1
                           else self._append_batch(p, now, touched) if p.__class__ is putting.PreparedBatch
                           else self._append_prepared(p, now, touched) for p in prepared]
        finally:  # (each index add writes its file's header itself: nothing to commit here)
            self._note_hold_time(began)
        self._notify_queues(touched)
        return results

    def _append_prepared(self, prepared: list[putting.PreparedMessage], now: int,
                         notify: dict[int, ConsumeQueue]) -> PutResult:
        """Append one put's records, units and index entries; roll back all of them on failure."""
        commitlog, index, prefix = self.commitlog, self.index, self._msg_id_prefix
        offsets: list[int] = []
        sizes: list[int] = []
        queue_offsets: list[int] = []
        ids: list[str] = []
        start = commitlog.max_offset
        touched: dict[int, tuple[ConsumeQueue, int]] = {}
        """Queues this put adds units to, with their first new offset (where a rollback goes)."""
        try:
            for record, ts_pos, cq, unit, tag, uniq, keys, delay in prepared:
                queue_offset = cq.max_offset if unit else 0
                phys = commitlog.append(record, queue_offset, now, ts_pos)
                size = len(record)
                if unit:
                    if delay is not None:
                        tag = dispatch.delivery_time(delay, now, self._delay_levels)
                    key = id(cq)
                    if key not in touched:
                        touched[key] = (cq, queue_offset)
                    cq.append(phys, size, tag)
                if index is not None and (uniq or keys):
                    index.add(cq.topic, uniq, keys, phys, now)
                offsets.append(phys)
                sizes.append(size)
                queue_offsets.append(queue_offset)
                ids.append(f"{prefix}{phys:016X}")
        except (OSError, StoreFileError) as exc:
            # The disk is full, or a file could not be created: nothing of this put was
            # acknowledged, so none of it stays (a batch is stored whole or not at all).
            self._roll_back(start, touched.values())
            return self._append_failed(exc)
        for key, (cq, _first) in touched.items():
            notify[key] = cq
        return PutResult(PutStatus.PUT_OK, now, tuple(offsets), tuple(sizes), tuple(queue_offsets), tuple(ids))

    def _append_batch(self, prepared: putting.PreparedBatch, now: int,
                      notify: dict[int, ConsumeQueue]) -> PutResult:
        """``_append_prepared`` for one sender's batch to one queue (every SEND_BATCH_MESSAGE): the
        same appends, rollback and result. The records and their units go in with one call
        (``batchappend.append_batch_in_place``, in C) when nothing is to be rolled or reserved,
        then the index entries; otherwise (or for delayed units) the general path does it all."""
        cq = prepared.queue
        try:
            placed = None if prepared.scheduled else batchappend.append_batch_in_place(
                self.commitlog, cq if prepared.unit else None, prepared, now, prepared.ts_pos, self._msg_id_prefix)
        except OSError as exc:  # the C twin's write failed (I/O error): nothing was counted
            return self._append_failed(exc)
        if placed is None:
            return self._append_prepared(prepared, now, notify)
        offsets, sizes, queue_offsets, ids = placed
        index = self.index
        if index is not None:
            topic = cq.topic
            try:
                for (_record, _ts, _cq, _unit, _tag, uniq, keys, _delay), phys in zip(prepared, offsets, strict=True):
                    if uniq or keys:
                        index.add(topic, uniq, keys, phys, now)
            except (OSError, StoreFileError) as exc:  # a new index file on a full disk
                self._roll_back(offsets[0], ((cq, queue_offsets[0]),) if prepared.unit else ())
                return self._append_failed(exc)
        if prepared.unit:
            notify[id(cq)] = cq
        return new_put_result(PutStatus.PUT_OK, now, offsets, sizes, queue_offsets, ids, "", 0)

    def _append_singles(self, singles: list[putting.PreparedMessage], now: int,
                        notify: dict[int, ConsumeQueue]) -> list[PutResult]:
        """``_append_one`` of each message of ``singles``, each a put of its own, in order: as
        many at a time as fit in place go in with one call (``groupappend.append_singles``, in
        C), the put that does not (a roll, a file to create, a delay level, ...) by
        ``_append_one``, then the rest again."""
        results: list[PutResult] = []
        append = groupappend.append_singles
        commitlog, index, prefix = self.commitlog, self.index, self._msg_id_prefix
        count = len(singles)
        at = append(commitlog, index, singles, 0, now, prefix, results, notify)
        while at < count:
            results.append(self._append_one(singles[at], now, notify))
            at = append(commitlog, index, singles, at + 1, now, prefix, results, notify)
        return results

    def _append_one(self, prepared: putting.PreparedMessage, now: int, notify: dict[int, ConsumeQueue]) -> PutResult:
        """``_append_prepared`` for a put of one message (every single send): the same appends,
        rollback and result. The record and its unit go in with one call
        (``inplace.append_in_place``, in C) when nothing is to be rolled or reserved; otherwise
        the general path does it all."""
        record, ts_pos, cq, unit, tag, uniq, keys, delay = prepared
        if unit and delay is not None:
            tag = dispatch.delivery_time(delay, now, self._delay_levels)
        placed = inplace.append_in_place(self.commitlog, cq if unit else None, record, now, ts_pos, tag)
        if placed is None:
            return self._append_prepared([prepared], now, notify)
        phys, queue_offset = placed
        index = self.index
        if index is not None and (uniq or keys):
            try:
                index.add(cq.topic, uniq, keys, phys, now)
            except (OSError, StoreFileError) as exc:  # a new index file on a full disk
                self._roll_back(phys, ((cq, queue_offset),) if unit else ())
                return self._append_failed(exc)
        if unit:
            notify[id(cq)] = cq
        return new_put_result(PutStatus.PUT_OK, now, (phys,), (len(record),), (queue_offset,),
                              (f"{self._msg_id_prefix}{phys:016X}",), "", 0)

    def _append_undispatched(self, prepared: list[putting.PreparedMessage],
                             pending: committed.PendingOffsets) -> PutResult:
        """``_append_many`` under committed-only dispatch: the records go to the CommitLog with the
        queue offsets they will have; ``dispatch_to`` builds their units and index entries."""
        began = self._monotonic()
        now = _now_ms()
        commitlog, prefix = self.commitlog, self._msg_id_prefix
        start = commitlog.max_offset
        offsets: list[int] = []
        sizes: list[int] = []
        queue_offsets: list[int] = []
        taken: dict[int, tuple[ConsumeQueue, int]] = {}
        try:
            for record, ts_pos, cq, unit, _tag, _uniq, _keys, _delay in prepared:
                if unit:
                    queue_offset = pending.take(cq)
                    taken.setdefault(id(cq), (cq, queue_offset))
                else:
                    queue_offset = 0
                phys = commitlog.append(record, queue_offset, now, ts_pos)
                offsets.append(phys)
                sizes.append(len(record))
                queue_offsets.append(queue_offset)
            # inside the try: a hook that cannot record the append (its file) undoes it
            tag = self.append_hook.appended(start, commitlog.max_offset) if self.append_hook is not None else 0
        except (OSError, StoreFileError) as exc:
            self._roll_back(start, ())
            for cq, first in taken.values():
                pending.give_back(cq, first)
            return self._append_failed(exc)
        finally:
            self._note_hold_time(began)
        return PutResult(PutStatus.PUT_OK, now, tuple(offsets), tuple(sizes), tuple(queue_offsets),
                         tuple(f"{prefix}{phys:016X}" for phys in offsets), replication_index=tag)

    def _roll_back(self, start: int, touched: Iterable[tuple[ConsumeQueue, int]]) -> None:
        """Undo a failed append: the CommitLog ends at ``start`` again, each queue at its first
        new offset. Index entries already added stay (hits are checked against records)."""
        try:
            self.commitlog.rollback(start)
            for cq, first in touched:
                cq.rollback(first)
        except OSError as exc:
            # The files no longer match what was acknowledged: stop writing; a restart recovers.
            self._write_failure = exc
            log.error("cannot undo a failed append (%s): refusing writes until restart", exc)

    def _append_failed(self, exc: OSError | StoreFileError) -> PutResult:
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            self.retention.check_disk()
            _WRITE_ERRORS.log(logging.ERROR, "enospc", "put refused: no space left on device (%s)", exc)
            return PutResult(PutStatus.DISK_FULL, error=f"no space left on device: {exc}")
        _WRITE_ERRORS.log(logging.ERROR, "other", "put refused: append failed: %s", exc)
        return PutResult(PutStatus.CREATE_MAPPED_FILE_FAILED, error=str(exc))

    def _note_hold_time(self, began: float, ended: float | None = None) -> None:
        """Record a hold of the CommitLog from ``began`` to ``ended`` (now if None)."""
        if ended is None:
            ended = self._monotonic()
        held = ended - began
        held_ms = held * 1000
        if held_ms > self.stats.max_put_lock_ms:
            self.stats.max_put_lock_ms = held_ms
        if held_ms >= self.settings.os_page_cache_busy_timeout_mills:
            # The page cache could not keep up: refuse puts for as long as this one took.
            self.busy_until = ended + held
            log.warning("a put held the commitlog for %.0f ms: page cache busy", held_ms)

    def _notify_queues(self, touched: dict[int, ConsumeQueue], next_offset: int = -1) -> None:
        """``_notify`` of every queue a group added units to, in one call for the group (a
        read of single sends usually touches as many queues as it has sends). ``next_offset``:
        the ``max_offset`` of the one queue in ``touched``, when the caller knows it (a lone
        put); -1: each queue's is read. Only the listeners with something waiting (``Waiting``,
        ``WaitingQueues``) and taking the queue's topic are called; when none is, nothing is (no
        queue's offset read, no round listener)."""
        listeners = self._listeners
        called = False
        for cq in touched.values():
            topic = cq.topic
            key = (topic, cq.queue_id)
            offset = -1
            for listener, waiting, queues, only in listeners:
                if ((waiting is None or waiting) and (queues is None or key in queues)
                        and (only is None or only == topic)):
                    if offset < 0:
                        offset = cq.max_offset if next_offset < 0 else next_offset
                    called = True
                    try:
                        listener(topic, key[1], offset)
                    except Exception:
                        log.exception("message arrival listener failed")
        if not called:
            return
        for done in self._round_listeners:
            try:
                done()
            except Exception:
                log.exception("message arrival round listener failed")

    def _notify(self, cq: ConsumeQueue) -> None:
        self._notify_queues({id(cq): cq})

    def is_os_page_cache_busy(self) -> bool:
        """True while the broker should answer SYSTEM_BUSY instead of putting."""
        return self.busy_until > 0.0 and self._monotonic() < self.busy_until

    # --- get ----------------------------------------------------------------------------------

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int,
        max_bytes: int = reading.DEFAULT_MAX_TRANSFER_BYTES,
        tag_filter: Callable[[int], bool] | None = None,
        record_filter: Callable[[memoryview], bool] | None = None,
    ) -> GetResult:
        """Records of a queue from ``offset``, as RocketMQ's ``DefaultMessageStore.getMessage``.

        ``tag_filter`` sees each ConsumeQueue unit's tag hash code (the cheap first stage);
        ``record_filter`` then sees each remaining stored record (a SQL92 selector reads its
        properties), like RocketMQ's ``MessageFilter.isMatchedByCommitLog``.
        """
        return reading.get_messages(self.commitlog, self.queues.find(topic, queue_id), offset, max_nums, max_bytes,
                                    tag_filter, record_filter, self.stats)

    def queue_units(self, topic: str, queue_id: int, offset: int, limit: int) -> list[tuple[int, int, int]]:
        """Up to ``limit`` raw units (CommitLog offset, size, tag code) of a queue from ``offset``.

        For the broker's own readers (the delay levels' delivery): unlike ``get_messages`` this
        is not a pull, so it counts in no statistic. Empty when ``offset`` is not readable.
        """
        cq = self.queues.find(topic, queue_id)
        if cq is None or not cq.min_offset <= offset < cq.max_offset:
            return []
        return list(cq.units(offset, limit))

    # --- offsets and times --------------------------------------------------------------------

    def get_max_offset(self, topic: str, queue_id: int) -> int:
        """Next logical offset to be written in the queue (0 for an unknown queue)."""
        cq = self.queues.find(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    def get_min_offset(self, topic: str, queue_id: int) -> int:
        cq = self.queues.find(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def get_store_time(self, topic: str, queue_id: int, offset: int) -> int:
        """Store timestamp of the message at ``offset``, or -1."""
        cq = self.queues.find(topic, queue_id)
        unit = cq.unit(offset) if cq is not None else None
        if unit is None or unit[1] == BLANK_UNIT_SIZE:
            return -1
        return self.commitlog.store_timestamp_at(unit[0])

    def get_earliest_store_time(self, topic: str, queue_id: int) -> int:
        return self.get_store_time(topic, queue_id, self.get_min_offset(topic, queue_id))

    def get_offset_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """First offset whose message was stored at or after ``timestamp``; the max offset when
        every message is older, the min offset when every message is newer."""
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return 0
        low, high = cq.min_offset, cq.max_offset
        while low < high:
            middle = (low + high) // 2
            if self.get_store_time(topic, queue_id, middle) < timestamp:
                low = middle + 1
            else:
                high = middle
        return low

    def look_message_by_offset(self, phy_offset: int) -> memoryview | None:
        """The stored record at a CommitLog offset (VIEW_MESSAGE_BY_ID), validated, or None."""
        if phy_offset < self.commitlog.min_offset:
            return None
        return self.commitlog.read_record(phy_offset)

    def query_message(self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int) -> QueryResult:
        """Messages of ``topic`` indexed under ``key`` (a KEYS entry or a unique key), newest first.

        Index hits are checked against the records, so hash collisions never leak other messages.
        """
        if self.index is None:
            return QueryResult([], 0, 0)
        limit = max(1, min(max_num, MAX_QUERY_MESSAGES))
        offsets, last_ts, last_phy = self.index.query(topic, key, limit, begin_ts, end_ts)
        buffers = []
        for phys in offsets:
            view = self.look_message_by_offset(phys)
            if view is None:
                continue
            try:
                record = storedrecords.decode_stored_record(view, decompress=False)
            except messageerrors.MessageFormatError:
                continue
            if record.topic == topic and (record.uniq_key == key or key in record.keys):
                buffers.append(view)
        return QueryResult(buffers, last_ts, last_phy)

    # --- topics and state ---------------------------------------------------------------------

    def delete_topics(self, names: Iterable[str]) -> int:
        """Remove the ConsumeQueues of these topics (their CommitLog records age out normally)."""
        removed = 0
        for name in names:
            if not self.queues.delete_topic(name):
                continue
            removed += 1
            log.info("deleted consume queues of topic %s", name)
        return removed

    @property
    def min_phy_offset(self) -> int:
        return self.commitlog.min_offset

    @property
    def max_phy_offset(self) -> int:
        return self.commitlog.max_offset

    def topic_queue_table(self) -> dict[str, dict[int, int]]:
        """topic -> {queue id: max offset}."""
        return self.queues.max_offsets()

    async def flush(self) -> None:
        """Flush the CommitLog and every queue and index file now, and write the checkpoint."""
        await self.flusher.flush()
        if self._logic_flusher is not None:
            await self._logic_flusher.flush(thorough=True)

    # --- replication (a slave's side; rocketq.ha drives it) ------------------------------------

    def append_replicated(self, phys_offset: int, data: bytes | memoryview) -> int:
        """Append bytes a master sent at ``phys_offset`` (this log's end), dispatch the records
        that are now complete, wake held pulls; returns the new end of the log.

        Raises ``commitlog.ReplicaOffsetError`` when the offset is not this log's end, and
        ``reput.ReplicaRecordError`` when the bytes are not the master's records (the caller
        truncates to ``dispatched_offset`` and asks again).
        """
        if self.state is not StoreState.RUNNING:
            raise StoreError(f"replicated append on a store that is {self.state.value}")
        if self._reput is None:
            self._reput = self._new_reput()
        self.commitlog.append_replicated(phys_offset, data)
        if self._sync_flush:
            self.flusher.wakeup()
        if self._pending is None:  # committed-only dispatch waits for dispatch_to
            self._run_reput(self._reput, -1)
        return self.commitlog.max_offset

    def _new_reput(self) -> reput_mod.Reput:
        return reput_mod.Reput(self.commitlog, self.queues.get_or_create, self.index, self._delay_levels)

    def _run_reput(self, reput: reput_mod.Reput, limit: int) -> None:
        touched = reput.run(limit)
        if touched:  # one round for the whole replicated range, as for an own append
            self._notify_queues({id(cq): cq for cq in touched})

    # --- committed-only dispatch (DLedger; see ``committed``) ----------------------------------

    def dispatch_committed_only(self, committed_end: int) -> None:
        """From now on appends (own and replicated) are dispatched only by ``dispatch_to``.

        What recovery dispatched beyond ``committed_end`` (a restart recovers the whole log) is
        taken back: queue units and index entries of records that may never commit.
        """
        if self._pending is not None:
            return
        end = max(min(committed_end, self.commitlog.max_offset), self.commitlog.min_offset)
        self._undispatch_beyond(end)
        self._reput = self._new_reput()
        self._reput.offset = self._dispatch_limit = end
        self._pending = committed.PendingOffsets()

    def dispatch_to(self, end: int) -> None:
        """Committed-only dispatch: build the queue units and index entries of every record
        below ``end`` (the committed position) and wake the pulls they satisfy."""
        assert self._pending is not None and self._reput is not None, "dispatch_committed_only first"
        self._dispatch_limit = max(self._dispatch_limit, end)
        self._run_reput(self._reput, self._dispatch_limit)

    def cut_tail(self, end: int) -> None:
        """Committed-only dispatch: forget the undispatched records from ``end`` on (a Raft
        log's uncommitted tail). Synchronous: nothing derived from them exists yet."""
        assert self._pending is not None, "dispatch_committed_only first"
        if end < self.dispatched_offset:
            raise StoreError(f"cannot cut the commitlog at {end}: records up to {self.dispatched_offset} "
                             "are dispatched (committed)")
        if end >= self.commitlog.max_offset:
            return
        log.warning("store: cutting the undispatched commitlog tail from %d to %d", self.commitlog.max_offset, end)
        self.commitlog.rollback(end)
        self._pending.clear()

    def reset_pending_offsets(self) -> None:
        """Every record is dispatched (a leader about to write): queue offsets come from the
        queues again."""
        if self._pending is not None:
            self._pending.clear()

    def _undispatch_beyond(self, end: int) -> None:
        for cq in self.queues.all():
            cq.truncate_beyond(end)
        if self.index is not None:
            rebuild = self.index.drop_unreliable(checkpoint_ts=1 << 62, phys_end=end)
            if rebuild is not None:
                recovery.redispatch(self.commitlog, max(rebuild, self.commitlog.min_offset), end,
                                    self.queues.get_or_create, self.index, self._delay_levels)

    @property
    def dispatched_offset(self) -> int:
        """End of the records whose ConsumeQueue units and index entries exist."""
        return self._reput.offset if self._reput is not None else self.commitlog.max_offset

    async def truncate(self, phys_offset: int) -> int:
        """Cut the log back to ``phys_offset`` (a slave ahead of its master, or a replicated
        range that was not records), with the queue units and index entries of what is cut.
        Returns how many messages (ConsumeQueue units) were cut."""
        if phys_offset >= self.commitlog.max_offset:
            return 0
        units_before = sum(cq.max_offset for cq in self.queues.all())
        log.warning("store: truncating the commitlog from %d to %d", self.commitlog.max_offset, phys_offset)
        await self.flusher.flush()  # what stays must be on disk: set_end takes it as flushed
        self.commitlog.set_end(phys_offset)
        self._undispatch_beyond(phys_offset)
        if self._reput is not None:
            self._reput.offset = min(self._reput.offset, phys_offset)
        return units_before - sum(cq.max_offset for cq in self.queues.all())

    async def end_replication(self) -> int:
        """Make a slave's store a master's: cut a half-received record at the tail (it will never
        be completed) and let puts dispatch again. Returns the bytes cut."""
        cut = self.commitlog.max_offset - self.dispatched_offset
        if cut > 0:
            await self.truncate(self.dispatched_offset)
        self._reput = None
        return cut

    def runtime_info(self) -> dict[str, str]:
        """The store's part of GET_BROKER_RUNTIME_INFO, with RocketMQ's key names."""
        s = self.stats
        return {
            "putMessageTimesTotal": str(s.put_message_times),
            "putMessageSizeTotal": str(s.put_message_bytes),
            "putMessageAverageSize": str(s.average_put_size),
            "putMessageDistributeTime": s.latency_text(),
            "putMessageFailedTimes": str(s.put_failures),
            "getMessageTimesTotalFound": str(s.get_message_times_found),
            "getMessageTimesTotalMiss": str(s.get_message_times_miss),
            "getMessageTransferedMsgCount": str(s.get_message_transferred),
            "commitLogDiskRatio": f"{self.retention.disk_ratio:.4f}",
            "commitLogMinOffset": str(self.commitlog.min_offset),
            "commitLogMaxOffset": str(self.commitlog.max_offset),
            "dispatchBehindBytes": "0",
            "pageCacheLockTimeMills": str(int(s.max_put_lock_ms)),
            "runtime": self.state.value,
        }

