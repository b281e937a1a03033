"""The pull handler's per-pull shortcuts: kept subscriptions and the answer's extFields.

``PullHandlers._built_subscription`` keeps ``subscription.build``'s results by its arguments;
a pull must get exactly what a fresh parse gives (or the same SubscriptionError, never kept),
however often and in whatever order headers repeat, and the table stays bounded.
``answer_ext`` must equal ``PullMessageResponseHeader(...).to_ext()`` for any values.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker import pull
from rocketq.broker.pull import PullHandlers
from rocketq.broker.settings import BrokerBehaviour
from rocketq.protocol import codes, subscription
from rocketq.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.protocol.subscription import SubscriptionError


class _ArrivalsOnly:
    """What the handler's constructor asks of a store; nothing here reads messages."""

    def add_arrival_listener(self, listener: object, waiting: object = None, **gates: object) -> None:
        self.listener = listener

    def add_arrival_round_listener(self, listener: object) -> None:
        self.round_listener = listener


def handlers() -> PullHandlers:
    return PullHandlers(_ArrivalsOnly(), None, None, None, None, BrokerBehaviour(),  # type: ignore[arg-type]
                        is_master=True)


def header(topic: str, expression: str | None, kind: str | None, version: int) -> PullMessageRequestHeader:
    return PullMessageRequestHeader(consumer_group="G", topic=topic, queue_id=0, queue_offset=0, max_msg_nums=32,
                                    sys_flag=0, commit_offset=0, suspend_timeout_millis=0,
                                    subscription=expression, sub_version=version, expression_type=kind)


EXPRESSIONS = st.sampled_from([None, "", "*", " * ", "a", "a||b", "b || a", "||", "a" * 70000, "x > 1",
                               "a||b||c"])
KINDS = st.sampled_from([None, "TAG", "tag", "SQL92", "sql92", "BOGUS"])
HEADERS = st.tuples(st.sampled_from(["T", "U"]), EXPRESSIONS, KINDS, st.integers(0, 2))


def fresh(args: tuple[str, str | None, str | None, int]) -> object:
    try:
        return subscription.build(*args)
    except SubscriptionError as exc:
        return ("refused", str(exc))


@settings(max_examples=80, deadline=None)
@given(st.lists(HEADERS, min_size=1, max_size=30))
def test_kept_subscriptions_equal_a_fresh_parse(pulls: list[tuple[str, str | None, str | None, int]]) -> None:
    h = handlers()
    for args in pulls:
        try:
            got: object = h._built_subscription(header(*args))
        except SubscriptionError as exc:
            got = ("refused", str(exc))
        assert got == fresh(args)


def test_the_table_is_bounded() -> None:
    h = handlers()
    for version in range(pull.MAX_BUILT_SUBSCRIPTIONS + 10):
        assert h._built_subscription(header("T", "a", "TAG", version)).sub_version == version
    assert 0 < len(h._built) <= pull.MAX_BUILT_SUBSCRIPTIONS


INTS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.booleans(), st.sampled_from([codes.MASTER_ID, 1]))


@settings(max_examples=200, deadline=None)
@given(INTS, INTS, INTS, INTS)
def test_answer_ext_is_the_headers_to_ext(suggest: int, next_begin: int, low: int, high: int) -> None:
    """Same names, values and order as the header's own ``to_ext`` (bools take its path)."""
    expected = PullMessageResponseHeader(suggest_which_broker_id=suggest, next_begin_offset=next_begin,
                                         min_offset=low, max_offset=high).to_ext()
    assert list(pull.answer_ext(suggest, next_begin, low, high).items()) == list(expected.items())
