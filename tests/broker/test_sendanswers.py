"""A stored send's answer from the template is byte for byte the general encoder's, and its C
twin's the pure template's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker import sendanswers
from rocketq.protocol import nativecodecs
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import SendMessageResponseHeader

HEX_ID = st.text(alphabet="0123456789ABCDEF", min_size=32, max_size=32)


@given(opaque=st.integers(0, 2**31 - 1), ids=st.lists(HEX_ID, min_size=1, max_size=4),
       queue_id=st.integers(0, 2**31 - 1), queue_offset=st.integers(0, 2**63 - 1))
def test_template_matches_the_general_encoding(opaque: int, ids: list[str], queue_id: int, queue_offset: int) -> None:
    msg_id = ",".join(ids)
    request = RemotingCommand(code=310, opaque=opaque)
    ext = SendMessageResponseHeader(msg_id=msg_id, queue_id=queue_id, queue_offset=queue_offset).to_ext()
    ext["MSG_REGION"] = "DefaultRegion"
    ext["TRACE_ON"] = "true"
    general = request.response(ResponseCode.SUCCESS, None, ext).encode()
    assert sendanswers.stored(opaque, msg_id, queue_id, queue_offset) == general


_ANY_INT = st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(-2**80, 2**80), st.booleans())


@given(opaque=_ANY_INT, msg_id=st.one_of(st.text(max_size=80), st.text(alphabet="0123456789ABCDEF,")),
       queue_id=_ANY_INT, queue_offset=_ANY_INT)
def test_the_c_twin_writes_what_the_pure_template_writes(opaque: int, msg_id: str, queue_id: int,
                                                         queue_offset: int) -> None:
    """native/sendanswer.c against the pure function, values beyond what a send has included
    (negative, beyond 64 bits, non-ASCII ids: those go to the pure function)."""
    pure = nativecodecs.pure(sendanswers.stored)
    if nativecodecs.native is None:
        pytest.skip("native codecs switched off or not built")
    assert sendanswers.stored is not pure
    assert sendanswers.stored(opaque, msg_id, queue_id, queue_offset) == pure(opaque, msg_id, queue_id, queue_offset)
