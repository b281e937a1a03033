"""The answer to a stored send, from a template.

Almost every send is answered SUCCESS with the same header around three values (the
broker's message id, the queue id, the queue offset). Building it the general way costs a
header object, a dict, ``orjson.dumps`` of the whole frame header and the response command
per send; here the JSON text is fixed except for those values and the request's opaque, and
the frame comes out of one ``%`` format. The bytes are exactly those
``RemotingCommand.encode`` gives for the same response (a test compares the two on random
values); anything else — another code, a remark, a binary (ROCKETMQ) header — takes the
general way (``SendHandlers._answer``).

``native/sendanswer.c`` is ``stored``'s C twin (one call instead of a Python function and its
format, encode and pack): it writes the same bytes from the same template, given to it as the
text around the four values (``_PIECES``); the pure function stays the reference, used under
``ROCKETQ_NATIVE=0`` (``rocketq.protocol.nativecodecs``).
"""

from __future__ import annotations

import re
import struct
from typing import Final

from rocketq.protocol import nativecodecs
from rocketq.protocol.frames import PROTOCOL_VERSION

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
