"""QUERY_ASSIGNMENT / SET_MESSAGE_REQUEST_MODE: their JSON bodies (as the Java client writes them,
round trips, any bytes refused cleanly), RocketMQ's allocate4Pop, and the kept request modes."""

from __future__ import annotations

import contextlib
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.assignment import MODES_FILE, MessageRequestModes, allocate_for_pop, cached_route_queues
from rocketq.broker.settings import BrokerBehaviour
from rocketq.client.allocation import allocate_averagely
from rocketq.protocol import popbodies
from rocketq.protocol.popbodies import MODE_POP, MODE_PULL, MessageRequestMode, QueryAssignmentRequest
from rocketq.protocol.queues import MessageQueue
from rocketq.protocol.sharedbodies import BodyError
from rocketq.settings import SettingsError

QUEUES = [MessageQueue("T", broker, qid) for broker in ("broker-a", "broker-b") for qid in range(4)]
names = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF), min_size=1, max_size=40)


def test_query_body_as_the_java_client_writes_it() -> None:
    body = orjson.dumps({"topic": "T", "consumerGroup": "cg", "clientId": "10.0.0.1@7",
                         "strategyName": "AVG_BY_CIRCLE", "messageModel": "BROADCASTING"})
    assert QueryAssignmentRequest.decode(body) == QueryAssignmentRequest("T", "cg", "10.0.0.1@7", "AVG_BY_CIRCLE",
                                                                         "BROADCASTING")
    with pytest.raises(BodyError):
        QueryAssignmentRequest.decode(body.replace(b"BROADCASTING", b"NEITHER"))


@given(names, names, names, st.sampled_from(["AVG", "AVG_BY_CIRCLE"]), st.sampled_from(popbodies.MESSAGE_MODELS))
def test_query_body_round_trips(topic: str, group: str, cid: str, strategy: str, model: str) -> None:
    ask = QueryAssignmentRequest(topic, group, cid, strategy, model)
    assert QueryAssignmentRequest.decode(ask.encode()) == ask


@given(names, names, st.sampled_from([MODE_PULL, MODE_POP]), st.integers(-5, 64))
def test_request_mode_body_round_trips(topic: str, group: str, mode: str, share: int) -> None:
    body = MessageRequestMode(topic, group, mode, share)
    assert MessageRequestMode.decode(body.encode()) == body


def test_assignments_round_trip_with_queue_id_minus_one() -> None:
    pairs = [(MessageQueue("T", "broker-a", -1), MODE_POP), (QUEUES[1], MODE_PULL)]
    assert popbodies.decode_assignments(popbodies.encode_assignments(pairs)) == pairs
    assert popbodies.decode_assignments(b'{"messageQueueAssignments": null}') == []


@pytest.mark.parametrize("decode", [QueryAssignmentRequest.decode, MessageRequestMode.decode,
                                    popbodies.decode_assignments])
@given(body=st.binary(max_size=200))
def test_any_bytes_decode_or_are_refused(decode: object, body: bytes) -> None:
    with contextlib.suppress(BodyError):
        decode(body)  # type: ignore[operator]


def test_mode_other_than_pull_or_pop_is_refused() -> None:
    with pytest.raises(BodyError):
        MessageRequestMode.decode(b'{"topic": "T", "consumerGroup": "cg", "mode": "PUSH"}')


def test_pop_share_zero_or_wide_gives_every_broker_whole() -> None:
    whole = [MessageQueue("T", "broker-a", -1), MessageQueue("T", "broker-b", -1)]
    assert allocate_for_pop(allocate_averagely, "c1", QUEUES, ["c1", "c2"], 0) == whole
    # with 3 clients, sharing with 2 others is sharing with everyone
    assert allocate_for_pop(allocate_averagely, "c1", QUEUES, ["c1", "c2", "c3"], 2) == whole


def test_pop_share_adds_the_queues_of_the_next_clients() -> None:
    cids = ["c1", "c2", "c3", "c4"]
    own = {c: allocate_averagely(c, QUEUES, cids) for c in cids}
    assert allocate_for_pop(allocate_averagely, "c4", QUEUES, cids, 1) == own["c4"] + own["c1"]
    shared = [allocate_for_pop(allocate_averagely, c, QUEUES, cids, 1) for c in cids]
    assert all(sum(q in got for got in shared) == 2 for q in QUEUES)  # each queue has two poppers
    assert allocate_for_pop(allocate_averagely, "stranger", QUEUES, cids, 1) == []


def test_pop_share_with_more_clients_than_queues_gives_each_one_queue() -> None:
    queues = QUEUES[:2]
    cids = [f"c{i}" for i in range(5)]
    got = [allocate_for_pop(allocate_averagely, c, queues, cids, 1) for c in cids]
    assert got == [[queues[i % 2]] for i in range(5)]
    assert allocate_for_pop(allocate_averagely, "stranger", queues, cids, 1) == []


def test_request_modes_are_kept_in_the_config_dir(tmp_path: Path) -> None:
    modes = MessageRequestModes(tmp_path / MODES_FILE)
    modes.set(MessageRequestMode("T", "cg", MODE_POP, 2))
    again = MessageRequestModes(tmp_path / MODES_FILE)
    again.load()
    assert again.get("T", "cg") == MessageRequestMode("T", "cg", MODE_POP, 2)
    assert again.get("T", "other") is None


def test_an_unreadable_entry_is_skipped_not_fatal(tmp_path: Path) -> None:
    (tmp_path / MODES_FILE).write_bytes(orjson.dumps({"messageRequestModeMap": {
        "Bad": {"cg": {"topic": "Bad", "consumerGroup": "cg", "mode": "PUSH"}},
        "T": {"cg": {"topic": "T", "consumerGroup": "cg", "mode": "POP", "popShareQueueNum": 1}}}}))
    modes = MessageRequestModes(tmp_path / MODES_FILE)
    modes.load()
    assert modes.get("Bad", "cg") is None and modes.get("T", "cg") == MessageRequestMode("T", "cg", MODE_POP, 1)


async def test_routes_are_reused_for_their_ttl() -> None:
    asked: list[str] = []
    now = [0.0]

    async def lookup(topic: str) -> list[MessageQueue] | None:
        asked.append(topic)
        return QUEUES if topic == "T" else None

    cached = cached_route_queues(lookup, 30.0, lambda: now[0])
    assert await cached("T") == QUEUES and await cached("T") == QUEUES
    assert await cached("Nope") is None and await cached("Nope") is None
    assert asked == ["T", "Nope"]
    now[0] = 31.0
    assert await cached("T") == QUEUES and asked == ["T", "Nope", "T"]


def test_default_request_mode_other_than_pull_or_pop_is_refused() -> None:
    assert BrokerBehaviour(default_message_request_mode="POP").default_pop_share_queue_num == -1
    with pytest.raises(SettingsError, match="defaultMessageRequestMode"):
        BrokerBehaviour(default_message_request_mode="PUSH")
