"""``prepare_batch``'s one-pass path (``_prepare_plain_batch``) against the general one
(``_prepare_checked_batch``): for any batch, the same Outgoing (frame body, ids, properties) or
the same MessageError, and the same properties left on the caller's messages. The plain path
takes only batches it can judge without the general checks and returns None for the rest."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rocketq.client import sending
from rocketq.client.errors import MessageError
from rocketq.client.messages import Message
from rocketq.client.settings import ProducerSettings
from rocketq.protocol import messageproperties, msgid

SETTINGS = ProducerSettings(namesrv_addr="127.0.0.1:9876", max_message_size=600)


def _keys() -> msgid.UniqIdGenerator:
    """A generator with a fixed prefix and clock: two of them make the same keys."""
    return msgid.UniqIdGenerator(ip="10.0.0.1", pid=7, seed=11, clock_ms=lambda: 1_700_000_000_000)


topics = st.sampled_from(["T", "U", "%RETRY%g", "bad topic"])
props = st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT", "x", "a\x01"]),
                        st.sampled_from(["", "v", "1", "false", "b\x02", "é" * 3]), max_size=3)
messages = st.builds(lambda topic, body, flag, p: Message(topic, body, flag, p), topics,
                     st.one_of(st.binary(max_size=300), st.binary(min_size=1, max_size=5).map(bytearray)),
                     st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([2**31, True])), props)


def _outcome(prepare: Any, msgs: list[Message]) -> tuple[Any, ...]:
    with pytest.MonkeyPatch.context() as mp:
        keys = _keys()
        mp.setattr(sending, "_uniq_ids", lambda: keys)
        try:
            result: tuple[Any, ...] = ("ok", prepare(msgs, SETTINGS))
        except MessageError as exc:
            result = ("error", str(exc))
    return (*result, [m.properties for m in msgs])


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, min_size=1, max_size=5), st.booleans())
@example([Message("T", b"x" * 200)] * 4, False)  # one message four times
@example([Message("T", b"x" * 100)] * 4, False)
@example([Message("T", b"x" * 200), Message("T", b"y" * 200), Message("T", b"z" * 200)], False)  # over max size
@example([Message("T", b"x", properties={"P": "v" * (messageproperties.MAX_PROPERTIES_LENGTH - 20)})], True)
def test_plain_path_gives_what_the_general_path_gives(msgs: list[Message], all_one_topic: bool) -> None:
    if all_one_topic:
        msgs = [Message("T", m.body, m.flag, m.properties) for m in msgs]
    sending._checked_topics.add("T")
    plain, general = copy.deepcopy(msgs), copy.deepcopy(msgs)
    assert _outcome(sending.prepare_batch, plain) == _outcome(sending._prepare_checked_batch, general)


def test_the_common_batch_takes_the_plain_path() -> None:
    sending._checked_topics.add("T")
    msgs = [Message("T", b"body", properties={"TAGS": "a"}) for _ in range(3)]
    out = sending._prepare_plain_batch(msgs, SETTINGS)
    assert out is not None and out.batch and len(out.msg_id.split(",")) == 3
    assert all(m.properties[messageproperties.UNIQ_KEY] for m in msgs)
    ids = list(itertools.chain(out.msg_id.split(",")))
    assert len(set(ids)) == 3


def test_an_unchecked_topic_goes_the_general_way() -> None:
    msgs = [Message("NeverSeenTopic42", b"body")]
    assert sending._prepare_plain_batch(msgs, SETTINGS) is None
    assert msgs[0].properties == {}
