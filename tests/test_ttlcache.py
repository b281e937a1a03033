"""rocketq.ttlcache: freshness, single flight, failures not kept, bounded by write order."""

from __future__ import annotations

import asyncio

import pytest

from rocketq.ttlcache import TtlCache


def test_values_expire_and_a_put_may_carry_its_own_ttl() -> None:
    now = [0.0]
    cache: TtlCache[str, int] = TtlCache(10.0, clock=lambda: now[0])
    cache.put("a", 1)
    cache.put("b", 2, ttl=30.0)
    now[0] = 10.0
    assert cache.peek("a") is None and cache.stale("a") == 1, "expired, yet still known"
    assert cache.peek("b") == 2
    cache.drop("a")
    assert cache.stale("a") is None


def test_a_full_cache_pushes_out_the_entry_written_longest_ago() -> None:
    cache: TtlCache[str, int] = TtlCache(10.0, max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)  # rewritten: now the newest
    cache.put("c", 3)
    assert (cache.stale("a"), cache.stale("b"), cache.stale("c")) == (10, None, 3)
    assert len(cache) == 2


def test_a_waiter_cancelled_leaves_the_read_to_the_others() -> None:
    cache: TtlCache[str, str] = TtlCache(10.0)
    gate = asyncio.Event()
    loads: list[str] = []

    async def load() -> str:
        loads.append("t")
        await gate.wait()
        return "T"

    async def scenario() -> list[str]:
        first = asyncio.ensure_future(cache.get("t", load))
        second = asyncio.ensure_future(cache.get("t", load))
        await asyncio.sleep(0)
        first.cancel()
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await first
        return [await second, await cache.get("t", load)]

    assert asyncio.run(scenario()) == ["T", "T"]
    assert loads == ["t"]


def test_failures_reach_every_waiter_and_are_not_kept() -> None:
    cache: TtlCache[str, int] = TtlCache(10.0)
    calls = [0]

    async def failing() -> int:
        calls[0] += 1
        await asyncio.sleep(0)
        raise OSError("down")

    async def scenario() -> list[object]:
        return list(await asyncio.gather(*(cache.get("k", failing) for _ in range(3)), return_exceptions=True))

    assert [type(r) for r in asyncio.run(scenario())] == [OSError] * 3 and calls == [1]
    assert cache.stale("k") is None


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        TtlCache(-1.0)
    with pytest.raises(ValueError):
        TtlCache(1.0, max_entries=0)
