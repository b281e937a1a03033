"""SQL92 subscriptions on the broker: compile at registration, refuse or filter pulls.

RocketMQ filters a SQL92 subscription on the broker, by message properties, in two places it
keeps apart and rocketq keeps apart too:

- **Registration.** Every consumer heartbeat hands its subscriptions to ``ConsumerFilters``
  (RocketMQ's ``ConsumerFilterManager``), which compiles each SQL92 expression once per
  subscription version. An expression that does not compile is logged and *not stored*, and the
  heartbeat still succeeds: a push consumer's pulls then get FILTER_DATA_NOT_EXIST (27).
- **Pulls.** A push consumer's pull names only the subscription version; the broker filters with
  the registered selector (FILTER_DATA_NOT_LATEST, 28, if the registered one is older). A pull or
  lite-pull consumer sends its expression in the pull itself (the subscription flag); that text
  is compiled through the shared cache, and one that does not compile matches *everything*, as
  in RocketMQ, where the null filter data it yields passes every message.

``enablePropertyFilter`` is off by default, as in RocketMQ: SQL92 pulls are then answered
SYSTEM_ERROR, after the checks above. The ConsumeQueue's tag hash code is no help for SQL, so the
store hands each candidate record to ``record_filter``, which reads only its properties. RocketMQ's
optional bloom-filter bitmaps (``enableCalcFilterBitMap``) are not built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

import orjson

from rocketq.filter import sql92
from rocketq.protocol import messageerrors, sharedbodies, storedrecords
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.subscription import SubscriptionData, SubscriptionError
from rocketq.ratelimit import LogLimiter
from rocketq.remoting.connection import Connection, Handler

log = logging.getLogger(__name__)

NOT_SUPPORTED: Final = "The broker does not support consumer to filter message by SQL92"
FILTER_DATA_MISSING: Final = "The broker's consumer filter data is not exist!Your expression may be wrong!"
FILTER_DATA_STALE: Final = "The broker's consumer filter data is not latest"
PARSE_FAILED: Final = "parse the consumer's subscription failed"

RecordFilter = Callable[[memoryview], bool]


@dataclass(frozen=True, slots=True)
class FilterData:
    """One group's compiled selector for one topic, and the client's subscription version."""

    expression: str
    sub_version: int
    selector: sql92.Selector


def record_filter(selector: sql92.Selector | None) -> RecordFilter:
    """A store-side predicate over raw stored records; None (an uncompilable pull expression)
    passes everything. A record whose properties do not decode is no match."""
    if selector is None:
        return _everything

    def matches(record: memoryview) -> bool:
        try:
            props = storedrecords.stored_properties(record)
        except messageerrors.MessageFormatError:
            return False
        return selector.matches(props)

    return matches


def _everything(record: memoryview) -> bool:
    return True


class ConsumerFilters:
    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._table: dict[tuple[str, str], FilterData] = {}
        self._refusals = LogLimiter(log)

    # --- registration ---------------------------------------------------------------------

    def register(self, group: str, subscriptions: Iterable[SubscriptionData], client_id: str = "?") -> None:
        """A heartbeat's subscriptions: compile new SQL92 ones; forget the group's other topics."""
        sql_topics: set[str] = set()
        for sub in subscriptions:
            if sub.is_tag_type:
                continue
            sql_topics.add(sub.topic)
            key = (sub.topic, group)
            known = self._table.get(key)
            if known is not None and known.sub_version >= sub.sub_version:
                continue  # RocketMQ recompiles only for a newer subscription version
            try:
                selector = sql92.compile_selector(sub.sub_string)
            except sql92.FilterSyntaxError as exc:
                self._refusals.warning(
                    f"{group}/{sub.topic}", "SQL92 subscription of client %s, group %s, topic %s does not compile "
                    "(not registered, its pulls get FILTER_DATA_NOT_EXIST): %s", client_id, group, sub.topic, exc)
                continue
            self._table[key] = FilterData(sub.sub_string, sub.sub_version, selector)
        for key in [k for k in self._table if k[1] == group and k[0] not in sql_topics]:
            del self._table[key]

    def get(self, group: str, topic: str) -> FilterData | None:
        return self._table.get((topic, group))

    # --- pulls ----------------------------------------------------------------------------

    def check_pull(self, group: str, sub: SubscriptionData, *, in_request: bool) -> tuple[int, str] | None:
        """RocketMQ's refusal (code, remark) of a SQL92 pull, in its order, or None to go on."""
        if in_request:
            if not sub.sub_string.strip():
                return ResponseCode.SUBSCRIPTION_PARSE_FAILED, PARSE_FAILED
        else:
            data = self.get(group, sub.topic)
            if data is None:
                return ResponseCode.FILTER_DATA_NOT_EXIST, FILTER_DATA_MISSING
            if data.sub_version < sub.sub_version:
                return ResponseCode.FILTER_DATA_NOT_LATEST, FILTER_DATA_STALE
        if not self.enabled:
            return ResponseCode.SYSTEM_ERROR, NOT_SUPPORTED
        return None

    def pull_filter(self, group: str, sub: SubscriptionData, *, in_request: bool) -> RecordFilter:
        """The record predicate of a pull that ``check_pull`` let through."""
        if in_request:
            try:
                return record_filter(sql92.compile_selector(sub.sub_string))
            except sql92.FilterSyntaxError:
                return record_filter(None)
        data = self.get(group, sub.topic)
        return record_filter(data.selector if data is not None else None)

    # --- CHECK_CLIENT_CONFIG --------------------------------------------------------------

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config}

    async def check_client_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """A consumer's start-up check of its subscription (Java clients send it for SQL92)."""
        try:
            body = sharedbodies.obj(orjson.loads(request.body or b"null"), "CheckClientRequestBody")
            sub = SubscriptionData.from_json(body.get("subscriptionData"))
        except (orjson.JSONDecodeError, sharedbodies.BodyError, SubscriptionError) as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, f"bad CheckClientRequestBody: {exc}")
        if sub.is_tag_type:
            return request.response(ResponseCode.SUCCESS)
        if not self.enabled:
            return request.response(ResponseCode.SYSTEM_ERROR, NOT_SUPPORTED)
        try:
            sql92.compile_selector(sub.sub_string)
        except sql92.FilterSyntaxError as exc:
            return request.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"{type(exc).__name__}: {exc}")
        return request.response(ResponseCode.SUCCESS)
