"""Routes as v2 clients see them, and which queue a message goes to.

QueryRoute answers a topic's queues with every broker's endpoints replaced by the proxy's own
address (CLUSTER mode: the address the client dialled, with the proxy's gRPC port), so a v2
client sends everything to the proxy. Per broker (each id, slaves included, as RocketMQ's
``ProxyTopicRouteData``): ``min(read, write)`` READ_WRITE queues, then the read-only, then the
write-only ones, then NONE when the topic's permission has neither; ids start at 0.

Each queue's ``accept_message_types`` comes from the topic's ``message.type`` attribute
(``typecheck.accepted``), given by the caller.

The client's choice of queue is not used for a send: a message with a group goes to
``Hashing.consistentHash(group.hashCode(), writeQueues)`` (Guava's jump hash, reproduced
bit for bit, so the group → queue mapping is RocketMQ's), others round robin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rocketq.client.queues import MessageQueue
from rocketq.client.routes import TopicRoute
from rocketq.protocol import javahash
from rocketq.protocol.codes import Perm
from rocketq.proxy.v2 import definition_pb2 as pb

MASTER_ID: Final = 0
ACCEPT_ALL: Final = (pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION)
_LCG_MULTIPLIER: Final = 2862933555777941757
_U64: Final = (1 << 64) - 1


def endpoints(host: str, port: int) -> pb.Endpoints:
    """One address, with the scheme the client would give it (an IP literal or a domain name)."""
    scheme = pb.IPv4 if host.replace(".", "").isdigit() else pb.IPv6 if ":" in host else pb.DOMAIN_NAME
    return pb.Endpoints(scheme=scheme, addresses=[pb.Address(host=host, port=port)])


def _queues_of(topic: str, read: int, write: int, perm: int, broker: pb.Broker,
               accept: Sequence[pb.MessageType]) -> list[pb.MessageQueue]:
    out: list[pb.MessageQueue] = []
    both = min(read, write)
    readable, writable = bool(perm & Perm.READ), bool(perm & Perm.WRITE)
    groups = [(both, pb.READ_WRITE if readable and writable else pb.READ if readable else
               pb.WRITE if writable else pb.NONE)]
    groups.append((read - both, pb.READ if readable else pb.NONE))
    groups.append((write - both, pb.WRITE if writable else pb.NONE))
    for count, permission in groups:
        out.extend(pb.MessageQueue(topic=pb.Resource(name=topic), id=len(out) + i, permission=permission,
                                   broker=broker, accept_message_types=accept) for i in range(count))
    return out


def message_queues(route: TopicRoute, topic: str, proxy: pb.Endpoints, namespace: str = "",
                   accept: Sequence[pb.MessageType] = ACCEPT_ALL) -> list[pb.MessageQueue]:
    out: list[pb.MessageQueue] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        bd = route.broker(qd.broker_name)
        ids = sorted(dict(bd.addrs)) if bd is not None else []
        for broker_id in ids:
            broker = pb.Broker(name=qd.broker_name, id=broker_id, endpoints=proxy)
            queues = _queues_of(topic, qd.read_queue_nums, qd.write_queue_nums, qd.perm, broker, accept)
            for q in queues:
                q.topic.resource_namespace = namespace
            out.extend(queues)
    return out


def assignments(route: TopicRoute, topic: str, proxy: pb.Endpoints, *, fifo: bool,
                accept: Sequence[pb.MessageType] = ACCEPT_ALL) -> list[pb.Assignment]:
    """QueryAssignment: per readable master, one queue id -1 (pop them all), or each queue for FIFO groups."""
    out: list[pb.Assignment] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        bd = route.broker(qd.broker_name)
        if not qd.readable or bd is None or bd.master_addr is None:
            continue
        broker = pb.Broker(name=qd.broker_name, id=MASTER_ID, endpoints=proxy)
        ids = range(qd.read_queue_nums) if fifo else (-1,)
        out.extend(pb.Assignment(message_queue=pb.MessageQueue(
            topic=pb.Resource(name=topic), id=i, permission=pb.READ_WRITE, broker=broker,
            accept_message_types=accept)) for i in ids)
    return out


def consistent_hash(value: int, buckets: int) -> int:
    """Guava's ``Hashing.consistentHash(long, int)``: a bucket in [0, buckets) for ``value``."""
    state = value & _U64
    candidate = 0
    while True:
        state = (_LCG_MULTIPLIER * state + 1) & _U64
        int31 = ((state >> 33) & 0xFFFFFFFF)  # Java's (int)(state >>> 33): 31 bits, never negative
        next_double = (int31 + 1) / float(1 << 31)
        nxt = int((candidate + 1) / next_double)
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate


def group_queue(group: str, queues: Sequence[MessageQueue]) -> MessageQueue:
    """The queue every message of ``group`` goes to (while the topic's write queues stay the same)."""
    return queues[consistent_hash(javahash.java_string_hash(group), len(queues))]
