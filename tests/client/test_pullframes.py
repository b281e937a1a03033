"""A queue's pull requests made from its template (``PullRequests.frame``) against the frame
encoder: byte for byte what ``command(PULL_MESSAGE, ext_fields(...))`` encodes with that
opaque, for any group, topic, subscription and values (names with quotes, backslashes and
non-ASCII text included: a template cut in the wrong place would show here)."""

from __future__ import annotations

import asyncio

from client_fakes import KeepingTransport
from hypothesis import example, given
from hypothesis import strategies as st

from rocketq.client.instance import ClientInstance
from rocketq.client.offsetstores import RemoteBrokerOffsetStore
from rocketq.client.processqueue import ProcessQueue
from rocketq.client.pulling import PullRequests
from rocketq.client.pulltasks import PullTask
from rocketq.client.queues import MessageQueue
from rocketq.client.routes import TopicRoute
from rocketq.client.settings import PushConsumerSettings, configure
from rocketq.protocol import subscription
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frames import FrameDecoder
from rocketq.protocol.message import MessageExt
from rocketq.protocol.requests import command
from rocketq.protocol.routedata import BrokerData, QueueData
from rocketq.protocol.subscription import SubscriptionData
from rocketq.remoting.connection import ClientConnection

_names = st.text(min_size=1, max_size=40)
_int64 = st.integers(-(1 << 63), (1 << 63) - 1)


@given(_names, _names, st.integers(0, 1 << 16), st.integers(1, 1 << 20), _names, _int64, st.integers(0, 1 << 20),
       st.integers(0, (1 << 31) - 1), _int64, st.integers(0, 15), _int64)
@example("G", "%RETRY%G", 0, 32, "%d%s%%", 0, 15000, 1, 2, 3, 4)  # the template is a format: its own % doubled
def test_frame_from_the_template_is_the_encoded_command(
        group: str, topic: str, queue_id: int, max_nums: int, expression: str, sub_version: int, suspend_ms: int,
        opaque: int, offset: int, flag: int, commit: int) -> None:
    sub = SubscriptionData(topic, expression, sub_version=sub_version)
    requests = PullRequests(group, MessageQueue(topic, "broker-a", queue_id), max_nums, sub, suspend_ms)
    cmd = command(RequestCode.PULL_MESSAGE, requests.ext_fields(offset, flag, commit))
    cmd.opaque = opaque
    frame = requests.frame(opaque, offset, flag, commit)
    assert frame == cmd.encode()
    decoded = FrameDecoder().feed(frame)
    assert [(c.code, c.opaque, c.ext_fields) for c in decoded] == [(cmd.code, opaque, cmd.ext_fields)]


async def test_a_stopped_pull_task_withdraws_its_held_pull() -> None:
    """The templated pull is sent on the open connection, and stopping the task (a rebalance
    dropping the queue) forgets the request there, as ``Connection.request``'s future does."""
    settings = configure(PushConsumerSettings, {"namesrv_addr": "127.0.0.1:1", "client_ip": "127.0.0.1"})
    instance = ClientInstance(settings)  # never started: no name server, no heartbeats
    instance._store_route("T", TopicRoute((QueueData("broker-a", 1, 1, 6),),
                                          (BrokerData("DefaultCluster", "broker-a", ((0, _BROKER),)),)))
    conn = ClientConnection({}, name="test-consumer")
    transport = KeepingTransport()  # a broker with nothing new: it holds every pull
    conn.connection_made(transport)  # type: ignore[arg-type]
    instance.remoting._connections[_BROKER] = conn
    offsets = RemoteBrokerOffsetStore(instance, "G")
    sub = subscription.build("T", "*")
    mq = MessageQueue("T", "broker-a", 0)
    task = PullTask(mq, 5, group="G", settings=settings, instance=instance, offsets=offsets,
                    consume=_NoConsume(), subscription=lambda _topic: sub)
    task.start()
    for _ in range(100):
        await asyncio.sleep(0)
        if transport.written:
            break
    [request] = list(FrameDecoder().feed(b"".join(transport.written)))
    assert request.code == RequestCode.PULL_MESSAGE and request.ext_fields["queueOffset"] == "5"
    assert len(conn._pending) == 1  # the held pull, awaited by the task
    await task.stop()
    assert not conn._pending


class _NoConsume:
    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        raise AssertionError("nothing is pulled in this test")


_BROKER = "127.0.0.1:10911"
