"""prepare_batch encodes each message's properties once and still sends what encoding them after
stamping the keys gives: a property test against that plain construction."""

from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import sending
from rocketq.client.errors import MessageError
from rocketq.client.messages import Message
from rocketq.client.settings import ProducerSettings
from rocketq.protocol import batchbodies, messageproperties

SETTINGS = ProducerSettings(namesrv_addr="127.0.0.1:9876")


class Keys:
    """Stands in for the unique-key generator: 0000..., 0001..., restartable."""

    def __init__(self) -> None:
        self._n = itertools.count()

    def next_id(self) -> str:
        return f"{next(self._n):032X}"

    def next_ids(self, count: int) -> list[str]:
        return [self.next_id() for _ in range(count)]


def _reference(msgs: list[Message]) -> tuple[bytes, str]:
    """The batch as built before: check all, stamp all, encode_batch_body."""
    for msg in msgs:
        sending.check(msg, SETTINGS)
    ids = [sending._stamp_uniq_key(msg) for msg in msgs]
    return batchbodies.encode_batch_body(msgs), ",".join(ids)


properties = st.fixed_dictionaries({}, optional={
    "TAGS": st.sampled_from(["a", "b"]), "KEYS": st.sampled_from(["k1", "k1 k2"]),
    "UNIQ_KEY": st.sampled_from(["", "GIVEN0123456789ABCDEF0123456789AB"]), "x": st.text("xyz", max_size=3)})


@given(st.lists(st.tuples(st.binary(min_size=1, max_size=40), st.integers(0, 5), properties), min_size=1,
                max_size=6))
def test_batch_body_matches_encoding_after_stamping(spec: list[tuple[bytes, int, dict[str, str]]]) -> None:
    msgs = [Message("T", body, flag, dict(props)) for body, flag, props in spec]
    twins = copy.deepcopy(msgs)
    with pytest.MonkeyPatch.context() as mp:
        keys = Keys()
        mp.setattr(sending, "_uniq_ids", lambda: keys)
        out = sending.prepare_batch(msgs, SETTINGS)
        keys = Keys()
        expected_body, expected_ids = _reference(twins)
    assert out.body == expected_body and out.msg_id == expected_ids
    assert [m.properties for m in msgs] == [m.properties for m in twins]


def test_batch_errors_come_in_the_same_order() -> None:
    with pytest.raises(MessageError, match="topic"):
        sending.prepare_batch([Message("T", b"x"), Message("U", b"y")], SETTINGS)
    with pytest.raises(MessageError, match="body length is zero"):
        sending.prepare_batch([Message("T", b"x"), Message("T", b"")], SETTINGS)
    big = {"P": "v" * (messageproperties.MAX_PROPERTIES_LENGTH - 3)}
    with pytest.raises(MessageError, match="properties"):
        sending.prepare_batch([Message("T", b"x", properties=big)], SETTINGS)
