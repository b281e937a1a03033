"""Dead letters: reading a consumer group's ``%DLQ%<group>`` and sending messages back for retry.

A message lands in ``%DLQ%<group>`` when the group failed on it more than its maximum number of
reconsumes (``rocketq.broker.sendback``). Apache RocketMQ's mqadmin has no command for it; its
dashboard resends a dead letter with ``consumeMessageDirectly`` (a call into one running
consumer). rocketq's ``dlqList`` and ``dlqResend`` (``rocketq.cli.admin``) work without a live
consumer instead:

* listing scans every queue of the DLQ topic from its first to its last offset, like
  ``printMsg``, with the tools group (nothing is committed);
* resending stores a copy of the dead letter in the group's *retry topic* ``%RETRY%<group>`` on the
  broker that holds it, so only that group consumes it again (sending to the original topic
  would deliver it to every group subscribed there). The copy keeps body, flag, tags, keys and
  the message id (UNIQ_KEY) and RETRY_TOPIC, so the listener sees the original topic; it starts
  with ``reconsumeTimes`` 0, i.e. a full set of retries. The dead letter itself stays in the DLQ
  (RocketMQ queues are append-only): resending the same message twice delivers it twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rocketq.admin import messages
from rocketq.admin.client import AdminClient, SendResult
from rocketq.admin.stats import MessageQueue
from rocketq.protocol import codes, messageproperties
from rocketq.protocol.messagetypes import Message, MessageExt

DEFAULT_MAX_LISTED: Final = 1000
"""Dead letters listed (or resent) at most per command unless told otherwise."""
DROPPED_ON_RESEND: Final = frozenset({
    messageproperties.DELAY, messageproperties.REAL_TOPIC, messageproperties.REAL_QID, messageproperties.WAIT,
    messageproperties.CLUSTER,
    messageproperties.MIN_OFFSET, messageproperties.MAX_OFFSET, messageproperties.CONSUME_START_TIME,
})
"""Properties that described the dead letter's earlier trips, not the message itself."""


@dataclass(frozen=True, slots=True)
class DeadLetter:
    queue: MessageQueue
    record: MessageExt


async def list_dead_letters(admin: AdminClient, group: str, *,
                            max_num: int | None = DEFAULT_MAX_LISTED) -> list[DeadLetter]:
    """The group's dead letters, queue by queue in offset order, at most ``max_num`` (None: all)."""
    ranges = await messages.scan_ranges(admin, codes.dlq_topic(group))
    found: list[DeadLetter] = []
    async for queue, record in messages.scan(admin, ranges):
        if max_num is not None and len(found) >= max_num:
            break
        found.append(DeadLetter(queue, record))
    return found


def matches(letter: DeadLetter, msg_ids: frozenset[str]) -> bool:
    """A dead letter is chosen by its message id (UNIQ_KEY) or its offset message id."""
    record = letter.record
    return record.msg_id in msg_ids or record.offset_msg_id in msg_ids


def retry_copy(record: MessageExt, group: str) -> Message:
    """What ``dlqResend`` stores in ``%RETRY%<group>`` for a dead letter (see the module doc)."""
    props = {k: v for k, v in record.properties.items() if k not in DROPPED_ON_RESEND}
    props.setdefault(messageproperties.RETRY_TOPIC, record.topic)
    props.setdefault(messageproperties.ORIGIN_MESSAGE_ID, record.offset_msg_id)
    return Message(codes.retry_topic(group), record.body, record.flag, props)


async def resend(admin: AdminClient, group: str, msg_ids: frozenset[str] | None, *,
                 max_num: int = DEFAULT_MAX_LISTED) -> list[tuple[DeadLetter, SendResult]]:
    """Resend the chosen dead letters (all when ``msg_ids`` is None) to the group's retry topic."""
    # looking for given ids reads the whole DLQ; resending "all" stops after max_num
    letters = await list_dead_letters(admin, group, max_num=max_num if msg_ids is None else None)
    chosen = [d for d in letters if msg_ids is None or matches(d, msg_ids)]
    done = []
    for letter in chosen[:max_num]:
        result = await messages.send(admin, retry_copy(letter.record, group), broker_name=letter.queue.broker_name)
        done.append((letter, result))
    return done
