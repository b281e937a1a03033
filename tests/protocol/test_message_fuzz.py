"""Fuzzing the record and batch decoders: arbitrary or mutated bytes raise MessageFormatError or
decode; nothing else escapes and nothing hangs."""

from __future__ import annotations

import contextlib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.protocol import batchbodies, messageproperties, storedrecords
from rocketq.protocol.messageerrors import MessageFormatError
from rocketq.protocol.messagetypes import Message

# bytes written by a real Apache RocketMQ broker, kept in the repository (tests/fixtures/)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rocketmq-records"
SEEDS = [
    (FIXTURES / "message.bin").read_bytes()[:132],
    (FIXTURES / "batch_message.bin").read_bytes()[:375],
    (FIXTURES / "message_compress.bin").read_bytes()[:133],
    storedrecords.encode_stored_record(topic="T", queue_id=1, body=b"x" * 40, properties={"KEYS": "a b"},
                                 born_host=("::1", 9)),
]
BATCH_SEED = batchbodies.encode_batch_body([Message("T", b"abc", 1, {"A": "1"}), Message("T", b"", 2, {})])


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 8))):
        if not data:
            break
        op = draw(st.sampled_from(["flip", "set", "cut", "insert"]))
        at = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[at] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[at:at + draw(st.integers(1, 16))]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


def exercise_records(data: bytes) -> None:
    for strict in (False, True):
        try:
            for record in storedrecords.iter_stored_records(data, strict=strict):
                assert record.store_size > 0
        except MessageFormatError:
            assert strict
    for pos in (0, 1, 4, len(data) // 2):
        with contextlib.suppress(MessageFormatError):
            storedrecords.decode_stored_record(data, pos, check_crc=True)
        storedrecords.record_size_at(data, pos)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(SEEDS).flatmap(mutated))
def test_mutated_records(data: bytes) -> None:
    exercise_records(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_records(data: bytes) -> None:
    exercise_records(data)


@settings(max_examples=300, deadline=None)
@given(mutated(BATCH_SEED) | st.binary(max_size=200))
def test_batch_fuzz(data: bytes) -> None:
    with contextlib.suppress(MessageFormatError):
        batchbodies.decode_batch_body(data)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_properties_fuzz(text: str) -> None:
    with contextlib.suppress(MessageFormatError):
        messageproperties.decode_properties(text)
