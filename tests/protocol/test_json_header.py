"""The frame decoder's own JSON header parser (native/jsonheader.c) against the orjson path.

The C parser reads the usual header shape and declines everything else to orjson; whatever it
accepts must decode to the command the pure decoder (orjson.loads, then the field checks) makes,
and whatever the pure decoder refuses must still be refused with its FrameError. Headers are
written here the ways real clients write them (fastjson's sorted keys, Go's struct order and
\\u003c escapes, jsoncpp's trailing newline and indentation, Python's ensure_ascii surrogate
pairs) and then mutated, truncated and garbled.
"""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_native_codecs import FUZZ, int32s, needs_native, same

from rocketq.protocol import frames, nativecodecs
from rocketq.protocol.codes import SerializeType
from rocketq.protocol.frames import RemotingCommand

EDGE_INTS = [0, 1, -1, 399, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 2**63, 10**10, -(10**10)]
NUMBER_TEXTS = ["0", "-0", "007", "1.0", "1e2", "1E2", "-", "+1", "2147483647", "-2147483648", "2147483648",
                "-2147483649", "00", "12345678901", "0.5", "1.", "-01", "9223372036854775807", " 5", "5 "]

TRICKY = ["\x00", "\x01", "\x02", "\x1f", "\x7f", '"', "\\", "/", "\b", "\f", "\n", "\r", "\t", "<", "&", "é", "中",
          "\u2028", "\U0001f600", "\ud800", "\udbff", "\udc00", "\udfff", "\ufffe", "a", " "]
strings = st.text(alphabet=st.sampled_from(TRICKY) | st.characters(), max_size=20)
names = st.sampled_from(["topic", "queueId", "properties", "a", "b", "i", "bname", "msgId", "x", "", "TAGS"]) | strings


def escaped(text: str, draw: st.DrawFn) -> str:
    """``text`` as a JSON string literal, each character written raw, as \\uXXXX (either case)
    or as its short escape where JSON has one: all the ways a client may write it."""
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = ['"']
    for char in text:
        way = draw(st.integers(0, 2))
        code = ord(char)
        if way == 0 and char not in ('"', "\\") and code >= 0x20 and not 0xD800 <= code <= 0xDFFF:
            out.append(char)
        elif way == 1 and char in short:
            out.append(short[char])
        elif code > 0xFFFF:
            high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
            out.append(draw(st.sampled_from([f"\\u{high:04x}\\u{low:04x}", f"\\u{high:04X}\\u{low:04X}"])))
        else:
            out.append(draw(st.sampled_from([f"\\u{code:04x}", f"\\u{code:04X}"])))
    out.append('"')
    return "".join(out)


@st.composite
def json_values(draw: st.DrawFn, kind: str) -> str:
    """A value for a field of ``kind`` ("int", "str", "ext"), usually of the type it should be."""
    if draw(st.integers(0, 9)) == 0:  # the wrong type, a null or a nested value
        return draw(st.sampled_from(["null", "true", "false", "1.5", "[]", "{}", '{"a":{"b":"c"}}', '"7"', "[1]",
                                     "17", '{"k":1}', '{"k":null}', '{"k":true}']))
    if kind == "int":
        return draw(st.sampled_from(NUMBER_TEXTS) | (st.sampled_from(EDGE_INTS) | int32s).map(str))
    if kind == "str":
        return escaped(draw(strings), draw)
    pairs = draw(st.lists(st.tuples(names, strings), max_size=6))
    return "{" + ",".join(f"{escaped(k, draw)}:{escaped(v, draw)}" for k, v in pairs) + "}"


KINDS = {"code": "int", "opaque": "int", "flag": "int", "version": "int", "language": "str", "remark": "str",
         "extFields": "ext", "serializeTypeCurrentRPC": "str"}


@st.composite
def header_texts(draw: st.DrawFn) -> bytes:
    """A JSON header: some of the known fields in any order, sometimes repeated or unknown ones,
    white space between tokens or not, a trailing newline (jsoncpp) or trailing garbage."""
    keys = draw(st.lists(st.sampled_from([*KINDS, "serializeTypeCurrentRPC"]), max_size=9))
    if draw(st.booleans()):
        keys = ["code", *keys]
    if draw(st.integers(0, 5)) == 0:
        keys.append(draw(st.sampled_from(["unknown", "Code", "ext", ""])))
    space = draw(st.sampled_from(["", "", " ", "\n  ", "\t"]))
    parts = []
    for key in keys:
        value = '"JSON"' if key == "serializeTypeCurrentRPC" and draw(st.booleans()) else draw(
            json_values(KINDS.get(key, "str")))
        parts.append(f'{space}"{key}"{space}:{space}{value}')
    text = "{" + ",".join(parts) + space + "}" + draw(st.sampled_from(["", "", "\n", " ", "x", "}", "\x00"]))
    return text.encode("utf-8", "surrogatepass")


@st.composite
def client_headers(draw: st.DrawFn) -> bytes:
    """A well-formed header as a client library writes it, from random fields."""
    ext = draw(st.dictionaries(names, strings, max_size=8))
    fields: dict[str, Any] = {"code": draw(int32s), "opaque": draw(int32s), "flag": draw(st.sampled_from([0, 1, 2])),
                              "language": draw(st.sampled_from(["JAVA", "GO", "CPP", "PYTHON", "RUST", "中"])),
                              "version": draw(st.sampled_from([399, 317, 0, -1]))}
    if draw(st.booleans()):
        fields["remark"] = draw(st.none() | strings)
    if ext or draw(st.booleans()):
        fields["extFields"] = ext
    style = draw(st.sampled_from(["fastjson", "go", "jsoncpp", "styled", "ascii", "orjson"]))
    if style == "fastjson":  # sorted keys, compact, raw UTF-8
        return json.dumps({**fields, "serializeTypeCurrentRPC": "JSON"}, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode("utf-8", "surrogatepass")
    if style == "go":  # struct order, <>& escaped as \u003c..., remark always present
        text = json.dumps({**fields, "remark": fields.get("remark") or ""}, separators=(",", ":"))
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()
    if style == "jsoncpp":  # sorted keys, compact, a newline at the end
        return (json.dumps(fields, sort_keys=True, separators=(",", ":")) + "\n").encode()
    if style == "styled":
        return json.dumps(fields, sort_keys=True, indent=3).encode()
    if style == "ascii":
        return json.dumps(fields).encode()
    try:
        return orjson.dumps(fields)
    except TypeError:  # a lone surrogate orjson will not write
        return json.dumps(fields).encode()


def frame_view(header: bytes, body: bytes = b"body") -> memoryview:
    return memoryview(len(header).to_bytes(4, "big") + header + body)


def check(header: bytes) -> tuple[Any, ...]:
    """The native decode equals the pure one, alone and inside a split of three frames."""
    got = same(frames._decode_view, frame_view(header))
    one = frame_view(header)
    stream = b"".join((len(one) + 4).to_bytes(4, "big") + bytes(one) for _ in range(3))
    split, reference = frames.split_frames(stream, 1 << 20), nativecodecs.pure(frames.split_frames)(stream, 1 << 20)
    assert split[:3] == reference[:3]
    assert repr(split[3]) == repr(reference[3])
    return got


@needs_native
@FUZZ
@given(client_headers())
def test_client_headers_match(header: bytes) -> None:
    check(header)


@needs_native
@FUZZ
@given(header_texts())
def test_any_header_text_matches(header: bytes) -> None:
    check(header)


@needs_native
@FUZZ
@given(client_headers() | header_texts(), st.data())
def test_truncated_and_garbled_headers_match(header: bytes, data: st.DataObject) -> None:
    check(header[: data.draw(st.integers(0, len(header)))])
    garbled = bytearray(header)
    for _ in range(data.draw(st.integers(1, 3))):
        if garbled:
            garbled[data.draw(st.integers(0, len(garbled) - 1))] = data.draw(
                st.sampled_from([0, 0x22, 0x5C, 0x7B, 0x7D, 0x2C, 0x3A, 0x80, 0xC3, 0xED, 0xFF, 0x20, 0x30]))
    check(bytes(garbled))


# Headers in the shapes real clients send (written after their serializers: Java 4.9 and 5.x
# fastjson, Go's encoding/json in rocketmq-client-go, jsoncpp in rocketmq-client-cpp).
REAL_HEADERS = [
    b'{"code":310,"extFields":{"a":"please_rename_unique_group_name","b":"TopicTest","c":"TBW102","d":"4",'
    b'"e":"1","f":"0","g":"1732526400000","h":"0","i":"UNIQ_KEY\\u0001C0A8010A00002A9F0000\\u0002WAIT\\u0001true'
    b'\\u0002TAGS\\u0001TagA\\u0002","j":"0","k":"false","m":"false"},"flag":0,"language":"JAVA","opaque":12,'
    b'"serializeTypeCurrentRPC":"JSON","version":399}',
    b'{"code":11,"extFields":{"consumerGroup":"cg","topic":"TopicTest","queueId":"0","queueOffset":"64",'
    b'"maxMsgNums":"32","sysFlag":"3","commitOffset":"0","suspendTimeoutMillis":"20000","subscription":"*",'
    b'"subVersion":"1732526400123","expressionType":"TAG","bname":"broker-a","lo":"true"},"flag":0,'
    b'"language":"JAVA","opaque":2147483647,"serializeTypeCurrentRPC":"JSON","version":453}',
    b'{"code":0,"extFields":{"msgId":"C0A8010A00002A9F0000","queueId":"1","queueOffset":"7","MSG_REGION":'
    b'"DefaultRegion","TRACE_ON":"true"},"flag":1,"language":"JAVA","opaque":-2147483648,"remark":null,'
    b'"serializeTypeCurrentRPC":"JSON","version":399}',
    b'{"code":310,"language":"GO","version":317,"opaque":5,"flag":0,"remark":"","extFields":{"a":"g","b":"t",'
    b'"i":"KEYS\\u0001k\\u003cx\\u003e\\u0026\\u0002TAGS\\u0001\\u4e2d\\u0002"}}',
    b'{"code":11,"extFields":{"queueId":"0","topic":"T"},"flag":0,"language":"CPP","opaque":1,'
    b'"remark":"","version":405}\n',
    b'{\n   "code" : 34,\n   "extFields" : null,\n   "flag" : 0,\n   "language" : "CPP",\n   "opaque" : 3\n}\n',
    b'{"code":310,"extFields":{"i":"TAGS\\u0001\\ud83d\\ude00\\u0002","topic":"\xe4\xb8\xad"},"language":"JAVA"}',
]


@needs_native
@pytest.mark.parametrize("header", REAL_HEADERS)
def test_real_client_headers_match(header: bytes) -> None:
    assert check(header)[0] == "ok"
    rng = random.Random(header)
    for cut in range(len(header)):
        check(header[:cut])
    for _ in range(200):
        garbled = bytearray(header)
        garbled[rng.randrange(len(garbled))] = rng.randrange(256)
        check(bytes(garbled))


@needs_native
@pytest.mark.parametrize("header", [
    b'{"code":1,"extFields":{' + b",".join(b'"k%d":"v%d"' % (i, i) for i in range(n)) + b"}}"
    for n in (0, 1, 5, 6, 31, 32, 33, 64, 100)
] + [
    b'{"code":1,"extFields":{' + b",".join(b'"k%d":"v"' % (i % m) for i in range(n)) + b"}}"
    for n, m in ((33, 32), (40, 35), (32, 31), (70, 69), (2, 1))  # a key repeated before, at and past the 32nd
] + [
    b'{"code":1,"remark":"' + b"\\u0001\\u00e9\\ud83d\\ude00" * n + b'"}' for n in (1, 15, 16, 17, 400)
])
def test_many_entries_and_long_escaped_strings_match(header: bytes) -> None:
    assert check(header)[0] == "ok"


def decoder_without_orjson(calls: list[bytes]) -> Any:
    """``_decode_view`` whose orjson.loads records what reaches it (and whose pure fallback refuses)."""
    assert nativecodecs.native is not None

    def loads(data: Any) -> Any:
        calls.append(bytes(data))
        return orjson.loads(data)

    def refuse(*args: Any) -> Any:
        raise AssertionError(f"handed to the pure code: {args!r}")

    return nativecodecs.native.accelerate("_decode_view", refuse, frames._command_of, SerializeType.JSON, loads,
                                          frames.PROTOCOL_VERSION)


@needs_native
def test_usual_headers_never_reach_orjson() -> None:
    """The speed is the point: the shapes clients send are parsed in C, not declined."""
    calls: list[bytes] = []
    decode = decoder_without_orjson(calls)
    for header in REAL_HEADERS:
        assert decode(frame_view(header)) == nativecodecs.pure(frames._decode_view)(frame_view(header))
    request = RemotingCommand(310, 9, 0, "r", {"topic": "T", "i": "TAGS\x01a\x02"}, b"b", "PYTHON")
    assert decode(memoryview(request.encode())[4:]) == request
    assert calls == []
    decode(frame_view(b'{"code":1,"extra":2}'))  # an unknown key: declined, orjson decides
    assert calls == [b'{"code":1,"extra":2}']


@needs_native
def test_known_names_are_shared_and_values_fresh() -> None:
    header = b'{"code":11,"extFields":{"topic":"topic","queueId":"0","zz":"v"},"language":"JAVA"}'
    first, second = frames._decode_view(frame_view(header)), frames._decode_view(frame_view(header))
    shared = [a is b for a, b in zip(first.ext_fields, second.ext_fields, strict=True)]
    assert shared == [True, True, False]  # RocketMQ's names are made once; another key is not
    assert all(a is not b for a, b in zip(first.ext_fields.values(), second.ext_fields.values(), strict=True))
    assert first.ext_fields["topic"] is not next(iter(first.ext_fields))  # a value equal to a name: fresh
