"""Fencing: a master that learns its group has a newer-epoch master stops taking writes.

After ``rocketq admin electMaster`` the old master may still be running: not yet demoted
(``changeToSlave`` comes next), or cut off by a partition and back later. RocketMQ 4.x's name
server gives brokerId 0 to whoever registers last, so such a broker used to take the group's
route back at its next periodic registration, and producers wrote to a master whose log the
group had left behind. Epochs (``rocketq.ha.epochs``) say which master is newer: each promotion
starts the promoted broker's epoch number + 1. A rocketq master registers its epoch
(``rocketq.protocol.masterepoch``); a name server that knows a higher one for the group, held by
another live address, keeps brokerId 0 with that master and answers the stale one with the
group's epoch and the current master's address.

The stale broker then *fences* itself: it installs a slave's handlers (sends, transaction ends
and topic changes are refused with the codes a demoted master gives, NO_PERMISSION for sends)
and stops delayed delivery and transaction checks, but keeps its role, its brokerId 0, its
store and its HA port. Nothing is truncated and nothing is handed over: what to do with the
writes it took alone is an operator's decision (``changeToSlave`` makes it a slave of the new
master, which cuts them; ``electMaster`` re-promotes it past the group's epoch). It keeps
registering, and keeps being refused, so it does not come back into routes while the newer
master lives. A restart lifts the fence until the first registration answer renews it.

What a name server says is checked against what this broker knows: the fence is taken only
when the named epoch is above this broker's own current epoch and the named master is another
address. A master with the highest epoch never fences itself, whatever an answer claims, and a
fence is never more than refusing writes: it does not change the role or cut the log.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NewerMaster:
    """A name server's word that this group has a master at a higher epoch than the sender's."""

    namesrv: str
    master_addr: str
    epoch: int


class Fence:
    """This broker's fence: engaged once a name server names a newer master, until the role
    changes (``lift``) or the process restarts."""

    def __init__(self) -> None:
        self.by: NewerMaster | None = None

    @property
    def engaged(self) -> bool:
        return self.by is not None

    def warranted(self, told: NewerMaster, my_epoch: int, my_addr: str) -> bool:
        """Should this answer fence a master at ``my_epoch`` serving on ``my_addr``?"""
        return not self.engaged and told.epoch > my_epoch and told.master_addr not in ("", my_addr)

    def engage(self, told: NewerMaster) -> None:
        self.by = told

    def lift(self) -> None:
        self.by = None
