"""When a name server's answer fences a master (rocketq.ha.fencing): only for a newer epoch held
by another address, once, until the role changes."""

from __future__ import annotations

from rocketq.ha.fencing import Fence, NewerMaster

ME, OTHER = "10.0.0.1:10911", "10.0.0.2:10911"


def test_a_newer_epoch_at_another_address_fences_once_until_lifted() -> None:
    fence = Fence()
    told = NewerMaster("ns:9876", OTHER, 2)
    assert fence.warranted(told, my_epoch=1, my_addr=ME)
    fence.engage(told)
    assert fence.engaged and fence.by == told
    assert not fence.warranted(told, my_epoch=1, my_addr=ME), "already fenced"
    fence.lift()
    assert not fence.engaged and fence.warranted(told, my_epoch=1, my_addr=ME)


def test_a_master_at_the_highest_epoch_is_never_fenced_whatever_the_answer_says() -> None:
    fence = Fence()
    assert not fence.warranted(NewerMaster("ns:9876", OTHER, 2), my_epoch=2, my_addr=ME)
    assert not fence.warranted(NewerMaster("ns:9876", OTHER, 1), my_epoch=2, my_addr=ME)
    assert not fence.warranted(NewerMaster("ns:9876", ME, 3), my_epoch=2, my_addr=ME), "itself"
    assert not fence.warranted(NewerMaster("ns:9876", "", 3), my_epoch=2, my_addr=ME), "nobody named"
