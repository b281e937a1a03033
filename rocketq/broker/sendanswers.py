"""The answer to a stored send, from a template.

Almost every send is answered SUCCESS with the same header around three values (the
broker's message id, the queue id, the queue offset). Building it the general way costs a
header object, a dict, ``orjson.dumps`` of the whole frame header and the response command
per send; here the JSON text is fixed except for those values and the request's opaque, and
the frame comes out of one ``%`` format. The bytes are exactly those
``RemotingCommand.encode`` gives for the same response (a test compares the two on random
values); anything else — another code, a remark, a binary (ROCKETMQ) header — takes the
general way (``SendHandlers._answer``).

``stored_group`` answers a whole group of stored sends (``SendHandlers._answer_group``): every
PUT_OK answer of a JSON request from the template, the positions of the others handed back to
be answered in full.

``native/sendanswer.c`` holds both functions' C twins (one call instead of a Python function and
its format, encode and pack per answer; for a group, no per-answer Python at all): they write
the same bytes from the same template, given to them as the text around the four values
(``_PIECES``); the pure functions stay the reference, used under ``ROCKETQ_NATIVE=0``
(``rocketq.protocol.nativecodecs``).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from rocketq.protocol import nativecodecs
from rocketq.protocol.codes import SerializeType
from rocketq.protocol.frames import PROTOCOL_VERSION
from rocketq.store.results import PutResult, PutStatus

if TYPE_CHECKING:
    from rocketq.remoting.grouping import Answer

_PREFIX: Final = struct.Struct(">iI")
_HEADER: Final = (b'{"code":0,"flag":1,"language":"PYTHON","opaque":%d,"serializeTypeCurrentRPC":"JSON",'
                  b'"version":' + str(PROTOCOL_VERSION).encode() + b',"extFields":{"msgId":"%s","queueId":"%d",'
                  b'"queueOffset":"%d","MSG_REGION":"DefaultRegion","TRACE_ON":"true"}}')
"""The JSON header of a SUCCESS answer, in the order ``RemotingCommand.encode`` writes it."""
_PIECES: Final = tuple(re.split(rb"%[ds]", _HEADER))
"""The template's text around its four values (opaque, msgId, queueId, queueOffset): the C twin's."""


@nativecodecs.accelerated_with(*_PIECES)
def stored(opaque: int, msg_id: str, queue_id: int, queue_offset: int) -> bytes:
    """The whole frame answering a stored send (JSON header, no body). ``msg_id`` is the
    broker's hex id (comma-joined for a batch): nothing in it needs escaping in JSON."""
    header = _HEADER % (opaque, msg_id.encode(), queue_id, queue_offset)
    return _PREFIX.pack(4 + len(header), len(header)) + header


@nativecodecs.accelerated_with(*_PIECES, PutStatus.PUT_OK, SerializeType.JSON)
def stored_group(admitted: Sequence[tuple[int, Any, Any, int, Any]], results: Sequence[PutResult],
                 answers: list[Answer]) -> list[int]:
    """Each template answer of a stored group into ``answers``: ``admitted`` are the group's
    sends, ``(i, request, header, queue_id, records)`` (``answers[i]`` is the send's answer),
    ``results`` their PutResults in order. A PUT_OK result of a JSON request is answered with
    ``stored``; the positions in ``admitted`` of the others are returned, in order (the caller
    answers them in full)."""
    others: list[int] = []
    ok, json = PutStatus.PUT_OK, SerializeType.JSON
    for k, ((i, request, _header, queue_id, _records), result) in enumerate(zip(admitted, results, strict=True)):
        if result.status is ok and request.serialize_type is json:
            answers[i] = stored(request.opaque, ",".join(result.offset_msg_ids), queue_id, result.queue_offsets[0])
        else:
            others.append(k)
    return others
