"""Option parsing of the rocketmq source: offset specs and their resolution (no Spark, no cluster)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rocketq_spark import reading
from rocketq_spark.reading import EARLIEST, LATEST, SourceError

from rocketq.admin.stats import MessageQueue


def test_words_and_json() -> None:
    assert reading.parse_offsets(None, EARLIEST, "x") == EARLIEST
    assert reading.parse_offsets(" Latest ", EARLIEST, "x") == LATEST
    spec = reading.parse_offsets('{"broker-a": {"0": 5, "3": -2}}', EARLIEST, "x")
    assert spec == {("broker-a", 0): 5, ("broker-a", 3): EARLIEST}
    assert reading.spec_for(spec, MessageQueue("T", "broker-a", 0), LATEST) == 5
    assert reading.spec_for(spec, MessageQueue("T", "broker-b", 0), LATEST) == LATEST


@pytest.mark.parametrize("text", ["yesterday", "[1, 2]", '{"b": 3}', '{"b": {"0": -3}}', '{"b": {"x": 1}}',
                                  '{"b": {"0": true}}', '{"b": {"0": "1"}}'])
def test_bad_specs_name_the_option(text: str) -> None:
    with pytest.raises(SourceError, match="startingOffsets"):
        reading.parse_offsets(text, EARLIEST, "startingOffsets")


@given(st.integers(-2, 10**6), st.integers(0, 1000), st.integers(0, 1000))
def test_resolved_offsets_stay_within_the_queue(offset: int, low: int, span: int) -> None:
    high = low + span
    assert low <= reading.resolve(offset, low, high) <= high
