"""Messages: by topic and time range (paged), by key, by message id; one message's body, properties,
where it is stored and its trace; resending it to a group; a group's dead letters (list, resend,
export).

Finding uses ``rocketq.admin.messages`` (pulls with the tools group, which commits nothing, and
the brokers' key index). "Resend to a group" stores a copy in the group's retry topic
``%RETRY%group`` (``rocketq.admin.deadletters.retry_copy``): only that group gets it again, with a
full set of retries, and no running consumer needs to be reached. The same is done for dead
letters.

Time-range pages resume where the previous page stopped (a cursor of queue and offset in the
"next page" link, with the range's end pinned to the millisecond), so pages never overlap or skip
messages while the topic takes new ones, whatever the route order.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from typing import Any, Final

import aiohttp_jinja2
import orjson
from aiohttp import web

from rocketq.admin import deadletters, messages
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import NotFoundError
from rocketq.console import bodies, forms, keys
from rocketq.console.failures import InvalidInput
from rocketq.console.pages.common import audited, done, unless_missing
from rocketq.protocol import codes, traces
from rocketq.protocol.messagetypes import MessageExt

routes = web.RouteTableDef()

PAGE_SIZE: Final = 50
MAX_SCANNED: Final = 2000
"""Dead letters listed or resent in one go."""
MAX_BY_KEY: Final = 64
DEFAULT_SPAN_S: Final = 3600
"""The time range the search form starts with: the last hour."""


@routes.get("/messages")
@aiohttp_jinja2.template("messages.html")
async def search(request: web.Request) -> dict[str, Any]:
    query = request.query
    mode = query.get("mode", "time")
    context: dict[str, Any] = {"mode": mode, "q": dict(query), "rows": None, "page": 0, "more": False,
                               "form": None}
    if "topic" not in query:
        now = time.time()
        context["q"] = {"begin": local_minute(now - DEFAULT_SPAN_S), "end": local_minute(now + 60)}
        return context
    admin = request.app[keys.ADMIN]
    topic = forms.topic(query)
    if mode == "key":
        context["rows"] = await messages.query_by_key(admin, topic, forms.text(query, "key", max_length=255),
                                                      max_num=MAX_BY_KEY)
    elif mode == "id":
        context["rows"] = await find(admin, topic, forms.text(query, "id", max_length=128))
    else:
        page = forms.integer(query, "page", low=0, high=1_000_000, default=0)
        begin, end = forms.moment(query, "begin"), forms.moment(query, "end")
        resume = Resume.parse(query["after"]) if query.get("after") else None
        rows, after = await by_time(admin, topic, begin, end, resume)
        context.update(rows=rows, page=page, more=after is not None,
                       next_query={**query, "end": str(end), "page": str(page + 1),
                                   "after": after.encode() if after else ""},
                       first_query={**query, "end": str(end), "page": "0", "after": ""},
                       form={"begin": local_second(begin / 1000), "end": local_second(end / 1000)})
    return context


@dataclasses.dataclass(frozen=True)
class Resume:
    """Where the next time page starts. Queues are read in (broker, queue id) order: those before
    this queue are done, this one resumes at ``offset``."""

    broker_name: str
    queue_id: int
    offset: int

    def encode(self) -> str:
        return f"{self.broker_name}:{self.queue_id}:{self.offset}"

    @classmethod
    def parse(cls, raw: str) -> Resume:
        head, _, offset_text = raw.rpartition(":")
        broker_name, _, queue_text = head.rpartition(":")
        try:
            queue_id, offset = int(queue_text), int(offset_text)
        except ValueError:
            raise InvalidInput(f"after: {raw!r} is not broker:queue:offset") from None
        if not broker_name or queue_id < 0 or offset < 0:
            raise InvalidInput(f"after: {raw!r} is not broker:queue:offset")
        return cls(broker_name, queue_id, offset)

    @property
    def key(self) -> tuple[str, int]:
        return self.broker_name, self.queue_id


def _queue_key(r: messages.QueueRange) -> tuple[str, int]:
    return r.queue.broker_name, r.queue.queue_id


async def by_time(admin: AdminClient, topic: str, begin: int, end: int,
                  resume: Resume | None = None) -> tuple[list[MessageExt], Resume | None]:
    """One page of the messages stored in [begin, end], and where the next page starts (None: last)."""
    if end < begin:
        raise InvalidInput("end: before begin")
    ranges = sorted(await messages.scan_ranges(admin, topic, begin, end), key=_queue_key)
    if resume is not None:
        ranges = [dataclasses.replace(r, begin=max(r.begin, resume.offset)) if _queue_key(r) == resume.key else r
                  for r in ranges if _queue_key(r) >= resume.key]
    rows: list[MessageExt] = []
    async for queue, record in messages.scan(admin, ranges, end_ms=end):
        if record.store_timestamp < begin:
            continue
        if len(rows) == PAGE_SIZE:
            return rows, Resume(queue.broker_name, queue.queue_id, record.queue_offset)
        rows.append(record)
    return rows, None


def local_minute(seconds: float) -> str:
    """What an HTML datetime-local input shows: local time to the minute."""
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%dT%H:%M")


def local_second(seconds: float) -> str:
    """A datetime-local value to the second (the input's ``step=1`` shows seconds)."""
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%dT%H:%M:%S")


async def find(admin: AdminClient, topic: str, msg_id: str) -> list[MessageExt]:
    """Messages with this message id (UNIQ_KEY) or offset message id."""
    return await messages.query_by_unique_key(admin, topic, msg_id)


async def one(admin: AdminClient, topic: str, msg_id: str) -> MessageExt:
    found = await find(admin, topic, msg_id)
    if not found:
        raise NotFoundError(f"no message {msg_id} in topic {topic}")
    return found[-1]


async def trace_of(admin: AdminClient, msg_id: str) -> list[traces.TraceRecord] | None:
    """The message's trace records; None when there is no trace topic at all."""
    return await unless_missing(messages.query_trace(admin, msg_id))


@routes.get("/messages/view")
@aiohttp_jinja2.template("message.html")
async def message_page(request: web.Request) -> dict[str, Any]:
    admin = request.app[keys.ADMIN]
    topic = forms.topic(request.query)
    record = await one(admin, topic, forms.text(request.query, "id", max_length=128))
    return {"m": record, "topic": topic, "body": bodies.views(record.body),
            "properties": sorted(record.properties.items()), "trace": await trace_of(admin, record.msg_id),
            "store_host": f"{record.store_host[0]}:{record.store_host[1]}",
            "born_host": f"{record.born_host[0]}:{record.born_host[1]}"}


@routes.post("/messages/resend")
async def resend(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    topic, msg_id, group = forms.topic(form), forms.text(form, "id", max_length=128), forms.group(form)
    admin = request.app[keys.ADMIN]
    record = await one(admin, topic, msg_id)
    await require_retry_topic(admin, group)
    result = await audited(request, f"resend message to {group}", f"{topic} {msg_id}",
                           messages.send(admin, deadletters.retry_copy(record, group)))
    return done(request, f"Message {msg_id} resent to {group} ({result.status.name}).",
                f"/messages/view?topic={topic}&id={msg_id}")


async def require_retry_topic(admin: AdminClient, group: str) -> None:
    """A group's consumers create its retry topic with their first heartbeat; without it the group
    never consumed, and a send would auto-create a topic of the wrong shape."""
    if await unless_missing(admin.topic_route(codes.retry_topic(group))) is None:
        raise InvalidInput(f"group: {group} has no retry topic ({codes.retry_topic(group)}): "
                           "no consumer of it ever ran")


@routes.get("/messages/dlq")
@aiohttp_jinja2.template("dlq.html")
async def dead_letters(request: web.Request) -> dict[str, Any]:
    group = forms.group(request.query)
    letters = await list_or_none(request.app[keys.ADMIN], group)
    return {"group": group, "letters": letters, "dlq_topic": codes.dlq_topic(group)}


async def list_or_none(admin: AdminClient, group: str) -> list[deadletters.DeadLetter] | None:
    return await unless_missing(deadletters.list_dead_letters(admin, group, max_num=MAX_SCANNED))


@routes.post("/messages/dlq/resend")
async def resend_dead_letters(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    group = forms.group(form)
    chosen = forms.text(form, "id", required=False, max_length=128)
    ids = frozenset({chosen}) if chosen else None
    sent = await audited(request, "resend dead letters", f"{group} {chosen or 'all'}",
                         deadletters.resend(request.app[keys.ADMIN], group, ids, max_num=MAX_SCANNED))
    if not sent:
        raise NotFoundError(f"no dead letter {chosen} of {group}" if chosen else f"{group} has no dead letter")
    return done(request, f"Resent {len(sent)} dead letter(s) of {group} to {codes.retry_topic(group)}.",
                f"/messages/dlq?group={group}")


@routes.get("/messages/dlq/export")
async def export_dead_letters(request: web.Request) -> web.Response:
    group = forms.group(request.query)
    letters = await list_or_none(request.app[keys.ADMIN], group) or []
    data = [{"msgId": d.record.msg_id, "offsetMsgId": d.record.offset_msg_id, "topic": d.record.topic,
             "brokerName": d.queue.broker_name, "queueId": d.queue.queue_id, "queueOffset": d.record.queue_offset,
             "storeTimestamp": d.record.store_timestamp, "reconsumeTimes": d.record.reconsume_times,
             "properties": d.record.properties, "body": d.record.body.decode("utf-8", errors="replace")}
            for d in letters]
    return web.Response(body=orjson.dumps(data, option=orjson.OPT_INDENT_2), content_type="application/json",
                        headers={"Content-Disposition": f'attachment; filename="dlq-{group}.json"'})
