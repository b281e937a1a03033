"""A stored send's answer from the template is byte for byte the general encoder's, and its C
twin's the pure template's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker import sendanswers
from rocketq.protocol import nativecodecs
from rocketq.protocol.codes import ResponseCode, SerializeType
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import SendMessageResponseHeader
from rocketq.store.results import PutResult, PutStatus

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


_EDGES = [0, 1, -1, 9, 10, -9, -10, 99, 100, 2**31 - 1, -2**31, 2**32, 2**63 - 1, -2**63, 2**63, -2**63 - 1,
          *(10**k + d for k in range(1, 19) for d in (-1, 0)), *(-(10**k) + d for k in range(1, 19) for d in (0, 1))]
_EDGE_INT = st.sampled_from(_EDGES) | st.integers(-2**64, 2**64)
"""Where hand-written decimal output goes wrong: digit-count boundaries, the int32 and int64 ends."""


@given(opaque=_EDGE_INT, queue_id=_EDGE_INT, queue_offset=_EDGE_INT)
def test_the_c_twin_writes_int_edges_as_python_does(opaque: int, queue_id: int, queue_offset: int) -> None:
    """native/sendanswer.c's hand-written decimals against Python's ``%d`` (the pure template)."""
    pure = nativecodecs.pure(sendanswers.stored)
    for msg_id in ("", "0A1B"):
        assert sendanswers.stored(opaque, msg_id, queue_id, queue_offset) == pure(opaque, msg_id, queue_id,
                                                                                   queue_offset)


_IDS = st.lists(HEX_ID | st.text(max_size=6), max_size=4).map(tuple)
_RESULTS = st.builds(PutResult, status=st.sampled_from(PutStatus) | st.just(PutStatus.PUT_OK),
                     queue_offsets=st.lists(_EDGE_INT, min_size=1, max_size=3).map(tuple), offset_msg_ids=_IDS)
_REQUESTS = st.builds(RemotingCommand, code=st.just(310), opaque=_EDGE_INT,
                      serialize_type=st.sampled_from(SerializeType) | st.just(SerializeType.JSON))


@settings(max_examples=300)
@given(st.lists(st.tuples(_REQUESTS, _EDGE_INT, _RESULTS), max_size=8), st.data())
def test_a_group_is_answered_as_each_answer_alone(sends: list[tuple[RemotingCommand, int, PutResult]],
                                                  data: st.DataObject) -> None:
    """``stored_group`` (C and pure) writes each PUT_OK answer of a JSON request byte for byte as
    ``stored`` alone does, at the send's own position, and hands back the others' positions."""
    positions = data.draw(st.permutations(range(len(sends) + 2)))[: len(sends)]
    admitted = [(i, request, None, queue_id, []) for i, (request, queue_id, _) in zip(positions, sends, strict=True)]
    results = [result for *_, result in sends]
    expected: list[object] = [None] * (len(sends) + 2)
    others = []
    for k, (i, request, _, queue_id, _records) in enumerate(admitted):
        result = results[k]
        if result.status is PutStatus.PUT_OK and request.serialize_type is SerializeType.JSON:
            expected[i] = sendanswers.stored(request.opaque, ",".join(result.offset_msg_ids), queue_id,
                                             result.queue_offsets[0])
        else:
            others.append(k)
    for group in (sendanswers.stored_group, nativecodecs.pure(sendanswers.stored_group)):
        answers: list[object] = [None] * (len(sends) + 2)
        assert group(admitted, results, answers) == others  # type: ignore[arg-type]
        assert answers == expected


def test_a_group_refuses_what_the_pure_function_refuses() -> None:
    """Shapes the C twin does not take go to the pure function, which raises as it always did."""
    request = RemotingCommand(code=310, opaque=1)
    with pytest.raises(ValueError):  # zip(strict=True): a result per send
        sendanswers.stored_group([(0, request, None, 0, [])], [], [None])
    with pytest.raises(IndexError):  # a PUT_OK result without its queue offset
        sendanswers.stored_group([(0, request, None, 0, [])], [PutResult(PutStatus.PUT_OK)], [None])
    answers: list[object] = [None]
    assert sendanswers.stored_group([(0, request, None, 0, [])], [PutResult(PutStatus.PUT_OK, queue_offsets=(5,),
                                                                            offset_msg_ids=("AB", "CD"))],
                                    answers) == []
    assert answers == [sendanswers.stored(1, "AB,CD", 0, 5)]
