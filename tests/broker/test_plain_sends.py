"""A plain send read in one call (``rocketq.broker.plainsend``) against the general path.

``SendHandlers.send_group_now`` reads a plain single send with ``plain_put`` and admits it
without the general checks when the broker takes it as it is. Here two handlers get the same
reads of random SEND_MESSAGE / SEND_MESSAGE_V2 headers (good ones and bad ones: missing fields,
numbers that are not numbers or out of range, booleans as C++ clients send them, unknown keys,
properties that are not canonical or name TRAN_MSG, DELAY or CLUSTER, topics missing, read-only,
system or retry ones, queue ids out of range, bodies over the limit) in random broker states:
one as the broker runs, one with ``plain_put`` declining everything (the general path alone).
They must hand the store the same puts, log the same refusals and answer the same bytes.

``plain_put``'s C twin is compared with its pure reference on the same headers.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.broker import plainsend, send
from rocketq.broker.send import BrokerAddress, SendHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.broker.topics import TopicConfig, TopicConfigManager
from rocketq.protocol import codes, nativecodecs
from rocketq.protocol.codes import RequestCode, SerializeType
from rocketq.protocol.frames import RemotingCommand
from rocketq.protocol.headers import SEND_V2_ALIASES
from rocketq.store.results import PutRequest, PutResult, PutStatus

MAX_BODY = 64
NOT_YET = int(time.time() * 1000) + 86_400_000
"""When a broker in the ``not_yet`` state starts taking sends."""
TOPICS = ("Plain", "ReadOnly", "Missing", codes.AUTO_CREATE_TOPIC_KEY, "%RETRY%group", "bad topic!", "")
STATES = ("open", "open", "open", "open", "open", "read_only", "page_cache_busy", "in_flight_full", "not_yet", "gated")
STATUSES = (PutStatus.PUT_OK, PutStatus.PUT_OK, PutStatus.FLUSH_DISK_TIMEOUT, PutStatus.MESSAGE_ILLEGAL,
            PutStatus.OS_PAGECACHE_BUSY)
PROPERTY_NAMES = ("TAGS", "KEYS", "UNIQ_KEY", "CLUSTER", "TRAN_MSG", "DELAY", "WAIT", "x", "é", "")
PROPERTY_VALUES = ("", "a", "TagA", "k1 k2", "true", "3", "é中", "\U0001f600", "a\x01b", "\ud800")
FIELDS = ("producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp",
          "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "brokerName")
SHORT = {full: short for short, full in SEND_V2_ALIASES.items()}

numbers = st.sampled_from(["0", "1", "3", "-1", "+2", "007", "", " 1", "1_0", "x", "2147483647", "2147483648",
                           "-2147483648", "-2147483649", "9223372036854775807", "9223372036854775808", "٣",
                           "1700000000000", "99999999999999999999999"])
booleans = st.sampled_from(["true", "false", "TRUE", "True", "0", "1", "", "yes"])
entries = st.lists(st.tuples(st.sampled_from(PROPERTY_NAMES), st.sampled_from(PROPERTY_VALUES),
                             st.sampled_from(["\x02", "\x02", "\x02", "", "\x02\x02"])), max_size=5)
properties = entries.map(lambda items: "".join(f"{n}\x01{v}{end}" for n, v, end in items)) | st.sampled_from(
    ["", "TAGS\x01A\x02", "TAGS\x01A", "\x02", "\x01A\x02", "TAGS\x02"])

producer_properties = st.lists(st.sampled_from(["TAGS\x01TagA\x02", "KEYS\x01k1 k2\x02", "UNIQ_KEY\x01AC1\x02",
                                                "WAIT\x01true\x02", "CLUSTER\x01c1\x02"]), unique=True).map("".join)
"""What producers send: canonical properties, the common names."""


@st.composite
def send_ext(draw: st.DrawFn) -> tuple[int, dict[str, str]]:
    """A send's code and extFields: mostly what a producer sends, often with a field spoilt."""
    code = draw(st.sampled_from([RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_MESSAGE]))
    topic = draw(st.sampled_from((*("Plain",) * len(TOPICS), *TOPICS)))
    full = {"producerGroup": draw(st.sampled_from(["pg", ""])), "topic": topic,
            "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "queueId": draw(st.sampled_from("0123")),
            "sysFlag": draw(st.sampled_from(["0", "0", "4", "8"])), "bornTimestamp": "1764000000000",
            "flag": "0", "properties": draw(producer_properties | properties),
            "reconsumeTimes": draw(st.sampled_from(["0", "2", ""])),
            "unitMode": "false", "batch": "false"}
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):  # spoil or drop a few fields
        choice = draw(st.integers(0, 3))
        if choice == 0:
            full.pop(name, None)
        elif name in ("unitMode", "batch"):
            full[name] = draw(booleans)
        elif name in ("producerGroup", "topic", "defaultTopic", "brokerName", "properties"):
            full[name] = draw(st.sampled_from(TOPICS)) if choice == 1 else draw(properties)
        else:
            full[name] = draw(numbers)
    ext = {SHORT[name] if code == RequestCode.SEND_MESSAGE_V2 else name: value for name, value in full.items()}
    if draw(st.integers(0, 9)) == 0:  # an ACL client's signature, a long name in V2, an unknown key
        ext[draw(st.sampled_from(["AccessKey", "topic", "queueId", "zz"]))] = draw(st.sampled_from((*TOPICS, "1")))
    return int(code), ext


class RecordingStore:
    """The store's part of ``send_group_now``: records the puts, answers with ``status``."""

    puts_wait = False

    def __init__(self, status: PutStatus, busy: bool) -> None:
        self.status = status
        self.busy = busy
        self.puts: list[tuple[str, Any]] = []

    @property
    def busy_until(self) -> float:
        return 1.0 if self.busy else 0.0

    def is_os_page_cache_busy(self) -> bool:
        return self.busy

    def _result(self, index: int) -> PutResult:
        if self.status in (PutStatus.PUT_OK, PutStatus.FLUSH_DISK_TIMEOUT):
            return PutResult(self.status, 1, (index * 100,), (100,), (index,), (f"ID{index:04X}",))
        return PutResult(self.status, error="refused by the store")

    def put_one_now(self, request: PutRequest) -> PutResult:
        self.puts.append(("one", request))
        return self._result(len(self.puts))

    def put_group_now(self, puts: list[Any]) -> list[PutResult]:
        self.puts.append(("group", puts))
        return [self._result(len(self.puts) + i) for i in range(len(puts))]


@pytest.fixture(scope="module")
def topics(tmp_path_factory: pytest.TempPathFactory) -> TopicConfigManager:
    manager = TopicConfigManager(tmp_path_factory.mktemp("topics") / "topics.json")
    manager.upsert(TopicConfig("Plain", 4, 4))
    manager.upsert(TopicConfig("ReadOnly", 4, 4, perm=int(codes.Perm.READ)))
    manager.upsert(TopicConfig(codes.AUTO_CREATE_TOPIC_KEY, 4, 4))
    manager.upsert(TopicConfig("%RETRY%group", 1, 1))
    for illegal in ("bad topic!", ""):  # in the table as a bad topics.json could put them: refused by name
        manager.table[illegal] = TopicConfig(illegal, 4, 4)
    return manager


class Conn:
    remote_addr = "10.0.0.7:51234"


def _handlers(topics: TopicConfigManager, state: str, status: PutStatus, validated: bool,
              routed: bool) -> tuple[SendHandlers, RecordingStore, mock.Mock]:
    store = RecordingStore(status, busy=state == "page_cache_busy")
    behaviour = BrokerBehaviour(max_message_size=MAX_BODY)
    if state == "not_yet":
        behaviour = BrokerBehaviour(max_message_size=MAX_BODY,
                                    start_accept_send_request_time_stamp=NOT_YET)
    handlers = SendHandlers(store, topics, behaviour,  # type: ignore[arg-type]
                            BrokerAddress("DefaultCluster", "broker-a", "127.0.0.1", 10911, True),
                            on_topic_created=_nothing,
                            write_gate=(lambda: "not the leader") if state == "gated" else None)
    if state == "read_only":
        handlers.broker_permission = int(codes.Perm.READ)
    if state == "in_flight_full":
        handlers._in_flight = behaviour.max_sends_in_flight
    if validated:  # an earlier send validated the topic names (the plain path needs it)
        handlers._valid_topics.update(("Plain", "ReadOnly", "%RETRY%group", codes.AUTO_CREATE_TOPIC_KEY))
    if routed:
        handlers.retry_router = _no_route
    refusals = mock.Mock()
    handlers._refusals = refusals
    return handlers, store, refusals


async def _nothing() -> None:
    return None


async def _no_route(request: RemotingCommand, header: Any) -> Any:
    raise AssertionError("a routed send never reaches send_group_now's plain path")


def _answers(answers: list[Any] | None) -> list[Any] | None:
    if answers is None:
        return None
    return [answer if answer is None or isinstance(answer, bytes) else answer.encode() for answer in answers]


def _logged(refusals: mock.Mock) -> list[Any]:
    """The refusal lines logged, an exception argument as its type and text (they compare by identity)."""
    return [(name, [(type(a), str(a)) if isinstance(a, Exception) else a for a in args])
            for name, args, _kwargs in refusals.mock_calls]


def _run(handlers: SendHandlers, requests: list[RemotingCommand], plain: Callable[..., Any]) -> Any:
    """The answers, or the error the connection would answer SYSTEM_ERROR for (e.g. a TAGS
    value with a lone surrogate, which the general path cannot hash: no wire text holds one)."""
    chooser = random.Random(7)  # a send without a queue id gets a random one: the same both ways
    with mock.patch.object(send, "plain_put", plain), mock.patch.object(send.random, "randrange", chooser.randrange):
        try:
            return _answers(handlers.send_group_now(Conn(), requests))  # type: ignore[arg-type]
        except Exception as exc:  # the comparison is the point: both paths must fail alike
            return ("error", type(exc), str(exc))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(send_ext(), st.sampled_from([0, 1, 9, MAX_BODY, MAX_BODY + 1]), st.booleans()),
                min_size=1, max_size=4),
       st.sampled_from(STATES), st.sampled_from(STATUSES), st.booleans(), st.booleans())
def test_the_plain_path_puts_refuses_and_answers_as_the_general_one(
        topics: TopicConfigManager, sends: list[tuple[tuple[int, dict[str, str]], int, bool]], state: str,
        status: PutStatus, validated: bool, routed: bool) -> None:
    requests = [RemotingCommand(code, opaque, ext_fields=ext, body=b"b" * size,
                                serialize_type=SerializeType.ROCKETMQ if binary else SerializeType.JSON)
                for opaque, ((code, ext), size, binary) in enumerate(sends)]
    outcomes = []
    for plain in (plainsend.plain_put, lambda *args: None):
        handlers, store, refusals = _handlers(topics, state, status, validated, routed)
        answers = _run(handlers, [RemotingCommand(r.code, r.opaque, ext_fields=dict(r.ext_fields), body=r.body,
                                                  serialize_type=r.serialize_type) for r in requests], plain)
        outcomes.append((answers, store.puts, _logged(refusals), handlers._valid_topics))
    assert outcomes[0] == outcomes[1]


def test_a_plain_send_takes_the_plain_path(topics: TopicConfigManager) -> None:
    """The test above compares something: a producer's send is read by plain_put and admitted."""
    handlers, store, _refusals = _handlers(topics, "open", PutStatus.PUT_OK, True, False)
    ext = {"a": "pg", "b": "Plain", "e": "2", "f": "0", "g": "1764000000000", "h": "0",
           "i": "TAGS\x01TagA\x02KEYS\x01k1\x02UNIQ_KEY\x01U1\x02", "j": "0", "k": "false", "m": "false"}
    request = RemotingCommand(int(RequestCode.SEND_MESSAGE_V2), 9, ext_fields=ext, body=b"hello")
    with mock.patch.object(send, "plain_put", wraps=plainsend.plain_put) as plain, \
            mock.patch.object(handlers, "_parse_header", side_effect=AssertionError("general path")):
        (answer,) = handlers.send_group_now(Conn(), [request])  # type: ignore[arg-type, misc]
    assert plain.call_count == 1 and isinstance(answer, bytes)
    ((kind, put),) = store.puts
    assert kind == "one" and put.topic == "Plain" and put.queue_id == 2 and put.index_keys == ("U1", "k1")
    assert put.properties == ext["i"] + "CLUSTER\x01DefaultCluster\x02" and put.born_host == ("10.0.0.7", 51234)


needs_native = pytest.mark.skipif(nativecodecs.native is None, reason="native codecs switched off or not built")


@needs_native
@settings(max_examples=600, deadline=None)
@given(send_ext(), st.binary(max_size=8), st.sampled_from(["CLUSTER\x01c\x02", "", "é\x01中\x02"]))
def test_plain_put_in_c_is_its_pure_reference(sent: tuple[int, dict[str, str]], body: bytes, cluster: str) -> None:
    code, ext = sent
    reference = nativecodecs.pure(plainsend.plain_put)
    assert reference is not plainsend.plain_put
    got = plainsend.plain_put(code, ext, body, cluster, ("10.0.0.7", 51234))
    assert got == reference(code, ext, body, cluster, ("10.0.0.7", 51234))
    if got is not None:
        assert type(got.queue_id) is int and type(got.tags_code) is int


@needs_native
def test_plain_put_in_c_leaves_odd_calls_to_the_pure_function() -> None:
    ext = {"a": "pg", "b": "T", "i": "TAGS\x01A\x02"}
    for args in [(int(RequestCode.SEND_BATCH_MESSAGE), ext), (int(RequestCode.SEND_MESSAGE_V2), {"a": 1, "b": "T"}),
                 (int(RequestCode.SEND_MESSAGE_V2), {**ext, "m": "true"}), (True, ext), ("310", ext)]:
        assert plainsend.plain_put(*args, b"", "", ("h", 1)) == nativecodecs.pure(plainsend.plain_put)(
            *args, b"", "", ("h", 1))


class _Key(str):
    """An extFields key of another kind than str (the dict compares it by its own ``__eq__``)."""

    __slots__ = ()


@needs_native
@settings(max_examples=300, deadline=None)
@given(send_ext(), st.data())
def test_plain_put_in_c_reads_the_ext_in_any_order_and_with_any_key(sent: tuple[int, dict[str, str]],
                                                                   data: st.DataObject) -> None:
    """The C function walks the extFields once, trying the next field's key first: keys in any
    order, and one of another kind (then it looks each field up), give the pure result."""
    code, ext = sent
    keys = data.draw(st.permutations(list(ext)))
    odd = data.draw(st.sampled_from([None, *keys]))
    shuffled = {(_Key(key) if key == odd else key): ext[key] for key in keys}
    reference = nativecodecs.pure(plainsend.plain_put)
    got = plainsend.plain_put(code, shuffled, b"body", "", ("10.0.0.7", 51234))
    assert got == reference(code, shuffled, b"body", "", ("10.0.0.7", 51234))
