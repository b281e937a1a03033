"""Message codec: real RocketMQ records, round trips, properties, batch bodies, limits."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import batchbodies, javahash, messageerrors, messageproperties, messagetypes, msgid, storedrecords
from rocketq.protocol.messageerrors import MessageFormatError, MessageIllegalError, PropertiesSizeExceededError
from rocketq.protocol.messagetypes import Message, MessageSysFlag
from rocketq.protocol.storedrecords import MAGIC_V1, MAGIC_V2

# bytes written by a real Apache RocketMQ broker, kept in the repository (tests/fixtures/)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rocketmq-records"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


# --- real RocketMQ bytes -------------------------------------------------------------------------


def test_fixture_single_message() -> None:
    records = list(storedrecords.iter_stored_records(fixture("message.bin"), strict=True))
    assert len(records) == 1
    rec = records[0]
    assert rec.store_size == 132
    assert rec.magic == MAGIC_V1
    assert rec.topic == "TopicTest"
    assert rec.queue_id == 0
    assert rec.queue_offset == 276
    assert rec.commit_log_offset == 433806745406
    assert rec.properties == {"TAGS": "TagA"}
    assert rec.tags == "TagA"
    assert rec.body == b'{"room":"1","msg":"1"}'
    assert rec.body_crc == zlib.crc32(rec.body) & 0x7FFFFFFF
    assert rec.born_timestamp == 1442834438803
    assert rec.store_timestamp == 1442834438869
    assert rec.born_host == ("10.62.60.82", 54073)
    assert rec.store_host == ("10.218.145.166", 10700)
    assert rec.offset_msg_id == "0ADA91A6000029CC0000006500E59F3E"
    assert rec.msg_id == rec.offset_msg_id  # no UNIQ_KEY in a MetaQ-era record
    decoded = msgid.decode_offset_msg_id(rec.offset_msg_id)
    assert decoded.store_host == rec.store_host
    assert decoded.commit_log_offset == rec.commit_log_offset


def test_fixture_batch() -> None:
    records = list(storedrecords.iter_stored_records(fixture("batch_message.bin"), strict=True))
    assert [r.queue_offset for r in records] == [278, 279, 280]
    for rec in records:
        assert rec.store_size == 125
        assert rec.body == b"Hello MetaQ !!!"
        assert rec.tags == "TagA"
        assert rec.body_crc == storedrecords.body_crc(rec.body)


def test_fixture_compressed() -> None:
    records = list(storedrecords.iter_stored_records(fixture("message_compress.bin"), strict=True))
    assert len(records) == 1
    rec = records[0]
    assert rec.sys_flag == MessageSysFlag.COMPRESSED
    assert rec.store_size == 125
    assert rec.body == b"Hello MetaQ !!!"
    # The MetaQ broker computed BODYCRC over the original body, not the stored deflate stream.
    assert rec.body_crc == storedrecords.body_crc(b"Hello MetaQ !!!")
    raw = storedrecords.decode_stored_record(fixture("message_compress.bin"), decompress=False)
    assert zlib.decompress(raw.body) == b"Hello MetaQ !!!"


def test_record_size_at_fixture() -> None:
    data = fixture("message.bin")
    assert storedrecords.record_size_at(data, 0) == 132
    assert storedrecords.record_size_at(data, 132) == 0
    assert storedrecords.record_size_at(data, -1) == 0


# --- encode / decode ---------------------------------------------------------------------------


def sample(**overrides: object) -> bytes:
    fields: dict[str, object] = dict(
        topic="T", queue_id=3, body=b"hello", flag=7, properties={"TAGS": "a", "KEYS": "k1 k2"},
        sys_flag=0, born_timestamp=1000, born_host=("10.0.0.1", 1234), store_timestamp=2000,
        store_host=("10.0.0.2", 10911), reconsume_times=2, prepared_transaction_offset=99,
        queue_offset=5, physical_offset=77,
    )
    fields.update(overrides)
    return storedrecords.encode_stored_record(**fields)  # type: ignore[arg-type]


def test_round_trip_fields() -> None:
    rec = storedrecords.decode_stored_record(sample(), check_crc=True)
    assert (rec.topic, rec.queue_id, rec.body, rec.flag) == ("T", 3, b"hello", 7)
    assert rec.keys == ["k1", "k2"]
    assert rec.born_host == ("10.0.0.1", 1234)
    assert rec.store_host == ("10.0.0.2", 10911)
    assert (rec.reconsume_times, rec.prepared_transaction_offset) == (2, 99)
    assert (rec.queue_offset, rec.commit_log_offset) == (5, 77)
    assert (rec.born_timestamp, rec.store_timestamp) == (1000, 2000)
    assert rec.offset_msg_id == msgid.create_offset_msg_id(("10.0.0.2", 10911), 77)


def test_stamping_positions() -> None:
    buf = bytearray(sample(born_host=("::1", 5)))
    rec = storedrecords.decode_stored_record(buf)
    assert rec.sys_flag & MessageSysFlag.BORNHOST_V6
    storedrecords.POSITIONS.pack_into(buf, storedrecords.QUEUE_OFFSET_POS, 1234, 987654321)
    storedrecords.STORE_TIMESTAMP.pack_into(buf, storedrecords.store_timestamp_pos(rec.sys_flag), 42)
    stamped = storedrecords.decode_stored_record(buf, check_crc=True)
    assert (stamped.queue_offset, stamped.commit_log_offset, stamped.store_timestamp) == (1234, 987654321, 42)
    assert stamped.body == rec.body


def test_ipv6_hosts_and_v2_magic() -> None:
    data = sample(born_host=("fe80::1", 1), store_host=("2001:db8::7", 10911), magic=MAGIC_V2)
    rec = storedrecords.decode_stored_record(data)
    assert rec.magic == MAGIC_V2
    assert rec.sys_flag & (MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOST_V6) == 0x30
    assert rec.born_host == ("fe80::1", 1)
    assert rec.store_host == ("2001:db8::7", 10911)
    assert len(rec.offset_msg_id) == msgid.IPV6_ID_LENGTH


def test_v4_host_clears_v6_bits() -> None:
    rec = storedrecords.decode_stored_record(
        sample(sys_flag=0x30 | MessageSysFlag.COMPRESSED, body=zlib.compress(b"x")))
    assert rec.sys_flag & 0x30 == 0
    assert rec.body == b"x"


def test_compressed_zlib_type_bits() -> None:
    flag = MessageSysFlag.COMPRESSED | (int(messagetypes.CompressionType.ZLIB) << 8)
    rec = storedrecords.decode_stored_record(sample(sys_flag=flag, body=zlib.compress(b"payload" * 100)))
    assert rec.body == b"payload" * 100
    assert messagetypes.compression_type(rec.sys_flag) is messagetypes.CompressionType.ZLIB


def test_unsupported_compression_is_clear() -> None:
    flag = MessageSysFlag.COMPRESSED | (int(messagetypes.CompressionType.ZSTD) << 8)
    data = sample(sys_flag=flag, body=b"\x28\xb5\x2f\xfd")
    with pytest.raises(MessageFormatError, match="ZSTD"):
        storedrecords.decode_stored_record(data)
    assert storedrecords.decode_stored_record(data, decompress=False).body == b"\x28\xb5\x2f\xfd"


def test_corrupt_zlib_body() -> None:
    with pytest.raises(MessageFormatError, match="inflate"):
        storedrecords.decode_stored_record(sample(sys_flag=MessageSysFlag.COMPRESSED, body=b"not zlib"))


def test_crc_check() -> None:
    data = bytearray(sample())
    data[data.find(b"hello")] ^= 0x01
    with pytest.raises(MessageFormatError, match="BODYCRC"):
        storedrecords.decode_stored_record(data, check_crc=True)
    assert storedrecords.decode_stored_record(data).body != b"hello"


def test_limits() -> None:
    with pytest.raises(MessageIllegalError, match="exceeds"):
        sample(body=b"x" * 2000, max_message_size=1000)
    with pytest.raises(PropertiesSizeExceededError):
        sample(properties={"P": "v" * 40000})
    with pytest.raises(MessageIllegalError, match="topic length"):
        sample(topic="t" * 128)
    assert storedrecords.decode_stored_record(sample(topic="t" * 200, magic=MAGIC_V2)).topic == "t" * 200
    with pytest.raises(MessageIllegalError, match="topic length"):
        sample(topic="")
    with pytest.raises(MessageIllegalError, match="not an IP"):
        sample(born_host=("example.com", 1))
    with pytest.raises(MessageIllegalError, match="port"):
        sample(store_host=("1.2.3.4", 70000))
    with pytest.raises(MessageIllegalError, match="out of range"):
        sample(queue_id=1 << 40)


def test_iter_stops_cleanly() -> None:
    one, two = sample(physical_offset=0), sample(physical_offset=1)
    blank = struct.pack(">ii", 64, storedrecords.BLANK_MAGIC) + bytes(56)
    assert len(list(storedrecords.iter_stored_records(one + two + blank + one))) == 2
    assert len(list(storedrecords.iter_stored_records(one + bytes(30)))) == 1
    assert len(list(storedrecords.iter_stored_records(one + b"garbage!" * 10))) == 1
    assert list(storedrecords.iter_stored_records(b"")) == []
    torn = one + two[:-3]
    assert len(list(storedrecords.iter_stored_records(torn))) == 1
    with pytest.raises(MessageFormatError):
        list(storedrecords.iter_stored_records(torn, strict=True))


def test_inconsistent_totalsize_rejected() -> None:
    data = bytearray(sample())
    struct.pack_into(">i", data, 0, len(data) - 1)
    with pytest.raises(MessageFormatError):
        storedrecords.decode_stored_record(data)


# --- properties --------------------------------------------------------------------------------

prop_names = st.text(min_size=1, max_size=12).filter(lambda s: "\x01" not in s and "\x02" not in s)
prop_values = st.text(max_size=30).filter(lambda s: "\x01" not in s and "\x02" not in s)


@given(st.dictionaries(prop_names, prop_values, max_size=8))
def test_properties_round_trip(props: dict[str, str]) -> None:
    encoded = messageproperties.encode_properties(props)
    assert messageproperties.decode_properties(encoded) == props
    assert messageproperties.decode_properties(encoded.removesuffix("\x02")) == props
    for name, value in props.items():
        assert messageproperties.property_value(encoded, name) == value


def test_properties_edge_cases() -> None:
    assert messageproperties.decode_properties("") == {}
    assert messageproperties.decode_properties("A\x011\x02B\x01") == {"A": "1", "B": ""}
    assert messageproperties.decode_properties("A\x011\x02A\x012\x02") == {"A": "2"}
    with pytest.raises(MessageFormatError):
        messageproperties.decode_properties("A\x011\x02junk\x02")
    with pytest.raises(MessageFormatError):
        messageproperties.decode_properties("\x01v\x02")
    with pytest.raises(MessageIllegalError):
        messageproperties.encode_properties({"A\x01": "v"})
    with pytest.raises(MessageIllegalError):
        messageproperties.encode_properties({"A": "v\x02"})
    assert messageproperties.property_value("XKEYS\x01no\x02KEYS\x01yes", "KEYS") == "yes"
    assert messageproperties.property_value("A\x011", "B") is None


def test_message_convenience() -> None:
    msg = Message("T", b"b")
    msg.tags = "TagA"
    msg.keys = ["k1", "", "k2"]
    msg.uniq_key = "ID"
    msg.delay_level = 3
    assert msg.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ID", "DELAY": "3"}
    assert (msg.tags, msg.keys, msg.uniq_key, msg.delay_level) == ("TagA", ["k1", "k2"], "ID", 3)
    msg.tags = None
    msg.delay_level = 0
    assert "TAGS" not in msg.properties and "DELAY" not in msg.properties
    assert messageproperties.TRANSACTION_ID == "__transactionId__"


def test_sys_flag_fields() -> None:
    flag = messagetypes.with_transaction_type(MessageSysFlag.COMPRESSED, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
    assert messagetypes.transaction_type(flag) == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
    assert flag & MessageSysFlag.COMPRESSED
    flag = messagetypes.with_transaction_type(flag, MessageSysFlag.TRANSACTION_COMMIT_TYPE)
    assert messagetypes.transaction_type(flag) == MessageSysFlag.TRANSACTION_COMMIT_TYPE


# --- hashes ------------------------------------------------------------------------------------


def java_hash_reference(text: str) -> int:
    h = 0
    raw = text.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def test_java_hash_known_values() -> None:
    assert javahash.java_string_hash("") == 0
    assert javahash.java_string_hash("a") == 97
    assert javahash.java_string_hash("TagA") == 2598919  # "TagA".hashCode() in Java
    assert javahash.java_string_hash("polygenelubricants") == -2147483648
    assert javahash.tag_hash(None) == 0
    assert javahash.tag_hash("") == 0


@given(st.text(max_size=80))
def test_java_hash_matches_reference(text: str) -> None:
    assert javahash.java_string_hash(text) == java_hash_reference(text)


@given(st.text(max_size=40), st.text(max_size=40))
def test_java_hash_extends_a_prefix_hash(prefix: str, text: str) -> None:
    prefix_hash = javahash.java_string_hash_unsigned(prefix)
    assert javahash.java_string_hash_after(prefix_hash, text) == java_hash_reference(prefix + text) & 0xFFFFFFFF


entry_text = st.text(st.characters(blacklist_characters="\x01\x02"), max_size=6)


@given(st.lists(st.tuples(entry_text, st.sampled_from(["\x01", "\x01\x01", ""]), entry_text,
                          st.sampled_from(["\x02", ""])), max_size=5))
def test_canonical_properties_are_exactly_those_that_encode_back(entries: list[tuple[str, str, str, str]]) -> None:
    text = "".join("".join(e) for e in entries)
    try:
        props = messageproperties.decode_properties(text)
    except messageerrors.MessageFormatError:
        return
    try:
        round_trip = messageproperties.encode_properties(props)
    except messageerrors.MessageIllegalError:
        round_trip = None  # a value holding \x01 cannot be written again
    assert messageproperties.is_canonical(text, props) == (round_trip == text)


def _decode_properties_reference(text: str) -> dict[str, str] | str:
    out: dict[str, str] = {}
    for entry in text.split("\x02"):
        if not entry:
            continue
        name, sep, value = entry.partition("\x01")
        if not sep or not name:
            return f"malformed property entry {entry[:40]!r}"
        out[name] = value
    return out


@given(st.text(st.sampled_from("ab\x01\x02"), max_size=30))
def test_properties_decode_as_the_plain_loop_does(text: str) -> None:
    try:
        got: dict[str, str] | str = messageproperties.decode_properties(text)
    except messageerrors.MessageFormatError as exc:
        got = str(exc)
    assert got == _decode_properties_reference(text)


def test_canonical_properties_examples() -> None:
    assert messageproperties.is_canonical("", {})
    assert messageproperties.is_canonical("A\x01b\x02C\x01\x02", {"A": "b", "C": ""})
    assert not messageproperties.is_canonical("A\x01b", {"A": "b"})  # no final separator
    assert not messageproperties.is_canonical("A\x01b\x02A\x01c\x02", {"A": "c"})  # a repeated name
    assert not messageproperties.is_canonical("A\x01b\x01c\x02", {"A": "b\x01c"})  # a value with \x01
    assert not messageproperties.is_canonical("A\x01b\x02\x02", {"A": "b"})  # an empty entry


# --- batch bodies ------------------------------------------------------------------------------


def test_batch_round_trip() -> None:
    msgs = [Message("T", b"a" * i, flag=i, properties={"UNIQ_KEY": f"id{i}"}) for i in range(4)]
    items = batchbodies.decode_batch_body(batchbodies.encode_batch_body(msgs))
    assert [(i.flag, i.body, i.properties) for i in items] == [(m.flag, m.body, m.properties) for m in msgs]
    assert items[1].encoded_properties == "UNIQ_KEY\x01id1\x02"
    assert batchbodies.decode_batch_body(b"") == []


@given(st.lists(st.tuples(st.integers(-(1 << 31), (1 << 31) - 1), st.binary(max_size=50),
                          st.dictionaries(prop_names, prop_values, max_size=3)), max_size=5))
def test_batch_round_trip_property(raw: list[tuple[int, bytes, dict[str, str]]]) -> None:
    msgs = [Message("T", body, flag, props) for flag, body, props in raw]
    items = batchbodies.decode_batch_body(batchbodies.encode_batch_body(msgs))
    assert [(i.flag, i.body, i.properties) for i in items] == raw


def test_batch_bad_bodies() -> None:
    good = batchbodies.encode_batch_body([Message("T", b"abc", 0, {"A": "1"})])
    for bad in (good[:-1], good + b"\x00", good[:10], struct.pack(">iiiii", 5, 0, 0, 0, 0) + b"\x00\x00"):
        with pytest.raises(MessageFormatError):
            batchbodies.decode_batch_body(bad)
    huge_len = bytearray(good)
    struct.pack_into(">i", huge_len, 16, 1 << 30)
    with pytest.raises(MessageFormatError):
        batchbodies.decode_batch_body(huge_len)


def test_java_hash_long_and_mixed_text() -> None:
    for text in ("x" * 1000, "topic#" + "7F000001" * 40, "\x00\x7f" * 10, "ascii then ü", "😀" * 3):
        assert javahash.java_string_hash(text) == java_hash_reference(text)


def test_record_encoder_matches_function() -> None:
    encoder = storedrecords.RecordEncoder(("10.0.0.2", 10911))
    raw, ts_pos = encoder.encode("T", 3, b"hello", 7, "TAGS\x01a\x02", 0, 1000, ("10.0.0.1", 1234), 2, 99)
    assert ts_pos == storedrecords.store_timestamp_pos(0)
    assert raw == storedrecords.encode_stored_record(topic="T", queue_id=3, body=b"hello", flag=7,
                                               properties={"TAGS": "a"}, born_timestamp=1000,
                                               born_host=("10.0.0.1", 1234), store_host=("10.0.0.2", 10911),
                                               reconsume_times=2, prepared_transaction_offset=99)
    _raw6, ts_pos6 = encoder.encode("T", 3, b"", 0, "", 0, 0, ("::1", 1))
    assert ts_pos6 == storedrecords.store_timestamp_pos(MessageSysFlag.BORNHOST_V6) == 68
    with pytest.raises(MessageIllegalError):
        storedrecords.RecordEncoder(("10.0.0.2", 1), magic=12345)


topics = st.text(alphabet="abcXYZ019_-%|", min_size=1, max_size=127)
hosts = st.tuples(st.ip_addresses().map(str), st.integers(0, 65535))
int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)


@given(topic=topics, queue_id=int32, body=st.binary(max_size=300), flag=int32,
       props=st.dictionaries(prop_names, prop_values, max_size=5),
       sys_flag=st.sampled_from([0, 0x2, 0x4, 0x8, 0xC, 0x80, 0x8A]),
       born_ts=int64, born=hosts, store_ts=int64, store=hosts, reconsume=int32, prepared=int64,
       queue_offset=int64, phys=st.integers(0, (1 << 63) - 1), v2=st.booleans())
def test_stored_record_round_trip(topic: str, queue_id: int, body: bytes, flag: int, props: dict[str, str],
                                  sys_flag: int, born_ts: int, born: tuple[str, int], store_ts: int,
                                  store: tuple[str, int], reconsume: int, prepared: int, queue_offset: int,
                                  phys: int, v2: bool) -> None:
    raw = storedrecords.encode_stored_record(
        topic=topic, queue_id=queue_id, body=body, flag=flag, properties=props, sys_flag=sys_flag,
        born_timestamp=born_ts, born_host=born, store_timestamp=store_ts, store_host=store,
        reconsume_times=reconsume, prepared_transaction_offset=prepared, queue_offset=queue_offset,
        physical_offset=phys, magic=MAGIC_V2 if v2 else MAGIC_V1)
    rec = storedrecords.decode_stored_record(raw, check_crc=True)
    assert rec.store_size == len(raw)
    assert (rec.topic, rec.queue_id, rec.body, rec.flag, rec.properties) == (topic, queue_id, body, flag, props)
    assert (rec.born_timestamp, rec.store_timestamp, rec.queue_offset, rec.commit_log_offset) == (
        born_ts, store_ts, queue_offset, phys)
    assert (rec.reconsume_times, rec.prepared_transaction_offset) == (reconsume, prepared)
    assert rec.sys_flag & ~0x30 == sys_flag
    assert msgid.decode_offset_msg_id(rec.offset_msg_id).commit_log_offset == phys
    assert [r.commit_log_offset for r in storedrecords.iter_stored_records(raw + raw, strict=True)] == [phys, phys]


def test_the_compatibility_module_re_exports_the_split_modules_objects() -> None:
    from rocketq.protocol import (
        batchbodies,
        javahash,
        message,
        messageerrors,
        messageproperties,
        messagetypes,
        storedrecords,
    )

    modules = (messageerrors, javahash, messageproperties, messagetypes, storedrecords, batchbodies)
    public = [n for n in vars(message) if not n.startswith("_") and n != "annotations"]
    assert len(public) > 80
    for name in public:
        assert any(getattr(m, name, None) is getattr(message, name) for m in modules), name
