"""suggestWhichBrokerId: the master sends a consumer far behind to its slave, only with slaveReadEnable."""

from __future__ import annotations

from rocketq.ha import reads
from rocketq.protocol import storedrecords
from rocketq.protocol.sharedbodies import SubscriptionGroupConfig
from rocketq.store.results import GetResult, GetStatus

MEMORY = 1000


def answer_ending_at(phys: int) -> GetResult:
    record = bytearray(64)
    storedrecords.POSITIONS.pack_into(record, storedrecords.QUEUE_OFFSET_POS, 0, phys)
    return GetResult(GetStatus.FOUND, 1, 0, 1, [memoryview(bytes(record))])


def suggest(result: GetResult, *, enable: bool = True, group: SubscriptionGroupConfig | None = None) -> int:
    return reads.suggest_broker_id(result, 1000, group, slave_read_enable=enable, max_ratio_percent=40,
                                   memory=MEMORY)


def test_far_behind_goes_to_the_slave_only_with_slave_reads_enabled() -> None:
    behind = answer_ending_at(500)  # 500 bytes behind > 40 % of 1000
    near = answer_ending_at(700)  # 300 bytes behind
    assert reads.behind_bytes(behind, 1000) == 500
    assert suggest(behind) == 1 and suggest(near) == 0
    assert suggest(behind, enable=False) == 0
    assert suggest(GetResult(GetStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)) == 0


def test_the_groups_broker_ids_decide() -> None:
    group = SubscriptionGroupConfig(group_name="g", broker_id=0, which_broker_when_consume_slowly=2)
    assert suggest(answer_ending_at(100), group=group) == 2
    assert suggest(answer_ending_at(900), group=group) == 0
