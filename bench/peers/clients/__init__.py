"""One client per system, all behind the same small interface (``api.StreamClient``).

Each module speaks to its server through that system's own Python client: ``rocketqclient``
(rocketq's Producer and PushConsumer), ``jetstreamclient`` (nats-py, a JetStream file stream)
and ``redisclient`` (redis-py with hiredis, a Redis stream). The timed loops that drive them
are the same for every system and live in ``peers.workloads``.
"""
