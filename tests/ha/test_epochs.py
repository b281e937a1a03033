"""Epoch histories: where two logs stop agreeing, the file, and the master's answer body."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.ha import epochs, protocol
from rocketq.ha.epochs import Epoch, EpochError, EpochHistory


def test_an_old_master_agrees_with_the_new_one_up_to_the_promotion() -> None:
    old = [Epoch(0, 0)]
    new = [Epoch(0, 0), Epoch(1, 1000)]
    assert epochs.consistent_point(old, 1800, new, 1500) == 1000  # its tail past 1000 is not the new master's
    assert epochs.consistent_point(old, 900, new, 1500) == 900  # behind: nothing to cut


def test_a_slave_of_the_same_master_agrees_up_to_the_shorter_log() -> None:
    same = [Epoch(0, 0), Epoch(3, 500)]
    assert epochs.consistent_point(same, 800, same, 700) == 700
    assert epochs.consistent_point(same, 600, same, 700) == 600


def test_no_common_epoch_agrees_nowhere() -> None:
    assert epochs.consistent_point([Epoch(2, 10)], 50, [Epoch(0, 0), Epoch(1, 10)], 90) == 0


def test_the_history_file_survives_a_reload_and_a_promotion_drops_what_it_never_received(tmp_path: Path) -> None:
    history = EpochHistory(tmp_path).load()
    assert history.entries == [Epoch(0, 0)]
    history.adopt([Epoch(0, 0), Epoch(1, 100), Epoch(2, 900)])
    assert history.begin(500) == Epoch(3, 500)
    assert EpochHistory(tmp_path).load().entries == [Epoch(0, 0), Epoch(1, 100), Epoch(3, 500)]


def test_a_history_file_that_does_not_parse_stops_the_load(tmp_path: Path) -> None:
    (tmp_path / epochs.EPOCH_FILE).write_text('[[1, 5], [0, 9]]')
    with pytest.raises(EpochError, match="fix or delete"):
        EpochHistory(tmp_path).load()


@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**50)), min_size=1, max_size=20),
       st.integers(0, 2**60))
def test_answer_bodies_round_trip_or_are_refused(pairs: list[tuple[int, int]], end: int) -> None:
    entries = [Epoch(n, s) for n, s in pairs]
    body = epochs.encode(entries, end)
    try:
        epochs.validated(list(entries))
    except EpochError:
        with pytest.raises(EpochError):
            epochs.decode(body)
        return
    assert epochs.decode(body) == (entries, end)
    assert protocol.decode_epoch_answer_header(protocol.encode_epoch_answer(body)[:protocol.TRANSFER_HEADER_SIZE]) \
        == len(body)


@given(st.binary(max_size=200))
def test_arbitrary_bodies_parse_or_raise_epoch_error(body: bytes) -> None:
    try:
        entries, end = epochs.decode(body)
    except EpochError:
        return
    assert entries and end >= 0


def test_a_transfer_frame_where_the_epoch_answer_belongs_is_refused() -> None:
    with pytest.raises(protocol.HAProtocolError, match="epoch history"):
        protocol.decode_epoch_answer_header(protocol.encode_transfer_header(0, 0))


def test_a_re_promoted_fenced_master_numbers_its_epoch_past_the_one_it_was_fenced_by(tmp_path: Path) -> None:
    history = EpochHistory(tmp_path).load()
    assert history.begin(100, above=3) == Epoch(4, 100)  # outranks the master that fenced it at 3
    assert history.begin(200, above=1) == Epoch(5, 200)  # never below its own history
    assert EpochHistory(tmp_path).load().entries == [Epoch(0, 0), Epoch(4, 100), Epoch(5, 200)]
