"""``putting.prepare_plain``: a plain one-message put prepared in one call, against ``Preparer``.

For any request (plain or not: dict properties, a transaction half, the schedule topic, a
queue not created yet, hints or none, too large a body or properties, a lone surrogate), the
C function and its pure reference give the same prepared message, None or error; and when they
give a prepared message, it is the one ``Preparer.prepare``'s own loop builds (with
``prepare_plain`` switched off), byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import StoreFactory

from rocketq.protocol import javahash, messageproperties, nativecodecs, storedrecords
from rocketq.protocol.codes import SCHEDULE_TOPIC
from rocketq.protocol.messageerrors import MessageIllegalError
from rocketq.protocol.messagetypes import MessageSysFlag
from rocketq.store import putting
from rocketq.store.queuetable import QueueTable
from rocketq.store.results import PutRequest

SEGMENT = 4096
"""A small segment: some bodies below the message size limit are too large for it."""
EXISTING = {("T", 0), ("T", 1), ("U", 2), (SCHEDULE_TOPIC, 3)}
"""The queues created before the puts; any other is created by ``prepare`` (not plain)."""

_NATIVE = putting.prepare_plain
_PURE = nativecodecs.pure(putting.prepare_plain)

_properties = st.fixed_dictionaries({}, optional={
    "TAGS": st.sampled_from(["", "TagA", "tag\u00e9"]),
    "KEYS": st.sampled_from(["", "k1", "k1 k2"]),
    "UNIQ_KEY": st.sampled_from(["", "UNIQ1"]),
    "DELAY": st.sampled_from(["1", "3"]),
    "WAIT": st.just("true"),
    "X": st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=5)
    | st.just("y" * 33000),
})


@st.composite
def _requests(draw: st.DrawFn) -> PutRequest:
    props: dict[str, str] = draw(_properties)
    text = messageproperties.encode_properties(props)
    properties: Any = draw(st.sampled_from([text, text, props, text + "\ud800" if text else "\ud800"]))
    hinted = draw(st.booleans())
    tags_code = draw(st.sampled_from([None, javahash.tag_hash(props.get("TAGS")), 5]))
    hint = draw(st.sampled_from([None, (props.get("UNIQ_KEY"), props.get("KEYS")), ("U9", None)]))
    return PutRequest(
        draw(st.sampled_from(["T", "T", "U", SCHEDULE_TOPIC, "V"])), draw(st.integers(0, 2)),
        b"b" * draw(st.sampled_from([0, 10, 1000, SEGMENT])), draw(st.integers(0, 3)), properties,
        draw(st.sampled_from([0, 0, MessageSysFlag.TRANSACTION_PREPARED_TYPE, MessageSysFlag.COMPRESSED])),
        draw(st.integers(0, 1 << 45)), draw(st.sampled_from([("127.0.0.1", 9), ("::1", 7)])),
        draw(st.integers(0, 3)), draw(st.integers(0, 1 << 40)),
        tags_code if hinted else draw(st.sampled_from([None, tags_code])), hint if hinted else None)


def _outcome(function: Any, *args: Any) -> Any:
    try:
        return ("ok", function(*args))
    except (MessageIllegalError, UnicodeError) as exc:  # (PropertiesSizeExceededError too; a lone surrogate)
        return (type(exc), str(exc))


@pytest.fixture(scope="module")
def preparer(tmp_path_factory: pytest.TempPathFactory) -> putting.Preparer:
    queues = QueueTable(Path(tmp_path_factory.mktemp("queues")), 20 * 64)
    for topic, queue_id in EXISTING:
        queues.get_or_create(topic, queue_id)
    return putting.Preparer(storedrecords.RecordEncoder(("10.0.0.5", 10911)), queues, SEGMENT, SEGMENT - 8)


@settings(max_examples=300, deadline=None)
@given(request=_requests())
def test_the_c_function_and_its_reference_prepare_as_the_preparer(
        request: PutRequest, preparer: putting.Preparer) -> None:
    parts = preparer.plain_parts()
    native = _outcome(_NATIVE, *parts, request)
    assert native == _outcome(_PURE, *parts, request)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(putting, "prepare_plain", lambda *args: None)
        existing = _outcome(preparer.prepare, [request])
    if native[0] == "ok" and native[1] is not None:
        assert [native[1]] == existing[1]
    elif native[0] != "ok":
        assert native == existing  # the same error as the Preparer raises
    plain = (isinstance(request.properties, str) and not request.sys_flag and request.topic != SCHEDULE_TOPIC
             and (request.topic, request.queue_id) in EXISTING)
    if plain and existing[0] == "ok":
        assert native[1] is not None  # every plain put that can be stored is prepared in one call


class _RenamedTopic(PutRequest):
    """A request whose ``topic`` reads otherwise than its slot holds: the C function must read
    it as Python does (by attribute), not at the slot offsets it learnt for ``PutRequest``."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        return "U" if name == "topic" else value


def test_fields_are_read_as_python_reads_them(preparer: putting.Preparer) -> None:
    parts = preparer.plain_parts()
    plain = PutRequest("W", 2, b"body", properties="TAGS\x01a\x02")
    renamed = _RenamedTopic("W", 2, b"body", properties="TAGS\x01a\x02")
    for request in (plain, renamed, plain, renamed):  # the learnt offsets, then another type, then back
        assert _NATIVE(*parts, request) == _PURE(*parts, request)
    assert _NATIVE(*parts, plain) is None  # no queue ("W", 2): no put names topic W
    prepared = _NATIVE(*parts, renamed)
    assert prepared is not None and prepared[2].topic == "U"  # queue ("U", 2), by the attribute


@pytest.mark.parametrize("request_", [
    PutRequest("T", 0, b"body", properties={"TAGS": "a"}),  # dict properties: not plain
    PutRequest("New", 1, b"body", properties="TAGS\x01a\x02"),  # its queue is to be created
    PutRequest(SCHEDULE_TOPIC, 0, b"body", properties="DELAY\x013\x02"),  # a delay level
], ids=["dict-properties", "new-queue", "schedule-topic"])
async def test_a_lone_put_asks_prepare_plain_once(request_: PutRequest, make_store: StoreFactory,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``put_one_now`` of a put ``prepare_plain`` declines prepares it by ``Preparer``'s loop
    without asking ``prepare_plain`` a second time, and stores it."""
    store = await make_store()
    asked: list[PutRequest] = []
    real = putting.prepare_plain

    def counting(*args: Any) -> putting.PreparedMessage | None:
        asked.append(args[-1])
        return real(*args)

    monkeypatch.setattr(putting, "prepare_plain", counting)
    assert store.put_one_now(request_).ok
    assert asked == [request_]
