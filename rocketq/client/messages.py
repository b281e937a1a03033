"""The SDK's ``Message``: the protocol's message with a constructor for everyday use.

``rocketq.protocol.messagetypes.Message`` is the wire value (topic, body, flag, properties map).
Applications mostly set tags, keys and a delay level, which live inside that properties map
under RocketMQ's names (TAGS, KEYS space-separated, DELAY); this subclass takes them as keyword
arguments. It *is* a protocol ``Message``, so anything that accepts one accepts it, and a
plain protocol ``Message`` is accepted by the producer too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rocketq.protocol import messagetypes
from rocketq.protocol.messagetypes import MessageExt

__all__ = ["Message", "MessageExt"]


class Message(messagetypes.Message):
    __slots__ = ()

    def __init__(
        self,
        topic: str,
        body: bytes,
        flag: int = 0,
        properties: Mapping[str, str] | None = None,
        *,
        tags: str | None = None,
        keys: Iterable[str] | str | None = None,
        delay_level: int = 0,
    ) -> None:
        super().__init__(topic, body, flag, dict(properties or {}))
        if tags is not None:
            self.tags = tags
        if keys is not None:
            self.keys = [keys] if isinstance(keys, str) else list(keys)
        if delay_level:
            self.delay_level = delay_level
