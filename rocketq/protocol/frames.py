"""RocketMQ remoting frames: the unit every request and response travels in.

A frame on the wire::

    int32 BE  length          = 4 + headerLen + bodyLen (does not count itself)
    int32 BE  serType<<24 | headerLen
    header    JSON (serType 0) or RocketMQ's binary layout (serType 1)
    body      the rest

``RemotingCommand`` is the decoded frame. ``FrameDecoder`` cuts a byte stream into frames (all
the whole frames of a read in one call, ``split_frames``, in C when the native codecs are in
use) and refuses anything that cannot be one (oversized, negative or inconsistent lengths,
undecodable headers) with ``FrameError`` *before* buffering the claimed payload, so a hostile
peer cannot make a process allocate what it claims. What to do about a bad frame (close that connection) is the
remoting layer's decision.

Decoding is on every request's path, so the common case is kept short: a read that starts
at a frame boundary is decoded straight from the bytes the socket gave (only an incomplete
tail is buffered), and a JSON header whose extFields are all strings (every Java client's) is
used as orjson returns it, without a converting copy. The C decoder (native/frames.c) reads the
usual header shape with its own parser (native/jsonheader.c: known keys, int32 numbers, string
extFields; RocketMQ's key names shared, not made anew per frame) and hands anything else to
orjson, so what it accepts decodes as here and what it declines is decided here.
"""

from __future__ import annotations

import struct
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final

import orjson

from rocketq.protocol import nativecodecs
from rocketq.protocol.codes import LanguageCode, SerializeType

DEFAULT_MAX_FRAME_SIZE: Final = 16 * 1024 * 1024
"""Largest frame accepted, as Netty's ``LengthFieldBasedFrameDecoder`` default in RocketMQ."""

MAX_HEADER_SIZE: Final = (1 << 24) - 1
RESPONSE_FLAG: Final = 1
ONEWAY_FLAG: Final = 2
PROTOCOL_VERSION: Final = 399
"""The ``version`` field Java 4.9.x clients send; informational only."""

_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_PREFIX = struct.Struct(">iI")
_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1
_BINARY_FIXED = struct.Struct(">hbhii")


class FrameError(ValueError):
    """The bytes cannot be a RocketMQ frame; the connection that sent them must be dropped."""


@dataclass(slots=True)
class RemotingCommand:
    code: int
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    language: str = "PYTHON"
    version: int = PROTOCOL_VERSION
    serialize_type: SerializeType = SerializeType.JSON
    body_parts: Sequence[bytes | memoryview] = ()
    """The body as buffers sent one after another, instead of ``body`` (which is then empty).

    A pull answer's body is the stored records themselves: memoryviews of the CommitLog's
    map, written to the socket as they are (``encode_buffers``) rather than copied into one
    ``bytes`` first. A view keeps its segment mapped (the map refuses to close while views
    exist), so a view outliving a retention deletion reads valid, unchanged bytes."""

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def response(
        self,
        code: int,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """A response to this request: same opaque, the response bit, the request's header type."""
        # positional: one is built per request, and keyword arguments cost more than the rest
        return RemotingCommand(code, self.opaque, RESPONSE_FLAG, remark, ext_fields or {}, body, "PYTHON",
                               PROTOCOL_VERSION, self.serialize_type)

    def encode(self) -> bytes:
        """The whole frame as one ``bytes`` (``body_parts`` joined in)."""
        if self.body_parts:
            return b"".join(self.encode_buffers())
        prefix, header = self._encode_head(len(self.body))
        return b"".join((prefix, header, self.body))

    def encode_buffers(self) -> list[bytes | memoryview]:
        """The frame as buffers to write in order: length and header, then the body's parts.

        The same bytes as ``encode``, without copying ``body_parts`` into one buffer.
        """
        parts = self.body_parts
        if not parts:
            return [*self._encode_head(len(self.body)), self.body]
        return [*self._encode_head(sum(map(len, parts))), *parts]

    def _encode_head(self, body_len: int) -> tuple[bytes, bytes]:
        if self.serialize_type == SerializeType.ROCKETMQ:
            header = _encode_binary_header(self)
        else:
            fields: dict[str, Any] = {"code": self.code, "flag": self.flag, "language": self.language,
                                      "opaque": self.opaque, "serializeTypeCurrentRPC": "JSON",
                                      "version": self.version}
            if self.remark is not None:
                fields["remark"] = self.remark
            if self.ext_fields:
                fields["extFields"] = self.ext_fields
            header = orjson.dumps(fields)
        if len(header) > MAX_HEADER_SIZE:
            raise FrameError(f"header of {len(header)} bytes does not fit in 24 bits")
        return _PREFIX.pack(4 + len(header) + body_len, (self.serialize_type << 24) | len(header)), header


def java_string(value: Any) -> str:
    """The string Java's ``toString()`` would give: extFields are strings on the wire."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _encode_binary_header(cmd: RemotingCommand) -> bytes:
    try:
        language = LanguageCode[cmd.language]
    except KeyError:
        language = LanguageCode.OTHER
    parts = [_BINARY_FIXED.pack(cmd.code, language, cmd.version, cmd.opaque, cmd.flag)]
    remark = (cmd.remark or "").encode()
    parts.append(_INT32.pack(len(remark)))
    parts.append(remark)
    ext = bytearray()
    for key, value in cmd.ext_fields.items():
        k, v = key.encode(), value.encode()
        ext += struct.pack(">h", len(k)) + k + _INT32.pack(len(v)) + v
    parts.append(_INT32.pack(len(ext)))
    parts.append(bytes(ext))
    return b"".join(parts)


def _string_fields(raw: Any) -> dict[str, str]:
    if raw.__class__ is dict:
        for value in raw.values():
            if value.__class__ is not str:
                break
        else:
            return raw  # all strings: orjson's dict is already the answer
    elif raw is None:
        return {}
    elif not isinstance(raw, Mapping):
        raise FrameError("extFields is not an object")
    return {str(k): java_string(v) for k, v in raw.items()}


def _int_field(header: Mapping[str, Any], name: str, default: int = 0) -> int:
    value = header.get(name, default)
    if value.__class__ is not int:  # bool is not an integer here, and orjson makes exact ints
        raise FrameError(f"header field {name!r} is not an integer")
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise FrameError(f"header field {name!r} is out of int32 range")
    return value


def decode_json_header(data: bytes | memoryview) -> RemotingCommand:
    try:
        header = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"undecodable JSON header: {exc}") from None
    if header.__class__ is not dict:
        raise FrameError("JSON header is not an object")
    if "code" not in header:
        raise FrameError("JSON header has no code")
    language = header.get("language", "JAVA")
    if language.__class__ is not str:
        if isinstance(language, int):
            language = LanguageCode(language).name if language in LanguageCode._value2member_map_ else "OTHER"
        language = str(language)
    remark = header.get("remark")
    if remark is not None and remark.__class__ is not str:
        remark = str(remark)
    code, opaque, flag = header["code"], header.get("opaque", 0), header.get("flag", 0)
    version = header.get("version", PROTOCOL_VERSION)
    if (code.__class__ is opaque.__class__ is flag.__class__ is version.__class__ is int
            and _INT32_MIN <= code <= _INT32_MAX and _INT32_MIN <= opaque <= _INT32_MAX
            and _INT32_MIN <= flag <= _INT32_MAX and _INT32_MIN <= version <= _INT32_MAX):
        ext = _string_fields(header.get("extFields"))
    else:
        # not the common shape: check field by field, in wire order, so the error names the field
        code, opaque, flag = _int_field(header, "code"), _int_field(header, "opaque"), _int_field(header, "flag")
        ext = _string_fields(header.get("extFields"))
        version = _int_field(header, "version", PROTOCOL_VERSION)
    return RemotingCommand(code, opaque, flag, remark, ext, b"", language, version, SerializeType.JSON)


def decode_binary_header(data: bytes | memoryview) -> RemotingCommand:
    buf = memoryview(data)
    try:
        code, language, version, opaque, flag = _BINARY_FIXED.unpack_from(buf, 0)
        pos = _BINARY_FIXED.size
        remark, pos = _read_sized(buf, pos, 4)
        (ext_len,) = _INT32.unpack_from(buf, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len != len(buf):
            raise FrameError("binary header extFields length is inconsistent")
        ext: dict[str, str] = {}
        while pos < len(buf):
            key, pos = _read_sized(buf, pos, 2)
            value, pos = _read_sized(buf, pos, 4)
            ext[key] = value
    except struct.error:
        raise FrameError("binary header is truncated") from None
    lang_name = LanguageCode(language).name if language in LanguageCode._value2member_map_ else "OTHER"
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        remark=remark or None,
        ext_fields=ext,
        language=lang_name,
        version=version,
        serialize_type=SerializeType.ROCKETMQ,
    )


def _read_sized(buf: memoryview, pos: int, width: int) -> tuple[str, int]:
    (size,) = struct.unpack_from(">h" if width == 2 else ">i", buf, pos)
    pos += width
    if size < 0 or pos + size > len(buf):
        raise FrameError("binary header string length is out of bounds")
    try:
        return bytes(buf[pos : pos + size]).decode(), pos + size
    except UnicodeDecodeError:
        raise FrameError("binary header string is not UTF-8") from None


def decode_frame(frame: bytes | memoryview) -> RemotingCommand:
    """Decode one frame without its 4-byte length prefix (``serType|headerLen`` first)."""
    with memoryview(frame) as view:
        return _decode_view(view)


def _command_of(*values: Any) -> RemotingCommand:
    """``RemotingCommand(*values)`` given every field in order: how the native decoder builds
    each request. Its C twin (``frozen_new``, native/headers.c) fills the slots directly, as
    the generated ``__init__`` does when every field is given (a Python ``__init__`` of ten
    fields was a tenth of a lone request's frame decode)."""
    return RemotingCommand(*values)


if nativecodecs.native is not None:
    _command_of = nativecodecs.native.accelerate(
        "frozen_new", _command_of, RemotingCommand, tuple(f.name for f in fields(RemotingCommand)))


@nativecodecs.accelerated_with(_command_of, SerializeType.JSON, orjson.loads, PROTOCOL_VERSION)
def _decode_view(view: memoryview) -> RemotingCommand:
    if len(view) < 4:
        raise FrameError("frame shorter than its header-length field")
    (mark,) = _UINT32.unpack_from(view, 0)
    ser_type, header_len = mark >> 24, mark & 0xFFFFFF
    if 4 + header_len > len(view):
        raise FrameError(f"header length {header_len} exceeds frame of {len(view)} bytes")
    header = view[4 : 4 + header_len]
    if ser_type == SerializeType.JSON:
        cmd = decode_json_header(header)
    elif ser_type == SerializeType.ROCKETMQ:
        cmd = decode_binary_header(header)
    else:
        raise FrameError(f"unknown serialize type {ser_type}")
    cmd.body = bytes(view[4 + header_len :])
    return cmd


@nativecodecs.accelerated_with(_command_of, SerializeType.JSON, orjson.loads, PROTOCOL_VERSION,
                               nativecodecs.pure(_decode_view), FrameError)
def split_frames(data: bytes, max_frame_size: int,
                 start: int = 0) -> tuple[list[RemotingCommand], int, int, FrameError | None]:
    """Every whole frame of ``data`` from ``start`` on: (their commands, where the rest starts
    in ``data``, the bytes a buffer starting there needs before its frame can be whole, the
    FrameError that stopped the split or None). A bad frame (a length outside ``[4,
    max_frame_size]``, an undecodable header) stops the split at its start; the frames before
    it are returned. ``start`` lets a read whose head finished a buffered frame be split in
    place, without copying the rest of it.

    Its C twin (native/frames.c) walks the frames in one loop, decoding each as
    ``_decode_view`` does; this is the reference, and what runs under ``ROCKETQ_NATIVE=0``."""
    commands: list[RemotingCommand] = []
    end = len(data)
    if not 0 <= start <= end:
        raise ValueError(f"start {start} outside [0, {end}]")
    pos = start
    with memoryview(data) as view:
        while end - pos >= 4:
            (length,) = _INT32.unpack_from(view, pos)
            if length < 4 or length > max_frame_size:
                return commands, pos, 4, FrameError(f"frame length {length} outside [4, {max_frame_size}]")
            if end - pos - 4 < length:
                return commands, pos, 4 + length, None
            try:
                commands.append(_decode_view(view[pos + 4 : pos + 4 + length]))
            except FrameError as exc:
                return commands, pos, 4, exc
            pos += 4 + length
    return commands, pos, 4, None


class FrameDecoder:
    """Cuts a byte stream into ``RemotingCommand``s; feed it whatever the socket gave.

    ``split`` gives every whole frame of a read at once (one native call, ``split_frames``).
    Only an incomplete frame at the end of a read is kept (in ``_buffer``); it is decoded once
    the reads that complete it have arrived, so a large frame trickling in costs one copy. The
    read that completes it gives the buffer just the frame's missing bytes; the rest of that
    read is split in place (``split_frames`` from an offset), not copied.
    A bad frame ends the stream: ``error`` says why, and nothing after it is decoded.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._buffer = bytearray()
        self._needed = 4
        """Buffered bytes needed before the buffered frame can be complete."""
        self._max = max_frame_size
        self._held: list[RemotingCommand] = []
        """Commands split but given back (``hold``): the next ``split`` returns them first."""
        self.error: FrameError | None = None
        """Why the stream cannot be read on (a bad frame); the frames before it were returned."""

    def split(self, data: bytes) -> list[RemotingCommand]:
        """The commands of every frame completed by ``data``, in order (held ones first). When a
        bad frame stops the stream, the frames before it are returned and ``error`` is set."""
        held = self._held
        if held:
            self._held = []
        if self.error is not None:
            return held
        buf = self._buffer
        start = 0
        if buf:
            start, finished = self._finish(data)
            if start < 0 or self.error is not None:  # all of data buffered, or a bad frame
                return held
            held = held + finished
        commands, pos, self._needed, self.error = split_frames(data, self._max, start)
        if pos < len(data) and self.error is None:
            buf += memoryview(data)[pos:]
        return held + commands if held else commands

    def _finish(self, data: bytes) -> tuple[int, list[RemotingCommand]]:
        """Complete the buffered frame from the head of ``data``: where the rest of ``data``
        starts and the frame's command (none on a bad frame: ``error``); -1 when all of
        ``data`` went into the buffer and the frame is still incomplete. Only the frame's own
        bytes are copied, never the rest of the read (a pipelining peer's reads of ~100 KB end
        mid-frame: joining buffer and read cost two copies of every such read)."""
        buf, start, end = self._buffer, 0, len(data)
        with memoryview(data) as view:
            while True:
                take = self._needed - len(buf)
                if take > end - start:
                    buf += view[start:]
                    return -1, []
                buf += view[start : start + take]
                start += take
                # the buffer is the length prefix (validated here) or the whole frame (decoded)
                finished, _, self._needed, self.error = split_frames(bytes(buf), self._max)
                if finished or self.error is not None:
                    buf.clear()
                    return start, finished

    def hold(self, commands: list[RemotingCommand]) -> None:
        """Give back commands ``split`` returned but the reader did not handle (a connection that
        stopped reading): the next ``split`` returns them first, before any new frame."""
        self._held = commands + self._held

    def feed(self, data: bytes) -> Generator[RemotingCommand, None, None]:
        """``split`` as a generator that raises the stream's FrameError after the frames before
        the bad one (a reader that handles everything it is given: tests, a simple peer)."""
        yield from self.split(data)
        if self.error is not None:
            raise self.error

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame kept, plus one per command held: nonzero while a later
        ``split`` has something to give or complete."""
        return len(self._buffer) + len(self._held)
