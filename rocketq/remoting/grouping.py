"""Handlers that take all the requests of one read at once.

A busy producer's connection delivers many SEND_MESSAGE requests per socket read (the
client writes every send of a loop turn in one write). Handled one by one, each pays for
what could be shared: the store's refusal checks and clocks, an index commit, a flush wait
under SYNC_FLUSH, a write of its answer. A ``GroupedHandler`` is an ordinary handler (it can
be called for one request like any other) that also offers ``group``: the connection hands it
every consecutive request of one read whose code maps to it, and writes the answers together.

What the connection guarantees (``Connection.data_received``):

* requests are grouped only while consecutive: a request for another handler ends the group,
  which runs first, so the order of a connection's requests is the order they take effect;
* a group holds at most ``MAX_GROUP`` requests (the answers of a long read still leave in
  slices, so the peer works on the first while the rest are handled);
* a group is handled eagerly like a single request (a task only if it waits, e.g. for the
  group commit) and counts as its size against ``MAX_REQUESTS_IN_FLIGHT``;
* ``group`` answers every request: one answer per request, in order — a response, an encoded
  response frame (``bytes``, e.g. built from a template), or None for "answered later";
  oneway requests' answers are dropped. If ``group`` raises, every request is answered
  SYSTEM_ERROR, as a single handler's failure is.

A handler may also offer ``now``: the same group answered by a plain function, for the common
case where nothing can wait (the broker's ASYNC_FLUSH sends to existing topics without a
slave). It returns the answers, or None — before anything took effect — when some request
needs what only ``group`` can do (a wait); the connection then runs ``group``. A read of one
sync send is answered this way without a coroutine, an eager step and the bookkeeping around
them (docs/benchmarks.md, "Round 7 (broker send)").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Final

from rocketq.protocol.frames import RemotingCommand

if TYPE_CHECKING:
    from rocketq.remoting.connection import Connection

MAX_GROUP: Final = 16
"""Requests handled as one group. Larger groups share more but answer later: a read of 30
sync sends answered all at once made client and broker take turns (docs/benchmarks.md)."""

FrameParts = bytes | list[bytes | memoryview]
"""An encoded answer: its frame as one bytes, or as buffers written in order (a head, then views)."""
Answer = RemotingCommand | FrameParts | None
"""A grouped request's answer: a response, an encoded frame, or None (answered later)."""
GroupFunction = Callable[["Connection", list[RemotingCommand]], Awaitable[Sequence[Answer]]]
SingleFunction = Callable[["Connection", RemotingCommand], Awaitable[RemotingCommand | None]]
NowFunction = Callable[["Connection", list[RemotingCommand]], "Sequence[Answer] | None"]
"""``group`` without waiting: the answers, or None (nothing done: run ``group`` instead)."""


class GroupedHandler:
    """A handler for one request (``__call__``) that can also take a group (``group``), and
    maybe answer it at once (``now``)."""

    __slots__ = ("_single", "group", "now")

    def __init__(self, single: SingleFunction, group: GroupFunction, now: NowFunction | None = None) -> None:
        self._single = single
        self.group = group
        self.now = now

    def __call__(self, conn: Connection, request: RemotingCommand) -> Awaitable[RemotingCommand | None]:
        return self._single(conn, request)
