"""A client's reading of SUCCESS answers without a ``RemotingCommand``.

Most frames a producer reads are the answers to its sends: a JSON header with code 0
(SUCCESS), the RESPONSE flag, the request's opaque and a few extFields (msgId, queueId,
queueOffset, MSG_REGION, ...), and no body. The general read decodes each one into a
``RemotingCommand`` (``orjson.loads`` of the header into a dict of some twelve strings, then
the command) only for the producer to read four extFields out of it.

``stored_answer_at(data, pos, max_frame)`` looks at the frame that starts at ``pos``: when it
is such an answer it returns ``(opaque, extFields, end of the frame)``; for anything else
(another code, a request, a body, the binary header, an incomplete frame) None, and the
frame takes the general path. The pure function here is the reference: what the general
decode makes of the frame, narrowed to that shape. Its C twin (native/clientsend.c) reads the
header in place and builds only the extFields dict; it declines (None) more than the pure one
does (escapes, white space, non-ASCII text, floats: nothing a broker writes), never gives
another answer (tests/remoting/test_storedanswers.py, hypothesis).

``answer_at(data, pos, max_frame)`` is the same question without the extFields dict:
``(opaque, end)``. A client connection asks it of every frame of a read and hands a send's
answer to the waiter as ``(data, pos, end)``: the producer reads its ``SendResult`` straight
from the frame (``sending.send_result_at``), so the dict of five strings is not made at all.
"""

from __future__ import annotations

import struct
from typing import Final

from rocketq.protocol import nativecodecs
from rocketq.protocol.frames import RESPONSE_FLAG, FrameError, SerializeType, decode_json_header

SUCCESS: Final = 0
_LENGTHS = struct.Struct(">iI")
"""A frame's length (after the field) and its header mark (serialize type, header length)."""
_HEADER_LENGTH_MASK: Final = 0xFFFFFF

StoredAnswer = tuple[int, dict[str, str], int]
"""``(opaque, extFields, end)``: a SUCCESS answer without a body, and where its frame ends."""


@nativecodecs.accelerated
def stored_answer_at(data: bytes, pos: int, max_frame: int) -> StoredAnswer | None:
    """The SUCCESS answer whose frame starts at ``data[pos]``, or None (see the module)."""
    if len(data) - pos < _LENGTHS.size:
        return None
    length, mark = _LENGTHS.unpack_from(data, pos)
    if not 4 <= length <= max_frame or len(data) - pos - 4 < length:
        return None
    if mark >> 24 != SerializeType.JSON or 4 + (mark & _HEADER_LENGTH_MASK) != length:
        return None  # the binary header, or a body: the general path
    try:
        cmd = decode_json_header(data[pos + 8 : pos + 4 + length])
    except FrameError:
        return None  # the general path raises it
    if cmd.code != SUCCESS or not cmd.flag & RESPONSE_FLAG:
        return None
    return cmd.opaque, cmd.ext_fields, pos + 4 + length


@nativecodecs.accelerated
def answer_at(data: bytes, pos: int, max_frame: int) -> tuple[int, int] | None:
    """``(opaque, end)`` of ``stored_answer_at(data, pos, max_frame)``, or None; its C twin
    (native/clientsend.c) builds no extFields dict."""
    answer = stored_answer_at(data, pos, max_frame)
    return None if answer is None else (answer[0], answer[2])
