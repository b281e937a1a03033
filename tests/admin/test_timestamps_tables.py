"""mqadmin's time formats and the aligned tables."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.admin import tables, timestamps
from rocketq.admin.timestamps import TimestampError


def test_now_millis_and_negatives() -> None:
    assert timestamps.parse("now", now=123) == 123
    assert timestamps.parse(" NOW ", now=5) == 5
    assert timestamps.parse("1700000000000") == 1700000000000
    assert timestamps.parse("-1") == -1


def test_mqadmin_date_is_local_time() -> None:
    millis = timestamps.parse("2024-03-05#10:20:30:123")
    moment = datetime.datetime.fromtimestamp(millis / 1000)
    assert (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second) == \
        (2024, 3, 5, 10, 20, 30)
    assert millis % 1000 == 123
    assert timestamps.human(millis) == "2024-03-05 10:20:30,123"


@given(st.integers(min_value=1, max_value=4102444800000))
def test_human_then_parse_round_trips(millis: int) -> None:
    text = timestamps.human(millis).replace(" ", "#").replace(",", ":")
    assert timestamps.parse(text) == millis or _in_dst_fold(millis)


def _in_dst_fold(millis: int) -> bool:
    """A local time that happens twice (DST ending) maps back to its first instant."""
    moment = datetime.datetime.fromtimestamp(millis / 1000)
    return moment.replace(fold=0).timestamp() != moment.replace(fold=1).timestamp()


@pytest.mark.parametrize("text", [
    "", "yesterday", "2024-03-05", "2024-03-05 10:20:30:123", "2024-13-05#10:20:30:123",
    "2024-02-30#10:20:30:123", "2024-03-05#25:00:00:000", "99999999999999999999", "1e3", "0000-01-01#00:00:00:000",
])
def test_bad_times(text: str) -> None:
    with pytest.raises(TimestampError):
        timestamps.parse(text)


def test_human_of_nothing() -> None:
    assert timestamps.human(0) == "-"
    assert timestamps.human(-5) == "-"


def test_table_aligns_columns() -> None:
    text = tables.table(["Topic", "QID", "Ok"], [["long-topic-name", 1, True], ["t", 12, None]])
    lines = text.splitlines()
    assert lines[0] == "#Topic           #QID  #Ok"
    assert lines[1] == "long-topic-name  1     true"
    assert lines[2] == "t                12"
    with pytest.raises(ValueError):
        tables.table(["a"], [[1, 2]])


def test_cells_never_break_lines() -> None:
    assert tables.cell("a\nb") == "a\\nb"
    assert tables.cell(1.5) == "1.50"


def test_pairs() -> None:
    assert tables.pairs([("Topic", "T"), ("Flag", False)], key_width=6) == "Topic : T\nFlag  : false"
