"""A FOUND pull answer written by native/foundframe.c is the bytes its ``RemotingCommand`` encodes to.

``PullHandlers._found_frame`` hands the connection a FOUND answer as the bytes it writes: one
C call (``_native.found_frame``) when the extension is there and the request is JSON, else the
response built and encoded as before. Hypothesis draws the request's opaque and serialize type,
the read's offsets (64-bit edges and beyond), the suggested broker and records of any size; the
frame must be that response's ``encode()`` bytes, one bytes exactly when the records fit
``MAX_JOINED_ANSWER``. Anything the C code does not take (a value outside 64 bits, a buffer that
is not a plain byte view) must come back declined, never half written."""

from __future__ import annotations

import array
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.broker import pull as pull_mod
from rocketq.broker.clienttable import ClientManager
from rocketq.broker.groups import SubscriptionGroupManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.pull import MAX_JOINED_ANSWER, PullHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol import nativecodecs
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import PullMessageResponseHeader
from rocketq.store.messagestore import MessageStore
from rocketq.store.results import GetResult, GetStatus
from rocketq.store.settings import StoreSettings

native = nativecodecs.native
needs_native = pytest.mark.skipif(native is None, reason="the native extension is not built")

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
EDGES = st.sampled_from([0, 1, -1, 9, 10, 99, 100, (1 << 31) - 1, -(1 << 31), (1 << 63) - 1, -(1 << 63)])
NUMBERS = st.one_of(EDGES, INT64, st.integers(0, 10**6))
RECORDS = st.lists(st.binary(max_size=3000), max_size=6)


def reference(opaque: int, serialize: SerializeType, suggest: int, next_begin: int, low: int, high: int,
              records: list[bytes]) -> bytes:
    """The answer as ``_found`` built it before: a response with the header's extFields and the views."""
    request = RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=opaque, serialize_type=serialize)
    response = request.response(ResponseCode.SUCCESS, None, PullMessageResponseHeader(
        suggest_which_broker_id=suggest, next_begin_offset=next_begin, min_offset=low, max_offset=high).to_ext())
    response.body_parts = [memoryview(r) for r in records]
    return response.encode()


def joined(frame: bytes | list[bytes | memoryview]) -> bytes:
    return frame if isinstance(frame, bytes) else b"".join(frame)


@needs_native
@settings(max_examples=300, deadline=None)
@given(opaque=NUMBERS, suggest=NUMBERS, next_begin=NUMBERS, low=NUMBERS, high=NUMBERS, records=RECORDS,
       joined_max=st.sampled_from([0, 1, 100, MAX_JOINED_ANSWER, 1 << 20]), as_bytes=st.booleans())
def test_native_frame_is_the_encoded_response(opaque: int, suggest: int, next_begin: int, low: int, high: int,
                                              records: list[bytes], joined_max: int, as_bytes: bool) -> None:
    assert native is not None
    buffers: list[bytes | memoryview] = [r if as_bytes else memoryview(bytearray(r))[0:len(r)] for r in records]
    frame = native.found_frame(opaque, suggest, next_begin, low, high, buffers, joined_max)
    assert joined(frame) == reference(opaque, SerializeType.JSON, suggest, next_begin, low, high, records)
    total = sum(map(len, records))
    assert isinstance(frame, bytes) == (total <= joined_max)
    if not isinstance(frame, bytes):
        assert all(a is b for a, b in zip(frame[1:], buffers, strict=True))  # the views themselves, no copy


@needs_native
def test_native_frame_declines_what_it_does_not_take() -> None:
    assert native is not None
    view = memoryview(b"abc")
    assert native.found_frame(1 << 63, 0, 0, 0, 0, [view], 10) is None
    assert native.found_frame(1, 0, -(1 << 63) - 1, 0, 0, [view], 10) is None
    assert native.found_frame(1, True, 0, 0, 0, [view], 10) is None  # a bool is not the exact int str() writes
    assert native.found_frame(1, 0, 0, 0, 0, (view,), 10) is None
    assert native.found_frame(1, 0, 0, 0, 0, [bytearray(b"abc")], 10) is None
    assert native.found_frame(1, 0, 0, 0, 0, [memoryview(array.array("i", [1, 2]))], 10) is None
    assert native.found_frame(1, 0, 0, 0, 0, [memoryview(b"abcdef")[::2]], 10) is None
    released = memoryview(b"abc")
    released.release()
    assert native.found_frame(1, 0, 0, 0, 0, [view, released], 10) is None
    with pytest.raises(TypeError):
        native.found_frame(1, 0, 0, 0, 0, [view])


@needs_native
def test_native_frame_keeps_references_right() -> None:
    assert native is not None
    view = memoryview(b"x" * 5000)
    before = sys.getrefcount(view)
    for joined_max in (0, 1 << 20):
        for _ in range(1000):
            native.found_frame(7, 0, 1, 0, 2, [view, view], joined_max)
    assert sys.getrefcount(view) == before


@pytest.fixture
def handlers(tmp_path: Path) -> PullHandlers:
    store = MessageStore(StoreSettings(store_path_root_dir=str(tmp_path / "store")), ("127.0.0.1", 10911))
    return PullHandlers(store, TopicConfigManager(tmp_path / "topics.json"),
                        SubscriptionGroupManager(tmp_path / "groups.json"),
                        ConsumerOffsetManager(tmp_path / "offsets.json"), ClientManager(lambda g, c: None),
                        BrokerBehaviour(), is_master=True, suggest_broker=lambda result, group: len(result.buffers))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opaque=st.integers(-(1 << 31), (1 << 31) - 1), serialize=st.sampled_from(list(SerializeType)),
       offsets=st.tuples(NUMBERS, NUMBERS, NUMBERS), records=RECORDS.filter(bool))
def test_found_frame_answers_as_the_response(handlers: PullHandlers, opaque: int, serialize: SerializeType,
                                             offsets: tuple[int, int, int], records: list[bytes]) -> None:
    """With the native call or without it (the fallback, and any machine without the extension);
    the handlers keep no state between examples."""
    request = RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=opaque, serialize_type=serialize)
    next_begin, low, high = offsets
    result = GetResult(GetStatus.FOUND, next_begin, low, high, [memoryview(r) for r in records],
                       list(range(len(records))), [0] * len(records), sum(map(len, records)))
    expected = reference(opaque, serialize, len(records), next_begin, low, high, records)
    saved = pull_mod._native_found_frame
    try:
        for fast in (saved, None):
            pull_mod._native_found_frame = fast
            frame = handlers._found_frame(request, "group", result)
            assert joined(frame) == expected
            assert isinstance(frame, bytes) == (result.buffer_total_size <= MAX_JOINED_ANSWER)
    finally:
        pull_mod._native_found_frame = saved
