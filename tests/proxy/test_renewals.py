"""The auto-renew scheduler (rocketq.proxy.renewals) against a fake clock and a fake broker."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from rocketq.proxy import clients
from rocketq.proxy.renewals import RENEW_STEPS_MS, Held, Renewer, RenewSettings
from rocketq.proxy.status import Code, ProxyError

SETTINGS = RenewSettings(ahead_ms=10_000, max_ms=3 * 3600 * 1000, period_ms=5_000, max_retries=3, clear_ms=1_000)
START_MS = 1_700_000_000_000


def handle(pop_ms: int, invisible_ms: int, offset: int = 7, broker: str = "broker-a") -> str:
    return f"{offset} {pop_ms} {invisible_ms} 0 0 {broker} 1 {offset} 4242"


@dataclass
class FakeBroker:
    """CHANGE_MESSAGE_INVISIBLETIME as the renewer sees it: a new handle from now, or a failure."""

    now_ms: int = START_MS
    changes: list[tuple[str, int]] = field(default_factory=list)
    fail_with: Exception | None = None

    def clock(self) -> int:
        return self.now_ms

    async def change(self, held: Held, invisible_ms: int) -> str:
        self.changes.append((held.message_id, invisible_ms))
        if self.fail_with is not None:
            raise self.fail_with
        return handle(self.now_ms, invisible_ms)


def renewer(broker: FakeBroker, alive: set[str] | None = None) -> Renewer:
    online = {"c1"} if alive is None else alive
    return Renewer(SETTINGS, broker.change, clients.retry_delay_ms, online.__contains__, clock=broker.clock)


def test_a_held_message_is_renewed_ahead_of_its_end_by_the_renew_steps() -> None:
    async def run() -> None:
        broker = FakeBroker()
        r = renewer(broker)
        r.hold("c1", "g", "t", "m1", handle(START_MS, 60_000), 0)
        broker.now_ms = START_MS + 49_000  # 11 s left: not yet
        await r.scan()
        assert broker.changes == []
        broker.now_ms = START_MS + 50_000  # 10 s left: renewAheadTimeMillis
        await r.scan()
        assert broker.changes == [("m1", RENEW_STEPS_MS[0])]
        for step in RENEW_STEPS_MS[1:] + RENEW_STEPS_MS[-1:]:  # the last step repeats
            broker.now_ms += broker.changes[-1][1]
            await r.scan()
            assert broker.changes[-1] == ("m1", step)
        assert len(r) == 1
    asyncio.run(run())


def test_the_ack_gets_the_renewed_handle_and_stops_the_renewals() -> None:
    async def run() -> None:
        broker = FakeBroker()
        r = renewer(broker)
        received = handle(START_MS, 60_000)
        r.hold("c1", "g", "t", "m1", received, 0)
        broker.now_ms = START_MS + 55_000
        await r.scan()
        assert await r.release("c1", "g", "m1", received) == handle(broker.now_ms, RENEW_STEPS_MS[0])
        assert len(r) == 0 and await r.release("c1", "g", "m1", received) is None
        broker.now_ms += 3_600_000
        await r.scan()
        assert len(broker.changes) == 1
    asyncio.run(run())


def test_release_of_another_message_or_group_or_client_leaves_it_held() -> None:
    async def run() -> None:
        r = renewer(FakeBroker())
        r.hold("c1", "g", "t", "m1", handle(START_MS, 60_000, offset=7), 0)
        assert await r.release("c1", "g", "m1", handle(START_MS, 60_000, offset=8)) is None
        assert await r.release("c1", "other", "m1", handle(START_MS, 60_000)) is None
        assert await r.release("c2", "g", "m1", handle(START_MS, 60_000)) is None
        assert await r.release("c1", "g", "m1", "not a handle") is None
        assert len(r) == 1
    asyncio.run(run())


def test_a_message_held_past_renew_max_time_is_given_back_by_the_retry_policy() -> None:
    async def run() -> None:
        broker = FakeBroker()
        r = renewer(broker)
        r.hold("c1", "g", "t", "m1", handle(START_MS, 60_000), 3)
        broker.now_ms = START_MS + SETTINGS.max_ms
        await r.scan()
        # reconsumed 3 times: the customized policy's step 3 + 2, 2 minutes
        assert broker.changes == [("m1", 120_000)] and len(r) == 0
    asyncio.run(run())


def test_failed_renewals_are_retried_then_given_up_and_an_invalid_handle_at_once() -> None:
    async def run() -> None:
        broker = FakeBroker(fail_with=ProxyError(Code.INTERNAL_SERVER_ERROR, "broker busy"))
        r = renewer(broker)
        r.hold("c1", "g", "t", "m1", handle(START_MS, 60_000), 0)
        broker.now_ms = START_MS + 55_000
        for _ in range(SETTINGS.max_retries):
            assert len(r) == 1
            await r.scan()
        assert len(broker.changes) == SETTINGS.max_retries and len(r) == 0

        broker.fail_with = ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")
        r.hold("c1", "g", "t", "m2", handle(START_MS, 60_000), 0)
        await r.scan()
        assert len(r) == 0
    asyncio.run(run())


def test_a_departed_client_has_its_messages_made_visible_in_a_second() -> None:
    async def run() -> None:
        broker = FakeBroker()
        online = {"c1", "c2"}
        r = renewer(broker, online)
        r.hold("c1", "g", "t", "m1", handle(START_MS, 60_000, offset=1), 0)
        r.hold("c1", "g2", "t", "m2", handle(START_MS, 60_000, offset=2), 0)
        r.hold("c2", "g", "t", "m3", handle(START_MS, 60_000, offset=3), 0)
        r.clear("c1")
        online.discard("c2")  # silent: found by the next scan
        await r.scan()
        await r.close()
        assert sorted(broker.changes) == [("m1", 1_000), ("m2", 1_000), ("m3", 1_000)] and len(r) == 0
    asyncio.run(run())


def test_a_message_the_client_never_got_is_given_back_with_its_newest_handle() -> None:
    async def run() -> None:
        broker = FakeBroker()
        r = renewer(broker)
        r.hold("c1", "g", "t", "m1", handle(START_MS, 60_000), 0)
        broker.now_ms = START_MS + 55_000
        await r.scan()
        renewed_at = broker.now_ms
        seen: list[str] = []

        async def change(held: Held, invisible_ms: int) -> str:
            seen.append(held.handle)
            return await broker.change(held, invisible_ms)
        r._change = change
        r.give_back("c1", [Held("g", "t", "m1", handle(START_MS, 60_000), 0, 0)])
        await r.close()
        assert seen == [handle(renewed_at, RENEW_STEPS_MS[0])] and broker.changes[-1] == ("m1", 1_000)
    asyncio.run(run())


@pytest.mark.parametrize(("reconsume_times", "delay_s"), [(0, 10), (1, 30), (15, 7200), (40, 7200), (-1, 10)])
def test_retry_delay_follows_the_default_customized_policy(reconsume_times: int, delay_s: int) -> None:
    assert clients.retry_delay_ms(reconsume_times) == delay_s * 1000
