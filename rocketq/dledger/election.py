"""Elections: who may vote for whom, and how a candidate gathers votes.

A member becomes a candidate when it has heard nothing from a leader for the election timeout
(``heartBeatTimeIntervalMs x maxHeartBeatLeak``) plus a random delay in ``minVoteIntervalMs ..
maxVoteIntervalMs``; the randomness keeps two members from splitting the vote round after round.

Every election has two rounds (Raft's pre-vote, §9.6 of Ongaro's thesis):

1. **Pre-vote.** The candidate asks "would you vote for me in term T+1?" without changing its
   term. A member says yes only if it has *not* heard from a live leader within the election
   timeout and the candidate's log is at least as current as its own. A member that was cut off
   (a rejoining node with a stale log, a node behind a flaky link) thus fails here, and its
   term, and so the healthy group's, stays where it was.
2. **Vote.** Only after a majority said yes does the candidate move to T+1, vote for itself
   (persisted) and ask for real votes. A voter grants at most one vote per term, persisted with
   the term before it answers (``termstore``), and only to a candidate whose log is as current
   as its own; it too refuses while it hears from a live leader, unless the request is a
   leadership transfer the leader itself started.

This module holds the rules as functions; ``node`` applies them to a member's state.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable

from rocketq.dledger import transport, wire
from rocketq.dledger.settings import DLedgerSettings


def log_is_current(candidate_last_term: int, candidate_last_index: int, last_term: int, last_index: int) -> bool:
    """Raft's up-to-date check: a later last term wins; in the same term the longer log."""
    return (candidate_last_term, candidate_last_index) >= (last_term, last_index)


def vote_delay(settings: DLedgerSettings, rng: random.Random) -> float:
    """A random pause, in seconds, before a (next) election attempt."""
    return rng.uniform(settings.min_vote_interval_ms, settings.max_vote_interval_ms) / 1000


async def poll(
    clients: Iterable[transport.PeerClient],
    request: wire.VoteRequest,
    needed: int,
    timeout: float,
    on_answer: Callable[[wire.Answer], bool],
) -> bool:
    """Ask every peer at once; True as soon as ``needed`` of them granted.

    ``on_answer`` sees every answer first and returns False to stop the poll (an answer showed
    a newer term). A peer that does not answer within ``timeout`` counts as a no.
    """
    if needed <= 0:
        return True
    tasks = [asyncio.ensure_future(client.call(request, timeout)) for client in clients]
    granted = 0
    try:
        for next_answer in asyncio.as_completed(tasks):
            try:
                answer = await next_answer
            except transport.PeerUnavailable:
                continue
            if not on_answer(answer):
                return False
            if answer.ok:
                granted += 1
                if granted >= needed:
                    return True
        return False
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
