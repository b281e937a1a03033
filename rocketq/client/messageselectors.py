"""Which messages of a topic a consumer wants: a tag expression or a SQL92 selector.

    consumer.subscribe("TopicTest", "TagA || TagB")                      # tags (the default)
    consumer.subscribe("TopicTest", MessageSelector.by_sql("a > 5 AND b = 'x'"))

Like RocketMQ's ``MessageSelector``. A SQL92 selector is compiled here first, so a typo fails
at ``subscribe`` with its line and column instead of as pulls the broker refuses. The broker
filters SQL92 subscriptions (it needs ``enablePropertyFilter=true``) and the consumer keeps what
it is sent, as RocketMQ's clients do; tag subscriptions are filtered by the broker by tag hash
and checked again by exact tag on the client.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.client.errors import ClientStateError
from rocketq.filter import sql92
from rocketq.protocol import subscription
from rocketq.protocol.subscription import SubscriptionData, SubscriptionError


@dataclass(frozen=True, slots=True)
class MessageSelector:
    expression_type: str
    expression: str

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        return cls(subscription.EXPRESSION_SQL92, sql)

    @classmethod
    def by_tag(cls, tags: str) -> MessageSelector:
        return cls(subscription.EXPRESSION_TAG, tags)


Expression = str | MessageSelector
"""A tag expression as text (``*``, ``A || B``), or a MessageSelector."""


def build(topic: str, expression: Expression, sub_version: int = 0) -> SubscriptionData:
    """SubscriptionData for ``topic``; ClientStateError for an expression that cannot work."""
    selector = expression if isinstance(expression, MessageSelector) else MessageSelector.by_tag(expression)
    try:
        sub = subscription.build(topic, selector.expression, selector.expression_type, sub_version)
    except SubscriptionError as exc:
        raise ClientStateError(f"bad subscription {selector.expression!r} for {topic}: {exc}") from None
    if not sub.is_tag_type:
        try:
            sql92.compile_selector(sub.sub_string)
        except sql92.FilterSyntaxError as exc:
            raise ClientStateError(f"bad SQL92 selector {selector.expression!r} for {topic}: {exc}") from None
    return sub
