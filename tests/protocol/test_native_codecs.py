"""The native codecs (rocketq._native) against their pure-Python references.

For random inputs, mutated real-broker records and plain garbage, the C code must give the
same result as the pure code, byte for byte, or raise the same exception type with the same
message. Outcomes are compared as values: ("ok", result) or ("error", type, message).

With ROCKETQ_NATIVE=0 (``make test-pure``) the comparisons are skipped: the rest of the suite
then runs on the pure code. The switch itself is checked in subprocesses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_message_fuzz import BATCH_SEED, FIXTURES, SEEDS, mutated

from rocketq.client import pulling
from rocketq.protocol import batchbodies, frames, javahash, messageproperties, nativecodecs, requests, storedrecords
from rocketq.protocol.codes import SerializeType
from rocketq.protocol.messageerrors import MessageIllegalError
from rocketq.protocol.messagetypes import Message, MessageSysFlag

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

FUZZ = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)

TRICKY_CHARS = ["\x01", "\x02", "a", "Z", "=", " ", "é", "ÿ", "中", "\U0001f600", "\ud800", "\udfff", "\x00"]
texts = st.text(alphabet=st.sampled_from(TRICKY_CHARS) | st.characters(), max_size=40)
"""Text with the properties separators, every UTF-8 width, astral characters and lone surrogates."""

int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
wide_ints = st.one_of(int32s, int32s, int64s, st.integers(-(2**70), 2**70),
                      st.sampled_from([2**31, -(2**31) - 1, 2**63]))
"""Mostly in range, sometimes just outside int32 or int64: the encoders must refuse the same way."""


def outcome(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    try:
        return ("ok", function(*args, **kwargs))
    except Exception as exc:  # the comparison is the point: any type, as long as both agree
        return ("error", type(exc), str(exc))


def same(accelerated: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """Run an accelerated function and its pure reference; assert identical outcomes."""
    reference = nativecodecs.pure(accelerated)
    assert reference is not accelerated, "the native version is not in use"
    got, expected = outcome(accelerated, *args, **kwargs), outcome(reference, *args, **kwargs)
    assert got == expected
    return got


@contextlib.contextmanager
def pure_record_decoding() -> Iterator[None]:
    """The record decoders without their native part (module state, restored afterwards)."""
    saved = storedrecords._native
    storedrecords._native = None
    try:
        yield
    finally:
        storedrecords._native = saved


def decoded_both_ways(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    got = outcome(function, *args, **kwargs)
    with pure_record_decoding():
        expected = outcome(function, *args, **kwargs)
    assert got == expected
    return got


def test_native_is_built_unless_switched_off() -> None:
    """CI must exercise the C code: a silently failed build would leave only the pure code."""
    if os.environ.get(nativecodecs.SWITCH, "").strip() == "0":
        assert nativecodecs.native is None
        assert messageproperties.decode_properties is nativecodecs.pure(messageproperties.decode_properties)
    else:
        assert nativecodecs.native is not None, "rocketq._native is not built: `make venv` compiles it"
        assert set(nativecodecs.native.names()) >= {"decode_properties", "batch_entries", "java_string_hash"}


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env}, check=True)


def test_switch_forces_pure_code() -> None:
    done = _python(
        "from rocketq.protocol import nativecodecs, messageproperties, storedrecords\n"
        "assert nativecodecs.native is None\n"
        "assert messageproperties.decode_properties.__module__ == 'rocketq.protocol.messageproperties'\n"
        "assert not hasattr(messageproperties.decode_properties, '__wrapped__')\n"
        "assert storedrecords._native is None\n"
        "print('pure')", ROCKETQ_NATIVE="0")
    assert done.stdout.strip() == "pure"


def test_missing_extension_falls_back_and_says_so_at_debug() -> None:
    done = _python(
        "import logging, sys\n"
        "logging.basicConfig(level=logging.DEBUG)\n"
        "sys.modules['rocketq._native'] = None  # what a failed or skipped build leaves: no module\n"
        "from rocketq.protocol import nativecodecs, messageproperties\n"
        "assert nativecodecs.native is None\n"
        "assert messageproperties.decode_properties('A\\x011') == {'A': '1'}\n", ROCKETQ_NATIVE="1")
    assert "native codecs are not built" in done.stderr
    assert done.stderr.count("native codecs") == 1


# --- properties and Java hashCode -------------------------------------------------------------


@needs_native
@FUZZ
@given(texts)
def test_decode_properties_matches(text: str) -> None:
    same(messageproperties.decode_properties, text)


@needs_native
@FUZZ
@given(st.dictionaries(texts, texts, max_size=6))
def test_encode_properties_matches(props: dict[str, str]) -> None:
    same(messageproperties.encode_properties, props)
    same(messageproperties.encode_properties, OrderedDict(props))


@needs_native
@FUZZ
@given(texts)
def test_is_canonical_matches(text: str) -> None:
    decoded = outcome(messageproperties.decode_properties, text)
    props = decoded[1] if decoded[0] == "ok" else {"A": "1"}
    same(messageproperties.is_canonical, text, props)
    same(messageproperties.is_canonical, text, {})
    same(messageproperties.is_canonical, text, OrderedDict(props))


@needs_native
@pytest.mark.parametrize("value", [{"A": 1}, {1: "a"}, {"A": None}, {"": "x"}, {"A\x01": "x"}, {"A": "x\x02"}, "A", 5])
def test_odd_properties_raise_as_pure(value: Any) -> None:
    same(messageproperties.encode_properties, value)
    same(messageproperties.decode_properties, value)


@needs_native
@FUZZ
@given(texts, st.integers(-(2**80), 2**80))
def test_java_hashes_match(text: str, prefix: int) -> None:
    same(javahash.java_string_hash, text)
    same(javahash.java_string_hash_unsigned, text)
    same(javahash.java_string_hash_after, prefix, text)


@needs_native
def test_java_hash_known_values() -> None:
    assert javahash.java_string_hash("hello") == 99162322  # what Java prints for "hello".hashCode()
    assert javahash.java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # hashed as its surrogate pair
    assert javahash.java_string_hash_after(javahash.java_string_hash_unsigned("T#"), "k") == \
        javahash.java_string_hash_unsigned("T#k")
    same(javahash.java_string_hash, None)
    same(javahash.java_string_hash_after, "1", "x")


# --- batch bodies ------------------------------------------------------------------------------

batch_items = st.lists(st.tuples(st.binary(max_size=64), int32s, st.dictionaries(
    st.text(alphabet="ABCé中", min_size=1, max_size=5), st.text(alphabet="xyz ü😀", max_size=8), max_size=3)),
    max_size=6)


@needs_native
@FUZZ
@given(batch_items)
def test_batch_entries_match_on_valid_bodies(items: list[tuple[bytes, int, dict[str, str]]]) -> None:
    body = batchbodies.encode_batch_body([Message("T", b, f, p) for b, f, p in items])
    assert same(batchbodies.batch_entries, body)[0] == "ok"
    same(batchbodies.batch_entries, bytearray(body))
    same(batchbodies.batch_entries, memoryview(body))


@needs_native
@FUZZ
@given(mutated(BATCH_SEED) | st.binary(max_size=200))
def test_batch_entries_match_on_garbage(data: bytes) -> None:
    same(batchbodies.batch_entries, data)


@needs_native
def test_batch_entries_refuse_odd_arguments_as_pure() -> None:
    same(batchbodies.batch_entries, "not bytes")
    same(batchbodies.batch_entries, memoryview(BATCH_SEED * 2)[::2])


# --- stored records: encoding ------------------------------------------------------------------

good_hosts = st.sampled_from([("127.0.0.1", 10911), ("10.1.2.3", 0), ("::1", 65535), ("fe80::1:2", 7)])
hosts = good_hosts | good_hosts | st.sampled_from([("not-an-ip", 1), ("127.0.0.1", 70000), ("127.0.0.1", -1)])
topics = st.text(alphabet="Tt_", min_size=1, max_size=20) | st.text(
    alphabet=st.sampled_from(["T", "_", "é", "中", "\U0001f600", "\ud800"]), max_size=140)
long_texts = st.one_of(st.integers(32760, 32770).map(lambda n: "a" * n),
                       st.integers(16380, 16390).map(lambda n: "é" * n))
"""Properties at PROPLEN's limit of 32767 bytes, counted in UTF-8 bytes, not characters."""
properties_texts = st.one_of(texts, texts, texts, long_texts)


@st.composite
def fields(draw: st.DrawFn, widths: tuple[int, ...]) -> list[int]:
    """Integers for fields of these bit widths: half the time all in range (the encoders' own
    path), else one of them just or far outside its range (refused by the pure code)."""
    values = [draw(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)) for bits in widths]
    if widths and draw(st.booleans()):
        at = draw(st.integers(0, len(widths) - 1))
        edge = 2 ** (widths[at] - 1)
        values[at] = draw(st.sampled_from([edge, -edge - 1, 2**70, -(2**70)]))
    return values


@st.composite
def encoder_calls(draw: st.DrawFn) -> tuple[storedrecords.RecordEncoder, tuple[Any, ...]]:
    magic = draw(st.sampled_from([storedrecords.MAGIC_V1, storedrecords.MAGIC_V2]))
    encoder = storedrecords.RecordEncoder(draw(good_hosts), draw(st.sampled_from([300, 4096, 1 << 22])), magic)
    optional = draw(st.integers(0, 5))
    queue_id, flag, sys_flag, born_ts, *extra = draw(fields((32, 32, 32, 64, 32, 64, 64, 64, 64)[:4 + optional]))
    return encoder, (draw(topics), queue_id, draw(st.binary(max_size=200)), flag, draw(properties_texts), sys_flag,
                     born_ts, draw(hosts), *extra)


@needs_native
@FUZZ
@given(encoder_calls())
def test_record_encoder_matches(call: tuple[storedrecords.RecordEncoder, tuple[Any, ...]]) -> None:
    encoder, args = call
    same(encoder.encode, *args)


@needs_native
def test_record_encoder_odd_arguments_go_to_pure() -> None:
    encoder = storedrecords.RecordEncoder(("127.0.0.1", 10911))
    args = ("T", 1, b"body", 0, "A\x011\x02", 0, 5, ("127.0.0.1", 1))
    assert same(encoder.encode, *args)[0] == "ok"
    same(encoder.encode, *args, queue_offset=7)  # keywords: the pure method
    same(encoder.encode, "T", 1, bytearray(b"body"), *args[3:])
    same(encoder.encode, "T", 1.5, *args[2:])
    same(encoder.encode, *args[:4], None, *args[5:])
    same(encoder.encode, *args[:7], ["127.0.0.1", 1])
    same(encoder.encode, *args[:7])


@needs_native
def test_record_encoders_refuse_a_layout_they_do_not_know() -> None:
    """The C encoders size records from their own layout; a fixed part that disagrees (a layout
    changed on one side only) must not reach the C writer, whose buffer would then be misjudged."""
    assert nativecodecs.native is not None
    store, pure_encode = storedrecords.pack_host(("127.0.0.1", 10911)), storedrecords.RecordEncoder.encode
    fixed = 74 + len(store)
    for wrong in (fixed - 1, fixed + 1, 0):
        with pytest.raises(ValueError, match="layout"):
            nativecodecs.native.RecordEncoder(pure_encode, storedrecords.MAGIC_V1, store, wrong, 4096, {},
                                              len, storedrecords.pack_host)
    born, topic_part = storedrecords.pack_host(("10.0.0.1", 5)), b"\x01T"

    def sender(fixed_part: int) -> Any:
        assert nativecodecs.native is not None
        return nativecodecs.native.sender_encoder(pure_encode, storedrecords.MAGIC_V1, 0, 0, 0, born, store, 0,
                                                  topic_part, fixed_part, 4096)

    right = fixed + len(born) + len(topic_part)
    assert sender(right) is not pure_encode
    assert sender(right - 1) is pure_encode and sender(right + 1) is pure_encode


@st.composite
def sender_calls(draw: st.DrawFn) -> tuple[Any, ...]:
    encoder = storedrecords.RecordEncoder(draw(good_hosts), draw(st.sampled_from([200, 4096])),
                                          draw(st.sampled_from([storedrecords.MAGIC_V1, storedrecords.MAGIC_V2])))
    queue_id, sys_flag, born_ts, reconsume = draw(fields((32, 32, 64, 32)))
    shared = (draw(topics.filter(bool)), queue_id, sys_flag, born_ts, draw(good_hosts), reconsume)
    messages = draw(st.lists(st.tuples(st.binary(max_size=200), fields((32,)).map(lambda v: v[0]), properties_texts),
                             min_size=1, max_size=4))
    return encoder, shared, messages


@needs_native
@FUZZ
@given(sender_calls())
def test_sender_encoder_matches(call: tuple[Any, ...]) -> None:
    encoder, shared, messages = call
    try:
        encode, _ts_pos = encoder.for_sender(*shared)
    except (MessageIllegalError, UnicodeEncodeError):
        return  # a topic for_sender itself refuses, before any native code runs
    if nativecodecs.pure(encode) is encode:  # a shared field out of range: the pure closure refuses every call
        assert outcome(encode, b"", 0, "")[1] is MessageIllegalError
        return
    for body, flag, props in messages:
        same(encode, body, flag, props)
    same(encode, memoryview(b"x"), 0, "")
    same(encode, b"x", 0, None)


# --- stored records: decoding ------------------------------------------------------------------


@st.composite
def record_runs(draw: st.DrawFn) -> bytes:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        born, store = draw(good_hosts), ("::1", 9)
        body = draw(st.binary(max_size=100))
        sys_flag = draw(st.sampled_from([0, MessageSysFlag.COMPRESSED, MessageSysFlag.TRANSACTION_PREPARED_TYPE]))
        props = draw(st.dictionaries(st.text(alphabet="ABé", min_size=1, max_size=4),
                                     st.text(alphabet="xyz ü😀=", max_size=6), max_size=3))
        parts.append(storedrecords.encode_stored_record(
            topic=draw(st.text(alphabet="Tt中", min_size=1, max_size=20)), queue_id=draw(int32s), body=body,
            flag=draw(int32s), properties=props, sys_flag=sys_flag, born_timestamp=draw(int64s), born_host=born,
            store_timestamp=draw(int64s), store_host=draw(st.sampled_from([store, ("10.0.0.9", 10911)])),
            reconsume_times=draw(int32s), prepared_transaction_offset=draw(int64s), queue_offset=draw(int64s),
            physical_offset=draw(int64s),
            magic=draw(st.sampled_from([storedrecords.MAGIC_V1, storedrecords.MAGIC_V2]))))
    tail = draw(st.sampled_from([b"", b"\x00" * 8, b"\x00\x00\x00\x10garbage!", b"xy"]))
    return b"".join(parts) + tail


def all_records(data: bytes, decompress: bool = True, strict: bool = False) -> list[Any]:
    return list(storedrecords.iter_stored_records(data, decompress=decompress, strict=strict))


def exercise_decoders(data: bytes) -> None:
    for decompress in (True, False):
        for strict in (False, True):
            decoded_both_ways(all_records, data, decompress, strict)
        for pos in (0, 1, 4, len(data) // 2, -1):
            for check_crc in (False, True):
                decoded_both_ways(storedrecords.decode_stored_record, data, pos, decompress=decompress,
                                  check_crc=check_crc)
    decoded_both_ways(requests.decode_records, data)
    stamped_both_ways(data, 3, 2**40)


def stamped_both_ways(data: bytes, min_offset: int, max_offset: int) -> tuple[Any, ...]:
    """A consumer's decode of a pull body, C against pure: same outcome, same property order."""
    got = outcome(pulling.stamped_messages, data, min_offset, max_offset)
    saved = pulling._native
    pulling._native = None
    try:
        with pure_record_decoding():
            expected = outcome(pulling.stamped_messages, data, min_offset, max_offset)
    finally:
        pulling._native = saved
    assert got == expected
    if got[0] == "ok":
        assert [list(m.properties.items()) for m in got[1]] == [list(m.properties.items()) for m in expected[1]]
    return got


@needs_native
@FUZZ
@given(record_runs(), int64s, int64s)
def test_pull_body_decode_matches_with_stamps(data: bytes, min_offset: int, max_offset: int) -> None:
    stamped_both_ways(data, min_offset, max_offset)


ascii_names = st.sampled_from(["UNIQ_KEY", "WAIT", "TAGS", "KEYS", "A", "N" * 40, "N" * 41, "é"])
ascii_values = st.sampled_from(["", "true", "x", "7F000001" * 4, "v" * 40, "v" * 41, "a\x01b", "ü"])
ascii_entries = st.one_of(st.tuples(ascii_names, ascii_values).map("\x01".join),
                          st.sampled_from(["", "noseparator", "\x01emptyname"]))


@st.composite
def shared_field_runs(draw: st.DrawFn) -> bytes:
    """Records as one batch stores them: one size and timestamp, the same few property names
    and values in raw text (empty entries, a missing last separator, repeated and long names,
    malformed entries), so the decoder's kept names, values and ints are hit and missed."""
    stamp, body = draw(int64s), draw(st.binary(max_size=8))
    parts = []
    for offset in range(draw(st.integers(1, 6))):
        text = "\x02".join(draw(st.lists(ascii_entries, max_size=5))) + draw(st.sampled_from(["", "\x02"]))
        parts.append(storedrecords.encode_stored_record(
            topic="T", queue_id=0, body=body, properties=text, born_timestamp=draw(st.sampled_from([stamp, 1])),
            store_timestamp=stamp, queue_offset=offset))
    return b"".join(parts)


@needs_native
@FUZZ
@given(shared_field_runs())
def test_pull_body_decode_matches_on_shared_names_values_and_ints(data: bytes) -> None:
    exercise_decoders(data)
    stamped = stamped_both_ways(data, 0, 9)
    if stamped[0] == "ok":  # a value under a name is the same whichever record made it first
        assert all(m.store_timestamp == stamped[1][0].store_timestamp for m in stamped[1])


@needs_native
def test_pull_body_decode_runs_in_c_and_keeps_a_stored_stamp_in_place() -> None:
    """One C call for a plain body; a record that already has MIN_OFFSET keeps that key where it
    was, with the new value (as an assignment would)."""
    props = {messageproperties.MIN_OFFSET: "old", "A": "b"}
    record = bytes(storedrecords.encode_stored_record(topic="T", queue_id=0, body=b"b", properties=props))
    assert nativecodecs.native is not None
    decoded = nativecodecs.native.decode_pulled(record * 2, storedrecords.MessageExt,
                                                {messageproperties.MIN_OFFSET: "1", messageproperties.MAX_OFFSET: "9"})
    assert decoded is not None and len(decoded) == 2
    assert list(decoded[0].properties.items()) == [
        (messageproperties.MIN_OFFSET, "1"), ("A", "b"), (messageproperties.MAX_OFFSET, "9")]
    stamped_both_ways(record * 2, 1, 9)

    class Shown(storedrecords.MessageExt):  # not the class whose slots the C code fills: it is called
        pass

    (other,) = nativecodecs.native.decode_pulled(record, Shown, {})
    assert type(other) is Shown
    assert dataclasses.asdict(other) == dataclasses.asdict(storedrecords.decode_stored_record(record))


@needs_native
@FUZZ
@given(record_runs())
def test_record_decoders_match_on_valid_runs(data: bytes) -> None:
    records = decoded_both_ways(all_records, data, False)
    assert records[0] == "ok" and records[1]
    exercise_decoders(data)


@needs_native
@FUZZ
@given(st.one_of(st.sampled_from(SEEDS).flatmap(mutated), record_runs().flatmap(mutated), st.binary(max_size=300)))
def test_record_decoders_match_on_garbage(data: bytes) -> None:
    exercise_decoders(data)


@needs_native
@pytest.mark.parametrize("name", ["message.bin", "batch_message.bin", "message_compress.bin"])
def test_record_decoders_match_on_real_broker_records(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    records = decoded_both_ways(all_records, data)
    assert records[0] == "ok" and records[1]
    exercise_decoders(data)
    exercise_decoders(data[:records[1][0].store_size])


@needs_native
def test_record_encoder_reproduces_real_broker_records() -> None:
    """Encoding the decoded fields of Apache RocketMQ's records gives their bytes back, both ways."""
    data = (FIXTURES / "batch_message.bin").read_bytes()
    for record in storedrecords.iter_stored_records(data):
        encoder = storedrecords.RecordEncoder(record.store_host)
        args = (record.topic, record.queue_id, record.body, record.flag,
                messageproperties.encode_properties(record.properties), record.sys_flag, record.born_timestamp,
                record.born_host, record.reconsume_times, record.prepared_transaction_offset, record.queue_offset,
                record.commit_log_offset, record.store_timestamp)
        encoded = same(encoder.encode, *args)[1][0]
        assert encoded in data


@needs_native
def test_native_crc32_is_zlibs() -> None:
    assert nativecodecs.native is not None
    for size in (0, 1, 7, 8, 9, 1024, 4099):
        data = os.urandom(size)
        assert nativecodecs.native.crc32(data) == zlib.crc32(data)



# --- remoting frames ---------------------------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), int32s, st.integers(-(2**40), 2**40), texts.filter(
    lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)), st.floats(allow_nan=False, allow_infinity=False))
header_fields = st.fixed_dictionaries({"code": int32s}, optional={
    "opaque": int32s | json_scalars, "flag": st.sampled_from([0, 1, 2, 3]) | json_scalars,
    "language": st.sampled_from(["JAVA", "PYTHON", "GO"]) | json_scalars, "version": int32s | json_scalars,
    "remark": json_scalars, "serializeTypeCurrentRPC": st.just("JSON"),
    "extFields": st.none() | st.dictionaries(st.text(max_size=8), st.text(max_size=12) | json_scalars, max_size=5),
})


def frame_view(header: bytes, body: bytes, serialize_type: int = 0) -> memoryview:
    """A frame without its length prefix, as the decoder's loop hands it over."""
    return memoryview(((serialize_type << 24) | len(header)).to_bytes(4, "big") + header + body)


@needs_native
@FUZZ
@given(header_fields | st.dictionaries(st.text(max_size=6), json_scalars, max_size=4), st.binary(max_size=40))
def test_frame_decoder_matches_on_json_headers(fields: dict[str, Any], body: bytes) -> None:
    same(frames._decode_view, frame_view(orjson.dumps(fields), body))


@needs_native
@FUZZ
@given(st.binary(max_size=120)
       | header_fields.map(lambda f: bytes(frame_view(orjson.dumps(f), b"body"))).flatmap(mutated))
def test_frame_decoder_matches_on_garbage(data: bytes) -> None:
    same(frames._decode_view, memoryview(data))


@needs_native
def test_frame_decoder_odd_frames_go_to_pure() -> None:
    request = frames.RemotingCommand(code=10, opaque=3, remark="r", ext_fields={"k": "v"}, body=b"b")
    encoded = memoryview(request.encode())[4:]
    assert same(frames._decode_view, encoded)[1].ext_fields == {"k": "v"}
    binary = frames.RemotingCommand(code=10, ext_fields={"k": "v"}, serialize_type=SerializeType.ROCKETMQ).encode()
    same(frames._decode_view, memoryview(binary)[4:])
    same(frames._decode_view, frame_view(b"[1]", b""))
    same(frames._decode_view, frame_view(b'{"code": 1}', b"", serialize_type=7))
    same(frames._decode_view, memoryview(b"\x00\x00"))
    same(frames._decode_view, b"not a view")


@needs_native
def test_common_input_is_handled_in_c() -> None:
    """Identical results would also come from a C routine that hands everything to the pure
    code; the speed would be gone without a failing test. So: the usual shapes never reach it."""
    assert nativecodecs.native is not None

    def refuse(*args: Any) -> Any:
        raise AssertionError(f"handed to the pure code: {args!r}")

    def in_c(function: Any, *args: Any) -> Any:
        assert nativecodecs.native is not None
        return nativecodecs.native.accelerate(function.__name__, refuse)(*args)

    request = frames.RemotingCommand(code=310, opaque=9, remark="hi", ext_fields={"a": "T", "b": "1"}, body=b"xyz")
    context = (frames.RemotingCommand, SerializeType.JSON, orjson.loads, frames.PROTOCOL_VERSION)
    decoded = nativecodecs.native.accelerate("_decode_view", refuse, *context)(memoryview(request.encode())[4:])
    assert (decoded.code, decoded.opaque, decoded.remark, decoded.ext_fields, decoded.body) == (
        310, 9, "hi", {"a": "T", "b": "1"}, b"xyz")
    with pytest.raises(AssertionError, match="handed to the pure code"):  # malformed: the pure code's
        in_c(messageproperties.decode_properties, "no separator")
    props = "TAGS\x01a\x02KEYS\x01k\x02"
    assert in_c(messageproperties.decode_properties, props) == {"TAGS": "a", "KEYS": "k"}
    assert in_c(messageproperties.encode_properties, {"TAGS": "a", "KEYS": "k"}) == props
    assert in_c(messageproperties.is_canonical, props, {"TAGS": "a", "KEYS": "k"}) is True
    assert in_c(javahash.java_string_hash, "TopicTest") == javahash.java_string_hash("TopicTest")
    body = batchbodies.encode_batch_entries([(b"one", 0, props), (b"two", 1, "")])
    assert in_c(batchbodies.batch_entries, body) == batchbodies.batch_entries(body)
    batch = bytes(storedrecords.encode_stored_record(topic="T", queue_id=0, body=b"b", properties=props))
    assert nativecodecs.native.decode_record(batch, 0, True, True, storedrecords.MessageExt) is not None
    records, end = nativecodecs.native.decode_records(batch * 3, 0, True, storedrecords.MessageExt)
    assert (len(records), end) == (3, 3 * len(batch))
