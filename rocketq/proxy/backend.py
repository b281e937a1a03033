"""What the proxy asks of the brokers, over remoting: routes, sends, pops, acks.

The proxy is a remoting client like any other and reuses the SDK's pieces: a ``ClientInstance``
for routes from the name server and broker addresses, the SDK ``Producer`` for sends (its
checks, retries and latency fault tolerance; a FIFO message goes to the queue
``routing.group_queue`` picks, one attempt, never moved; a NORMAL message is written at once by
``send_async``, without a coroutine of its own; several NORMAL messages of one SendMessage go as
one SEND_BATCH_MESSAGE, ``send_batch``) and ``PopClient`` for POP_MESSAGE,
ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and the DLQ forward. CLUSTER mode points it at the
name servers of ``namesrvAddr``; a broker's LOCAL endpoint points it at the name servers that
broker registers with, so it reaches the broker through loopback remoting.

With ``credentials`` (``rocketq.proxy.credentials``: the proxy's own ACL account) every remoting
request of these clients, to brokers and name servers alike, is signed with that account.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rocketq.acl import signing
from rocketq.client import wire
from rocketq.client.errors import RouteError
from rocketq.client.instance import ClientInstance
from rocketq.client.popclient import PopClient
from rocketq.client.queues import MessageQueue
from rocketq.client.routes import TopicRoute
from rocketq.client.sending import SendResult
from rocketq.client.settings import ClientSettings, configure
from rocketq.client.transactionproducer import TransactionProducer
from rocketq.protocol import messageproperties as mp
from rocketq.protocol.codes import MASTER_ID
from rocketq.protocol.messagetypes import Message
from rocketq.proxy import routing
from rocketq.proxy.credentials import Credentials
from rocketq.proxy.metadata import Metadata
from rocketq.proxy.status import Code, ProxyError
from rocketq.proxy.transactions import Transactions
from rocketq.proxy.v2 import definition_pb2 as pb

PROXY_PRODUCER_GROUP: Final = "rocketq_proxy_producer"
"""The remoting producer group the proxy sends under (RocketMQ's proxy uses one per topic)."""
HEARTBEAT_INTERVAL_MS: Final = 5000
POP_RPC_TIMEOUT_S: Final = 5.0


class Backend:
    def __init__(self, namesrv_addr: str, *, max_message_size: int, transactions: Transactions,
                 credentials: Credentials | None = None) -> None:
        signed = credentials.options() if credentials is not None else {}
        self.rpc_hook = signing.signer(**signed) if signed else None
        """Signs requests with the proxy's account (None: unsigned); the v2 clients' connections use it too."""
        self._instance = ClientInstance(configure(ClientSettings, {"namesrv_addr": namesrv_addr, **signed}))
        self.transactions = transactions
        self.producer = TransactionProducer(
            transactions.group, transactions, namesrv_addr, max_message_size=max_message_size, **signed,
            # the v2 client retries (its backoff policy); one attempt here keeps a send's latency
            # within the client's request timeout
            retry_times_when_send_failed=0, retry_times_when_send_async_failed=0,
            # brokers must know the proxy as a producer of its group before they check a half message
            heartbeat_broker_interval=HEARTBEAT_INTERVAL_MS)
        self.pops = PopClient(self._instance.remoting, timeout_s=POP_RPC_TIMEOUT_S)
        self.metadata = Metadata(self._instance.remoting, self.route)

    async def start(self) -> None:
        self._instance.start()
        await self.producer.start()

    async def close(self) -> None:
        await self.producer.close()
        await self.pops.close()
        await self._instance.close()

    async def end_transaction(self, topic: str, transaction_id: str, resolution: pb.TransactionResolution,
                              source: pb.TransactionSource) -> None:
        addr, header = self.transactions.end_header(topic, transaction_id, resolution, source)
        await wire.end_transaction_oneway(self._instance.remoting, addr, header, None)

    async def route(self, topic: str) -> TopicRoute:
        """The topic's route; TOPIC_NOT_FOUND when the name servers do not know it."""
        try:
            route = await self._instance.route(topic)
        except RouteError as exc:
            raise ProxyError(Code.TOPIC_NOT_FOUND, str(exc)) from None
        if route is None or not route.queue_datas:
            raise ProxyError(Code.TOPIC_NOT_FOUND, f"topic {topic} not found")
        return route

    async def broker_addrs(self, topic: str, masters_only: bool) -> list[str]:
        """The addresses of the brokers serving ``topic`` (every member, or masters only)."""
        route = await self.route(topic)
        return [addr for data in route.broker_datas for broker_id, addr in data.addrs
                if broker_id == MASTER_ID or not masters_only]

    async def master(self, topic: str, broker_name: str) -> str:
        """The master address of a broker group serving ``topic``."""
        await self.route(topic)
        addr = self._instance.master_addr(broker_name)
        if addr is None:
            raise ProxyError(Code.NOT_FOUND, f"broker {broker_name} has no master for topic {topic}")
        return addr

    async def send(self, msg: Message) -> SendResult:
        if msg.properties.get(mp.TRAN_MSG) == "true":
            half = await self.producer.send_message_in_transaction(msg)
            result = half.send_result
            addr = await self.master(msg.topic, result.message_queue.broker_name)
            self.transactions.sent(msg.topic, result, addr)
            return result
        group = msg.properties.get(mp.SHARDING_KEY)
        if group is None:
            return await self.producer.send_async(msg)

        def by_group(queues: Sequence[MessageQueue]) -> MessageQueue:
            return routing.group_queue(group, queues)

        return await self.producer.send(msg, selector=by_group)

    async def send_batch(self, msgs: Sequence[Message]) -> SendResult:
        """One SEND_BATCH_MESSAGE of NORMAL messages of one topic (``batching.batchable``); the
        result's ``msg_id`` joins theirs with commas, its ``queue_offset`` is the first one's.
        MessageError (nothing sent) when they do not make a batch, e.g. over maxMessageSize."""
        return await self.producer.send_batch(msgs)
