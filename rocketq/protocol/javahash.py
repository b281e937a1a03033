"""Java's ``String.hashCode``, which RocketMQ uses as a tag's code and in index keys.

A consumer queue unit stores a message's *tag hash code*, and a broker filters pulls by it;
IndexFile slots are chosen by the hash of ``topic#key``. Both must equal what a Java broker
computes, so this is ``String.hashCode`` over UTF-16 code units, as a signed 32-bit int (and
unsigned for slot arithmetic). ``java_string_hash_after`` extends a prefix's hash, so a store
hashes ``topic#`` once per topic and then only each key.
"""

from __future__ import annotations

import functools
import operator
import struct
from typing import Final

from rocketq.protocol import nativecodecs

_INT32_MASK: Final = 0xFFFFFFFF


@functools.cache
def _powers_of_31(length: int) -> tuple[int, ...]:
    """31**(n-1) .. 31**0, each reduced mod 2**32: the weights of Java's polynomial hash."""
    powers = [1] * length
    for i in range(length - 2, -1, -1):
        powers[i] = (powers[i + 1] * 31) & _INT32_MASK
    return tuple(powers)


_BASE31_DIGITS: Final = "0123456789abcdefghijklmnopqrstu"
_LOW_DIGIT: Final = str.maketrans({c: _BASE31_DIGITS[c % 31] for c in range(128)})
_HIGH_DIGIT: Final = str.maketrans({c: _BASE31_DIGITS[c // 31] for c in range(128)})


@nativecodecs.accelerated
def java_string_hash_unsigned(text: str) -> int:
    """Java's ``String.hashCode()`` over the UTF-16 code units of ``text``, as 0 .. 2**32-1.

    The hash is the polynomial sum(c[i] * 31**(n-1-i)) mod 2**32: for ASCII text each code
    c = lo + 31*hi with lo, hi < 31, so it is int(lo digits, 31) + 31 * int(hi digits, 31), two
    C-level parses instead of a Python loop over characters (this runs for every index key).
    Other text uses a dot product with pre-reduced weights.
    """
    if not text:
        return 0
    if text.isascii():
        return (int(text.translate(_LOW_DIGIT), 31) + 31 * int(text.translate(_HIGH_DIGIT), 31)) & _INT32_MASK
    raw = text.encode("utf-16-be")
    length = len(raw) // 2
    units = struct.unpack(f">{length}H", raw)
    return sum(map(operator.mul, units, _powers_of_31(length))) & _INT32_MASK


@nativecodecs.accelerated
def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (signed 32-bit) over the UTF-16 code units of ``text``."""
    value = java_string_hash_unsigned(text)
    return value - 0x100000000 if value & 0x80000000 else value


@nativecodecs.accelerated
def java_string_hash_after(prefix_hash: int, text: str) -> int:
    """``java_string_hash_unsigned(prefix + text)`` from the prefix's unsigned hash.

    The polynomial composes: hash(p + t) = hash(p) * 31**len16(t) + hash(t) (mod 2**32), where
    len16 counts UTF-16 code units. A caller hashing many keys behind one prefix (the index's
    ``topic#``) hashes the prefix once.
    """
    units = len(text) if text.isascii() else len(text.encode("utf-16-be")) // 2
    return (prefix_hash * _power_of_31(units) + java_string_hash_unsigned(text)) & _INT32_MASK


@functools.lru_cache(maxsize=1024)
def _power_of_31(n: int) -> int:
    return pow(31, n, 1 << 32)


@functools.lru_cache(maxsize=4096)
def tag_hash(tag: str | None) -> int:
    """The ConsumeQueue tag code of a TAGS value: Java's hashCode, 0 when there is no tag.

    Cached: a topic's messages carry few distinct tags, and every message needs its code.
    """
    if not tag:
        return 0
    return java_string_hash(tag)
