"""``putting.index_properties``: the C twin (native/putfields.c) finds what the pure one finds.

The pure reference is three ``property_value`` calls; the C routine reads TAGS, UNIQ_KEY and
KEYS in one pass of the text's UTF-8 form. Random texts built from the names, their near
misses, both separators, non-ASCII and astral characters and lone surrogates (which the C
routine leaves to the pure one) must give equal results.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import nativecodecs
from rocketq.store.putting import index_properties

needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")

_pieces = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "TAG", "KEY", "UNIQ_KEYS", "XTAGS", "\x01", "\x02", "a", " ",
                           "é", "漢", "\U0001F600", "\ud800", "WAIT\x01true\x02"])
_texts = st.lists(_pieces, max_size=30).map("".join)


@needs_native
@settings(max_examples=500, deadline=None)
@given(text=_texts)
def test_native_finds_what_the_pure_one_finds(text: str) -> None:
    assert index_properties(text) == nativecodecs.pure(index_properties)(text)


def test_first_entry_of_each_name() -> None:
    text = "KEYS\x01k1 k2\x02TAGS\x01A\x02KEYS\x01later\x02XUNIQ_KEY\x01no\x02UNIQ_KEY\x01u\x01v"
    assert index_properties(text) == ("A", "u\x01v", "k1 k2")
    assert index_properties("TAGSX\x01a\x02\x02KEYS\x01") == (None, None, "")


def test_anything_but_a_str_goes_to_the_pure_function() -> None:
    with pytest.raises(TypeError):
        index_properties(b"TAGS\x01a")  # type: ignore[arg-type]
