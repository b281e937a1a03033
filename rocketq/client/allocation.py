"""Allocation strategies: which of a topic's queues this consumer takes, given the whole group.

Every consumer of a group runs the same pure function over the same sorted queue list and the
same sorted consumer-id list, so they agree on a partition of the queues without talking to
each other. The results equal RocketMQ's strategies exactly, so Java and Python consumers can
share a group:

- ``allocate_averagely`` (``AllocateMessageQueueAveragely``, the default): contiguous blocks;
  the first ``len(queues) % len(consumers)`` consumers get one extra queue. 16 queues over 3
  consumers: q0-q5, q6-q10, q11-q15.
- ``allocate_averagely_by_circle`` (``AllocateMessageQueueAveragelyByCircle``): deal the queues
  like cards. 16 queues over 3 consumers: q0,3,..,15 / q1,4,..,13 / q2,5,..,14.

A consumer that is not (yet) in the list gets nothing: the broker has not seen its heartbeat,
and the next rebalance will include it. Consumers beyond the queue count get nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rocketq.client.queues import MessageQueue

AllocateStrategy = Callable[[str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]
"""``(current consumer id, all queues sorted, all consumer ids sorted) -> this consumer's queues``."""


def _check(current: str, queues: Sequence[MessageQueue], consumers: Sequence[str]) -> int:
    """The consumer's index, or -1 when it has nothing to take."""
    if not current:
        raise ValueError("the current consumer id is empty")
    if not queues or current not in consumers:
        return -1
    return consumers.index(current)


def allocate_averagely(current: str, queues: Sequence[MessageQueue], consumers: Sequence[str]) -> list[MessageQueue]:
    index = _check(current, queues, consumers)
    if index < 0:
        return []
    total, members = len(queues), len(consumers)
    mod = total % members
    if total <= members:
        size = 1
    elif mod > 0 and index < mod:
        size = total // members + 1
    else:
        size = total // members
    start = index * size if mod > 0 and index < mod else index * size + mod
    count = min(size, total - start)
    return [queues[(start + i) % total] for i in range(max(count, 0))]


def allocate_averagely_by_circle(
    current: str, queues: Sequence[MessageQueue], consumers: Sequence[str]
) -> list[MessageQueue]:
    index = _check(current, queues, consumers)
    if index < 0:
        return []
    return [queues[i] for i in range(index, len(queues), len(consumers))]


STRATEGIES: dict[str, AllocateStrategy] = {
    "AVG": allocate_averagely,
    "AVG_BY_CIRCLE": allocate_averagely_by_circle,
}
"""RocketMQ's strategy names (``getName()``), for configuration by name."""
