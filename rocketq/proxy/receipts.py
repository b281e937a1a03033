"""v2 receipt handles: the broker's POP extraInfo plus the message's CommitLog offset.

RocketMQ's proxy hands a received message's handle to the client as the eight extraInfo fields
(``startOffset popTime invisibleTime reviveQid topicType brokerName queueId offset``) and the
CommitLog offset, space-separated (``ReceiptHandle``). Ack, ChangeInvisibleDuration and
ForwardMessageToDeadLetterQueue come back with it: it names the broker, queue and checkpoint,
so the proxy keeps no state per received message. A handle whose invisible time has passed
is refused (INVALID_RECEIPT_HANDLE "receipt handle is expired"), as are unreadable ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rocketq.protocol import messageproperties as mp
from rocketq.protocol import popinfo
from rocketq.protocol.messagetypes import MessageExt
from rocketq.protocol.popinfo import ExtraInfo, PopInfoError
from rocketq.protocol.poprequests import PoppedMessage
from rocketq.proxy.status import Code, ProxyError

COMMIT_LOG_OFFSET_FIELD: Final = popinfo.EXTRA_INFO_FIELDS
"""Index of the CommitLog offset the proxy appends after the extraInfo fields."""
_NO_HOST: Final = ("", 0)


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    extra: ExtraInfo
    commit_log_offset: int | None

    @classmethod
    def parse(cls, text: str) -> ReceiptHandle:
        try:
            extra = ExtraInfo.parse(text)
        except PopInfoError as exc:
            raise ProxyError(Code.INVALID_RECEIPT_HANDLE, f"receipt handle is invalid: {exc}") from None
        parts = text.split(" ")
        offset = None
        if len(parts) > COMMIT_LOG_OFFSET_FIELD:
            try:
                offset = int(parts[COMMIT_LOG_OFFSET_FIELD])
            except ValueError:
                raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle has a bad commit log offset") from None
        return cls(extra, offset)

    def check_alive(self, now_ms: int) -> None:
        if self.extra.next_visible_time <= now_ms:
            raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")

    def as_popped(self, topic: str, group: str, message_id: str) -> PoppedMessage:
        """The handle as the ``PoppedMessage`` PopClient acks, changes or forwards (no body: none is needed)."""
        msg = MessageExt(
            store_size=0, magic=0, body_crc=0, queue_id=self.extra.queue_id, flag=0,
            queue_offset=self.extra.queue_offset, commit_log_offset=self.commit_log_offset or 0, sys_flag=0,
            born_timestamp=0, born_host=_NO_HOST, store_timestamp=0, store_host=_NO_HOST, reconsume_times=0,
            prepared_transaction_offset=0, body=b"", topic=topic, properties={mp.UNIQ_KEY: message_id},
            offset_msg_id="")
        return PoppedMessage(msg, self.extra, popinfo.real_topic(self.extra.topic_type, topic, group))
