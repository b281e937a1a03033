"""The proxy's cache of broker metadata: refresh age, fallbacks on a failed read, bounded size."""

from __future__ import annotations

import asyncio

from rocketq.client.errors import BrokerError
from rocketq.proxy.metadata import LastKnown


def test_values_are_refetched_when_old_kept_when_a_read_fails_and_bounded() -> None:
    now = [0.0]
    answers: dict[str, object] = {"a": 1, "b": 2, "c": 3}
    fetched: list[str] = []

    async def fetch(name: str) -> int:
        fetched.append(name)
        answer = answers[name]
        if isinstance(answer, Exception):
            raise answer
        return int(str(answer))

    cache: LastKnown[str, int] = LastKnown(fetch, -1, refresh_s=10, max_entries=2, clock=lambda: now[0])

    async def scenario() -> None:
        assert await cache.get("a") == 1 and await cache.get("a") == 1
        assert fetched == ["a"]
        now[0] = 11
        answers["a"] = BrokerError(1, "down", "x")
        assert await cache.get("a") == 1  # the last value known
        answers["b"] = BrokerError(1, "down", "x")
        assert await cache.get("b") == -1  # nothing known: the fallback
        answers["a"], answers["b"] = 10, 2
        assert await cache.get("a") == 10
        await cache.get("b")
        await cache.get("c")  # a third name pushes out the oldest ("a")
        fetched.clear()
        assert await cache.get("b") == 2 and fetched == []
        assert await cache.get("a") == 10 and fetched == ["a"]

    asyncio.run(scenario())


def test_concurrent_callers_share_one_fetch() -> None:
    calls: list[str] = []

    async def slow(name: str) -> str:
        calls.append(name)
        await asyncio.sleep(0.05)
        return name.upper()

    cache: LastKnown[str, str] = LastKnown(slow, "")

    async def scenario() -> list[str]:
        return list(await asyncio.gather(*(cache.get("t") for _ in range(20))))

    assert asyncio.run(scenario()) == ["T"] * 20
    assert calls == ["t"]
