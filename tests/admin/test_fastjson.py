"""The fastjson dialect: standard JSON exactly as json.loads reads it, plus object and number keys."""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.admin import fastjson
from rocketq.admin.fastjson import FastJsonError, ObjectKey

# --- a fastjson writer for the tests (object keys, bare integer keys) -------------------------


def write(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{write_key(k)}:{write(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(write(v) for v in value) + "]"
    return json.dumps(value)


def write_key(key: Any) -> str:
    if isinstance(key, ObjectKey):
        return write(key.as_dict())
    if isinstance(key, int):
        return str(key)
    return json.dumps(key)


INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
SCALARS = st.none() | st.booleans() | INT64 | st.floats(allow_nan=False, allow_infinity=False) | st.text()
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
QUEUE_KEYS = st.builds(
    lambda topic, broker, qid: ObjectKey.of({"brokerName": broker, "queueId": qid, "topic": topic}),
    st.text(min_size=1, max_size=10), st.text(min_size=1, max_size=10), st.integers(0, 1023))
KEYS = st.text(max_size=8) | INT64 | QUEUE_KEYS
FASTJSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


def same(a: Any, b: Any) -> bool:
    """Equality that tells 1 from 1.0 and True from 1, as a JSON round trip must."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


@given(JSON_VALUES, st.booleans())
def test_standard_json_reads_as_json_loads_does(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert same(fastjson.parse(text), json.loads(text))
    assert same(fastjson.loads(text.encode()), json.loads(text))


@given(JSON_VALUES)
def test_whitespace_between_tokens_is_ignored(value: Any) -> None:
    text = json.dumps(value, indent=2, separators=(" , ", " : "))
    assert same(fastjson.parse(f" \r\n\t{text}\n "), json.loads(text))


@given(FASTJSON_VALUES)
def test_object_and_integer_keys_round_trip(value: Any) -> None:
    text = write(value)
    assert same(fastjson.loads(text.encode()), value)


@settings(max_examples=300)
@given(st.text(max_size=40))
def test_any_text_parses_or_raises_fastjson_error(text: str) -> None:
    with contextlib.suppress(FastJsonError):
        fastjson.parse(text)


@settings(max_examples=300)
@given(FASTJSON_VALUES, st.data())
def test_mutated_documents_parse_or_raise_fastjson_error(value: Any, data: st.DataObject) -> None:
    text = write(value)
    pos = data.draw(st.integers(0, len(text)))
    cut = data.draw(st.integers(0, 3))
    insert = data.draw(st.sampled_from(["", "{", "}", ",", ":", '"', "[", "]", "-", "1", "\\", "\x00", "tru"]))
    mutated = text[:pos] + insert + text[pos + cut:]
    with contextlib.suppress(FastJsonError):
        fastjson.loads(mutated.encode())


@settings(max_examples=200)
@given(st.binary(max_size=40))
def test_any_bytes_parse_or_raise_fastjson_error(raw: bytes) -> None:
    with contextlib.suppress(FastJsonError):
        fastjson.loads(raw)


def test_consume_stats_as_java_writes_it() -> None:
    text = (b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:'
            b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":1700000000000},'
            b'{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":3,"consumerOffset":3,'
            b'"lastTimestamp":0}}}')
    parsed = fastjson.loads(text)
    assert parsed["consumeTps"] == 1.5
    key = ObjectKey.of({"topic": "T", "brokerName": "broker-a", "queueId": 0})
    assert parsed["offsetTable"][key]["brokerOffset"] == 10
    assert key.get("queueId") == 0 and key.get("missing", "d") == "d"


def test_integer_keys_as_java_namesrv_writes_them() -> None:
    parsed = fastjson.loads(b'{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"n":-7}')
    assert parsed == {"brokerAddrs": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, "n": -7}


def test_key_field_order_does_not_matter() -> None:
    a = fastjson.loads(b'{{"a":1,"b":"x"}:1}')
    b = fastjson.loads(b'{{"b":"x","a":1}:1}')
    assert a == b


def test_repeated_keys_last_one_wins_on_both_paths() -> None:
    assert fastjson.loads(b'{"a":1,"a":2}') == {"a": 2}
    assert fastjson.loads(b'{0:1,0:2}') == {0: 2}


@pytest.mark.parametrize("text", [
    "", "   ", "{", "}", "[1,]", '{"a":1,}', "{'a':1}", '{"a" 1}', "[1 2]", "// c\n1", "/* c */1",
    "NaN", "Infinity", "-", "01", "1.", ".5", "1e", "+1", '"\\x"', '"a\nb"', "tru", "nul", "1 2",
    '{1.5:1}', '{true:1}', '{null:1}', '{[1]:2}', '{{"a":{"b":1}}:1}', '{{"a":[1]}:1}', '{{1:2}:3}',
    '"\\ud800"', "1e999",
])
def test_refused(text: str) -> None:
    with pytest.raises(FastJsonError):
        fastjson.loads(text.encode())


def test_not_utf8_is_refused() -> None:
    with pytest.raises(FastJsonError, match="UTF-8"):
        fastjson.loads(b'{0:"\xff"}')


def test_nesting_is_capped() -> None:
    depth = fastjson.MAX_DEPTH + 5
    with pytest.raises(FastJsonError, match="nesting"):
        fastjson.parse("[" * depth + "]" * depth)
    ok = fastjson.MAX_DEPTH - 1
    assert fastjson.parse("[" * ok + "]" * ok) is not None


def test_error_names_the_position() -> None:
    with pytest.raises(FastJsonError, match="position 7"):
        fastjson.parse('{"a":1,}')
