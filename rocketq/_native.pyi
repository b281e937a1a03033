"""Types of the C extension ``rocketq._native`` (sources in native/); see rocketq.protocol.nativecodecs."""

from collections.abc import Callable
from typing import Any, TypeVar

from rocketq.protocol.messagetypes import MessageExt

_F = TypeVar("_F", bound=Callable[..., Any])

def accelerate(name: str, pure: _F, /, *context: object) -> _F: ...
def names() -> tuple[str, ...]: ...
def crc32(data: bytes | bytearray | memoryview, /) -> int: ...
def sender_encoder(
    fallback: Callable[[bytes, int, str], bytes], magic: int, queue_id: int, sys_flag: int, born_timestamp: int,
    born: bytes, store: bytes, reconsume_times: int, topic_part: bytes, fixed: int, limit: int, /,
) -> Callable[[bytes, int, str], bytes]: ...
def decode_record(
    buf: object, pos: int, decompress: bool, check_crc: bool, cls: type[MessageExt], /,
) -> MessageExt | None: ...
def decode_records(
    buf: object, pos: int, decompress: bool, cls: type[MessageExt], /,
) -> tuple[list[MessageExt], int]: ...
def decode_pulled(buf: object, cls: type[MessageExt], stamps: dict[str, str], /) -> list[MessageExt] | None: ...

class RecordEncoder:
    __wrapped__: Callable[..., tuple[bytes, int]]
    def __init__(
        self, fallback: Callable[..., tuple[bytes, int]], magic: int, store: bytes, fixed: int, limit: int,
        topics: dict[str, bytes], topic_part: Callable[[str], bytes], pack_host: Callable[[tuple[str, int]], bytes],
    ) -> None: ...
    def __call__(
        self, topic: str, queue_id: int, body: bytes, flag: int, properties: str, sys_flag: int,
        born_timestamp: int, born_host: tuple[str, int], reconsume_times: int = ...,
        prepared_transaction_offset: int = ..., queue_offset: int = ..., physical_offset: int = ...,
        store_timestamp: int = ...,
    ) -> tuple[bytes, int]: ...

class SenderEncoder:
    __wrapped__: Callable[[bytes, int, str], bytes]
    def __call__(self, body: bytes, flag: int, properties: str, /) -> bytes: ...
