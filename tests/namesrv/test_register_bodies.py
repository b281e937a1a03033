"""Register bodies as Java brokers send them (JSON, compressed), and hostile ones."""

from __future__ import annotations

import contextlib
import json
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.namesrv import registerbodies
from rocketq.namesrv.registerbodies import RegisterBrokerBody
from rocketq.protocol.sharedbodies import BodyError, DataVersion, TopicConfig

JAVA_JSON = (
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000000},'
    b'"topicConfigTable":{"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",'
    b'"topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},"%RETRY%g":{"order":false,"perm":6,'
    b'"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"%RETRY%g","topicSysFlag":0,'
    b'"writeQueueNums":1}}}}'
)


def java_compressed(version: bytes, topics: list[bytes], filters: bytes = b"[]") -> bytes:
    """The layout RegisterBrokerBody.encode(true) writes, assembled by hand."""
    chunks = [struct.pack(">i", len(version)), version, struct.pack(">i", len(topics))]
    for t in topics:
        chunks += [struct.pack(">i", len(t)), t]
    chunks += [struct.pack(">i", len(filters)), filters]
    return zlib.compress(b"".join(chunks))


def test_java_json_body() -> None:
    body = registerbodies.decode_register_body(JAVA_JSON, compressed=False)
    assert body.data_version == DataVersion(1700000000000, 3)
    assert {tc.topic_name: tc.read_queue_nums for tc in body.topic_configs} == {"TopicTest": 4, "%RETRY%g": 1}
    assert body.filter_servers == ()


def test_java_compressed_body() -> None:
    data = java_compressed(b'{"counter":7,"timestamp":5}',
                           [b"TopicTest 8 8 6 SINGLE_TAG ", b'Attr 2 2 4 MULTI_TAG {"+a":"b c"}'],
                           b'["10.0.0.9:1"]')
    body = registerbodies.decode_register_body(data, compressed=True)
    assert body.data_version == DataVersion(5, 7)
    assert body.topic_configs == (TopicConfig("TopicTest", 8, 8, 6), TopicConfig("Attr", 2, 2, 4, "MULTI_TAG"))
    assert body.filter_servers == ("10.0.0.9:1",)


def test_deflated_json_body_is_accepted() -> None:
    body = registerbodies.decode_register_body(zlib.compress(JAVA_JSON), compressed=True)
    assert len(body.topic_configs) == 2


@pytest.mark.parametrize("compress", [False, True])
def test_encode_round_trip(compress: bool) -> None:
    original = RegisterBrokerBody(
        (TopicConfig("A", 4, 4, 6), TopicConfig("B", 1, 2, 2, "MULTI_TAG")), DataVersion(9, 8), ("f:1",))
    assert registerbodies.decode_register_body(registerbodies.encode_register_body(original, compress=compress),
                                       compressed=compress) == original


def test_empty_body_is_an_empty_table() -> None:
    assert registerbodies.decode_register_body(b"", compressed=False) == RegisterBrokerBody()


def test_missing_fields_take_java_defaults() -> None:
    body = registerbodies.decode_register_body(b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{}}}}',
                                       compressed=False)
    assert body.topic_configs == (TopicConfig("T", 16, 16, 6),)
    assert body.data_version == DataVersion()


def test_numbers_and_booleans_written_as_strings_register_as_fastjson_reads_them() -> None:
    """A non-Java broker (or tool) may write values as strings; a Java name server reads them."""
    raw = (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":"4",'
           b'"writeQueueNums":"4.0","perm":"6","topicSysFlag":"0","order":"true"}},'
           b'"dataVersion":{"timestamp":"1700000000000","counter":"3"}}}')
    body = registerbodies.decode_register_body(raw, compressed=False)
    assert body.topic_configs == (TopicConfig("T", 4, 4, 6, order=True),)
    assert body.data_version == DataVersion(1700000000000, 3)


@pytest.mark.parametrize("raw, message", [
    (b"not json", "not valid JSON"),
    (b"[]", "must be a JSON object"),
    (b'{"topicConfigSerializeWrapper":[]}', "topicConfigSerializeWrapper must be a JSON object"),
    (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":-1}}}}', "readQueueNums"),
    (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"rw"}}}}', "perm"),
    (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":8}}}}', "perm 8"),
    (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"writeQueueNums":true}}}}', "writeQueueNums"),
    (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":""}}}}', "topic name"),
    (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicFilterType":"X"}}}}', "topicFilterType"),
    (b'{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"x"}}}', "counter"),
    (b'{"filterServerList":[1]}', "filterServerList"),
])
def test_bad_json_bodies_are_refused_with_a_clear_reason(raw: bytes, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        registerbodies.decode_register_body(raw, compressed=False)


@pytest.mark.parametrize("data, message", [
    (b"\x00\x01garbage", "does not inflate"),
    (zlib.compress(b"\x00\x00\x00"), "ends before"),
    (zlib.compress(b"\x00\x00\x00\x05{}"), "ends inside"),
    (java_compressed(b"{}", [b"T 1 1"]), "fewer than 5"),
    (java_compressed(b"{}", [b"T x 1 6 SINGLE_TAG"]), "not an integer"),
    (java_compressed(b"{}", [b"T 1_0 1 6 SINGLE_TAG"]), "not an integer"),
    (java_compressed(b"{}", [b"T 1 1 6 WHAT"]), "topicFilterType"),
    (java_compressed(b"{}", [], b"{}"), "filterServerList"),
    (zlib.compress(b"\x7f\xff\xff\xff"), "impossible"),
    (zlib.compress(JAVA_JSON)[:-3], "truncated"),
])
def test_bad_compressed_bodies_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        registerbodies.decode_register_body(data, compressed=True)


def test_zip_bomb_is_refused_without_inflating_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registerbodies, "MAX_INFLATED_BODY", 1024)
    with pytest.raises(BodyError, match="inflates beyond"):
        registerbodies.decode_register_body(zlib.compress(b" " * 4096), compressed=True)


def test_crc32_is_javas_masked_value() -> None:
    data = b"some body"
    masked = zlib.crc32(data) & 0x7FFFFFFF
    assert registerbodies.java_crc32(data) == masked
    registerbodies.check_crc32(data, 0)
    registerbodies.check_crc32(data, masked)
    registerbodies.check_crc32(data, zlib.crc32(data))
    with pytest.raises(BodyError, match="crc32 not match"):
        registerbodies.check_crc32(data, masked ^ 1)


def test_data_version_body() -> None:
    assert registerbodies.decode_data_version(b'{"counter":2,"timestamp":3,"stateVersion":1}') == DataVersion(3, 2, 1)
    with pytest.raises(BodyError):
        registerbodies.decode_data_version(b"")
    with pytest.raises(BodyError):
        registerbodies.decode_data_version(b'{"counter":1.5}')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(doc=st.dictionaries(
    st.sampled_from(["topicConfigSerializeWrapper", "filterServerList", "x"]),
    json_values | st.fixed_dictionaries({}, optional={
        "topicConfigTable": st.dictionaries(st.text(max_size=5), json_values, max_size=3),
        "dataVersion": json_values}),
))
def test_any_json_shape_parses_or_raises_body_error(doc: dict) -> None:
    try:
        body = registerbodies.decode_register_body(json.dumps(doc).encode(), compressed=False)
    except BodyError:
        return
    assert all(tc.topic_name and tc.perm <= 7 for tc in body.topic_configs)


@given(data=st.binary(max_size=200), compressed=st.booleans())
def test_any_bytes_parse_or_raise_body_error(data: bytes, compressed: bool) -> None:
    for candidate in (data, zlib.compress(data)):
        with contextlib.suppress(BodyError):
            registerbodies.decode_register_body(candidate, compressed=compressed)


def test_a_rocketmq_5_compressed_body_with_its_queue_mapping_section() -> None:
    """RocketMQ 5's encode(true): Deflater.BEST_COMPRESSION, a trailing separator after the
    filter type, and after the filter servers an int32 count of static-topic mappings."""
    version = b'{"counter":2,"stateVersion":0,"timestamp":9}'
    mapping = b'{"bname":"b","epoch":0,"topic":"Static","totalQueues":4}'
    chunks = [struct.pack(">i", len(version)), version, struct.pack(">i", 1)]
    topic = b"Plain 8 8 6 SINGLE_TAG "
    chunks += [struct.pack(">i", len(topic)), topic, struct.pack(">i", 2), b"[]"]
    chunks += [struct.pack(">i", 1), struct.pack(">i", len(mapping)), mapping]
    data = zlib.compress(b"".join(chunks), 9)
    body = registerbodies.decode_register_body(data, compressed=True)
    assert body.topic_configs == (TopicConfig("Plain", 8, 8, 6),)
    assert body.data_version == DataVersion(9, 2)


def _java_49_decode(data: bytes) -> tuple[bytes, list[list[str]], bytes]:
    """RocketMQ 4.9's RegisterBrokerBody.decode(data, true) and TopicConfig.decode rules, written
    out independently: Java's String.split drops trailing empty strings, and 4.9 wants exactly 5."""
    raw = zlib.decompress(data)
    pos = 0

    def chunk() -> bytes:
        nonlocal pos
        (size,) = struct.unpack_from(">i", raw, pos)
        out = raw[pos + 4:pos + 4 + size]
        pos += 4 + size
        return out

    version = chunk()
    (count,) = struct.unpack_from(">i", raw, pos)
    pos += 4
    topics = []
    for _ in range(count):
        parts = chunk().decode().split(" ")
        while parts and parts[-1] == "":
            parts.pop()
        assert len(parts) == 5, parts
        topics.append(parts)
    return version, topics, chunk()


def test_what_a_rocketq_broker_sends_compressed_decodes_by_java_4_9_rules() -> None:
    body = RegisterBrokerBody((TopicConfig("A", 8, 8, 6), TopicConfig("%RETRY%g", 1, 1, 6)), DataVersion(5, 3))
    version, topics, filters = _java_49_decode(registerbodies.encode_register_body(body, compress=True))
    assert json.loads(version)["counter"] == 3
    assert topics == [["A", "8", "8", "6", "SINGLE_TAG"], ["%RETRY%g", "1", "1", "6", "SINGLE_TAG"]]
    assert json.loads(filters) == []


@pytest.mark.parametrize("compress", [False, True])
def test_topics_are_not_parsed_when_the_caller_does_not_want_them(compress: bool) -> None:
    body = RegisterBrokerBody((TopicConfig("A", 8, 8, 6),), DataVersion(5, 3), ("10.0.0.1:1",))
    data = registerbodies.encode_register_body(body, compress=compress)
    asked: list[DataVersion] = []

    def unchanged(version: DataVersion) -> bool:
        asked.append(version)
        return False

    skipped = registerbodies.decode_register_body(data, compressed=compress, wants_topics=unchanged)
    assert asked == [DataVersion(5, 3)]
    assert skipped == RegisterBrokerBody((), DataVersion(5, 3), ("10.0.0.1:1",))
    assert registerbodies.decode_register_body(data, compressed=compress, wants_topics=lambda v: True) == body
