"""A stored send's answer from the template is byte for byte the general encoder's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker import sendanswers
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
