"""A SendMessage of several messages: which of them go to the broker as one SEND_BATCH_MESSAGE.

The v2 SendMessage carries a list of messages of one topic. RocketMQ's proxy sends a list of
more than one as a single batch (``ProducerProcessor``: ``MessageBatch.generateFromList``, one
SEND_BATCH_MESSAGE to the queue picked for the first message) and answers with one entry for
the whole batch. rocketq batches too, which costs one remoting request, one broker append and
one answer for the lot instead of one each, but keeps an entry per message:

- only NORMAL messages are batched (``batchable``): a transaction half needs its own send and
  check, a DELAY message its own level (the broker refuses delay levels in a batch), a FIFO
  message the queue of its message group. The others of the request are sent one by one.
- the batch is stored at consecutive offsets of one queue, so each message's entry gets its own
  message id and the batch's first offset plus its place (``entries``); a batch that fails
  gives every message in it that failure.
- a batch the producer cannot build (over ``maxMessageSize`` as a whole) is sent message by
  message instead, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rocketq.client.sending import SendResult
from rocketq.protocol import messageproperties as mp
from rocketq.protocol.messagetypes import Message

MIN_BATCH: Final = 2
"""Fewer NORMAL messages than this are sent on their own (a batch of one gains nothing)."""
NOT_BATCHED: Final = (mp.TRAN_MSG, mp.DELAY, mp.SHARDING_KEY)
"""Properties that keep a message out of a batch (transaction, delay level, message group)."""


def batchable(msg: Message) -> bool:
    """Whether ``msg`` (converted by ``convert.to_remoting``) may travel in a batch."""
    props = msg.properties
    return not any(name in props for name in NOT_BATCHED)


def entries(result: SendResult, msgs: Sequence[Message]) -> list[tuple[str, int]]:
    """(message id, queue offset) of each message of a stored batch, in the batch's order."""
    return [(msg.properties[mp.UNIQ_KEY], result.queue_offset + i) for i, msg in enumerate(msgs)]
