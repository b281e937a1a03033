"""Dispatch: what a stored record contributes to the derived structures.

Every record appended to the CommitLog is *dispatched*: it gets a ConsumeQueue unit (unless it
is a prepared or rolled-back transaction half, which consumers must not see) and IndexFile
entries for its unique key and KEYS. The same rules run on the put path and when recovery
rebuilds the queues from the CommitLog, so both are written once, here. The unit's tag code is
the hash of TAGS, except in SCHEDULE_TOPIC_XXXX where it is the delivery time, as in RocketMQ.
"""

from __future__ import annotations

from rocketq.protocol import javahash
from rocketq.protocol.codes import SCHEDULE_TOPIC
from rocketq.protocol.messagetypes import MessageSysFlag

_HIDDEN_TX = (MessageSysFlag.TRANSACTION_PREPARED_TYPE, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)


def builds_queue_unit(sys_flag: int) -> bool:
    """Prepared and rolled-back transaction messages stay out of the ConsumeQueue."""
    return (sys_flag & MessageSysFlag.TRANSACTION_MASK) not in _HIDDEN_TX


def delivery_time(delay: str | None, store_timestamp: int, delay_levels_ms: tuple[int, ...]) -> int:
    """When a SCHEDULE_TOPIC_XXXX message is due: store time plus its level's delay.

    Levels above the table are clamped to its last level; a missing or bad level means now.
    """
    if not delay or not delay.isdigit() or int(delay) <= 0:
        return store_timestamp
    level = min(int(delay), len(delay_levels_ms))
    return store_timestamp + delay_levels_ms[level - 1]


def tag_code(topic: str, tags: str | None, delay: str | None, store_timestamp: int,
             delay_levels_ms: tuple[int, ...], given: int | None = None) -> int:
    """The ConsumeQueue tag code of a record (``given`` is what the broker computed, if any)."""
    if topic == SCHEDULE_TOPIC:
        return delivery_time(delay, store_timestamp, delay_levels_ms)
    if given is not None:
        return given
    return javahash.tag_hash(tags)
