"""``MessageQueue`` for SDK users: defined in ``rocketq.protocol.queues``, shared with the admin tools."""

from rocketq.protocol.queues import MessageQueue

__all__ = ["MessageQueue"]
