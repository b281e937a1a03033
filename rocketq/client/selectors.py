"""Choosing the queue a message goes to.

By default a producer spreads messages round robin over a topic's publish queues, starting at a
random index per topic (so many producers do not all hit queue 0 first), and skips broker groups
that latency fault tolerance marks unavailable. A retry avoids the broker that just failed.

For ordered messages the application chooses: a *selector* maps the queue list to one queue.
``hash_by_key("order-42")`` uses Java's ``String.hashCode`` like RocketMQ's
``SelectMessageQueueByHash``, so a Java and a Python producer put the same key on the same queue.
A selected send is never moved to another queue on failure: that would break the order.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from rocketq.client.faults import LatencyFaultTolerance
from rocketq.client.queues import MessageQueue
from rocketq.protocol import javahash, nativecodecs

QueueSelector = Callable[[Sequence[MessageQueue]], MessageQueue]
"""Picks one of a topic's publish queues (never given an empty sequence)."""

_INDEX_MASK = 0x7FFFFFFF


def hash_by_key(key: str) -> QueueSelector:
    """Same key, same queue (while the topic's queue count does not change)."""
    code = abs(javahash.tag_hash(key))

    def select(queues: Sequence[MessageQueue]) -> MessageQueue:
        return queues[code % len(queues)]

    return select


def random_queue(queues: Sequence[MessageQueue]) -> MessageQueue:
    """RocketMQ's ``SelectMessageQueueByRandom``."""
    return random.choice(queues)


class RoundRobin:
    """The default choice: round robin per topic, fault-aware, avoiding the last failed broker.

    Slots: ``choose``'s C twin reads them at their offsets."""

    __slots__ = ("_faults", "_indexes")

    def __init__(self, faults: LatencyFaultTolerance) -> None:
        self._faults = faults
        self._indexes: dict[str, int] = {}

    @nativecodecs.accelerated_as("choose_queue")
    def choose(self, queues: Sequence[MessageQueue], last_broker: str | None = None) -> MessageQueue:
        """The next queue of the topic's round. Its C twin (native/clientsend.c) decides the
        common case (a tuple, a topic seen before, no broker marked, the next queue not on
        ``last_broker``) in one call, changing nothing unless it decides it: the same choice
        and index (tests/client/test_faults_and_selectors.py). The rest comes here."""
        if not queues:
            raise ValueError("no queue to choose from")
        # the topic's next index, inline (a call per send less)
        indexes, topic = self._indexes, queues[0].topic
        start = indexes.get(topic)
        start = indexes[topic] = random.randrange(_INDEX_MASK) if start is None else (start + 1) & _INDEX_MASK
        first = queues[start % len(queues)]
        faults = self._faults
        if first.broker_name != last_broker and (not faults.marks or faults.is_available(first.broker_name)):
            return first  # the common case, decided without ordering every queue
        ordered = [queues[(start + i) % len(queues)] for i in range(len(queues))]
        for mq in ordered:
            if mq.broker_name != last_broker and self._faults.is_available(mq.broker_name):
                return mq
        for mq in ordered:
            if self._faults.is_available(mq.broker_name):
                return mq
        least_bad = self._faults.pick_one_at_least()
        on_least_bad = [mq for mq in ordered if mq.broker_name == least_bad]
        if on_least_bad:
            return on_least_bad[0]
        return ordered[0]
