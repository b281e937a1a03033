"""rocketq's Python SDK: RocketMQ producers and consumers on asyncio.

    from rocketq.client import Message, Producer, PushConsumer, ConsumeStatus

The names below are the SDK's public surface, re-exported here so applications import one
package (the one place in rocketq/client that re-exports; modules inside import each other
by module). Layers, bottom up: ``wire`` (one typed call per request code) -> ``instance``
(client id, routes, heartbeats) -> ``producer`` / ``pushconsumer`` / ``pullconsumer``, with
one module per concept in between (routes, faults, selectors, allocation, rebalance, pull
tasks, consuming, process queues, offset stores). ``simpleconsumer`` / ``popclient``: RocketMQ 5's
POP consumption (docs/messaging.md). See docs/sdk.md.
"""

from rocketq.client.allocation import AllocateStrategy, allocate_averagely, allocate_averagely_by_circle
from rocketq.client.consuming import ConsumeContext, ConsumeStatus
from rocketq.client.errors import BrokerError, ClientError, ClientStateError, MessageError, ProtocolError, RouteError
from rocketq.client.messages import Message, MessageExt
from rocketq.client.messageselectors import MessageSelector
from rocketq.client.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketq.client.popclient import PopClient
from rocketq.client.producer import Producer
from rocketq.client.pullconsumer import PullConsumer
from rocketq.client.pulling import PullResult, PullStatus
from rocketq.client.pushconsumer import PushConsumer
from rocketq.client.queues import MessageQueue
from rocketq.client.selectors import QueueSelector, hash_by_key, random_queue
from rocketq.client.sending import SendResult, SendStatus
from rocketq.client.settings import (
    ConsumeFromWhere,
    MessageModel,
    ProducerSettings,
    PullConsumerSettings,
    PushConsumerSettings,
)
from rocketq.client.simpleconsumer import SimpleConsumer
from rocketq.client.transactionproducer import (
    LocalTransactionState,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)
from rocketq.protocol.poprequests import PoppedMessage, PopResult, PopStatus

__all__ = [
    "AllocateStrategy",
    "BrokerError",
    "ClientError",
    "ClientStateError",
    "ConsumeContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "LocalTransactionState",
    "Message",
    "MessageError",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "PopClient",
    "PopResult",
    "PopStatus",
    "PoppedMessage",
    "Producer",
    "ProducerSettings",
    "ProtocolError",
    "PullConsumer",
    "PullConsumerSettings",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "PushConsumerSettings",
    "QueueSelector",
    "RouteError",
    "SendResult",
    "SendStatus",
    "SimpleConsumer",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "hash_by_key",
    "random_queue",
]
