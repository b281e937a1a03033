"""rocketq: RocketMQ-compatible name servers, brokers and clients in Python."""

__version__ = "0.1.0"
