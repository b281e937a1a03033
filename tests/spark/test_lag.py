"""lag.queue_metrics and lag.group_metrics on a hand-made history: the arithmetic of trends."""

from __future__ import annotations

from typing import Any

import pytest
from rocketq_spark import lag

pytestmark = pytest.mark.slow
COLUMNS = "group STRING, topic STRING, brokerName STRING, queueId INT, brokerOffset LONG, consumerOffset LONG, " \
          "lag LONG, lastTimestamp LONG, consumers INT, runTimestamp LONG"
MINUTE = 60_000


def row(queue: int, run: int, broker_offset: int, consumer_offset: int, consumers: int = 1) -> tuple[Any, ...]:
    return ("g", "T", "b", queue, broker_offset, consumer_offset, broker_offset - consumer_offset, 0, consumers,
            run * MINUTE)


def test_growth_drain_stuck_and_unserved(spark: Any) -> None:
    history = spark.createDataFrame([
        # queue 0 drains: consumer +60/min, producer +30/min -> lag 100, 70, 40
        row(0, 0, 200, 100), row(0, 1, 230, 160), row(0, 2, 260, 220),
        # queue 1 is stuck since run 1 (consumer offset 50); lag 20, 20, 30
        row(1, 0, 60, 40), row(1, 1, 70, 50), row(1, 2, 80, 50),
        # queue 2 has a backlog and nobody online; only in the last run
        row(2, 2, 9, 4, consumers=0),
        # queue 3 left the snapshot (an old run only): not reported
        row(3, 0, 5, 0),
        # outside the window: ignored
        row(0, -100, 0, 0),
    ], COLUMNS)
    queues = {r.queueId: r for r in lag.queue_metrics(history, 2 * MINUTE, 10 * MINUTE, stuck_runs=2).collect()}
    assert sorted(queues) == [0, 1, 2]
    q0, q1, q2 = queues[0], queues[1], queues[2]
    assert (q0.lag, q0.runs, q0.lagGrowthPerSec, q0.consumeRatePerSec) == (40, 3, -0.5, 1.0)
    assert q0.drainSeconds == 40.0 and not q0.stuck and not q0.noConsumer
    assert q1.stuck and q1.lagGrowthPerSec == pytest.approx(10 / 120)
    assert q1.drainSeconds == pytest.approx(30 / (10 / 120))  # the window's pace, stalls included
    assert q2.noConsumer and not q2.stuck and q2.runs == 1 and q2.lagGrowthPerSec is None and q2.drainSeconds is None
    (group,) = lag.group_metrics(lag.queue_metrics(history, 2 * MINUTE, 10 * MINUTE, 2)).collect()
    assert (group.queues, group.lag, group.stuckQueues, group.noConsumerQueues) == (3, 75, 1, 1)
