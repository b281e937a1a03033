"""Why a message cannot be read or written: the errors every message codec raises.

``MessageFormatError``: bytes that claim to be a stored record, a batch body or a properties
string are corrupt (a reader's error). ``MessageIllegalError``: a message cannot be encoded
within RocketMQ's limits (a writer's error), with ``PropertiesSizeExceededError`` for
properties longer than PROPLEN can say. Both are ``ValueError``s.
"""

from __future__ import annotations


class MessageFormatError(ValueError):
    """Bytes that claim to be a stored record, batch body or properties string are corrupt."""


class MessageIllegalError(ValueError):
    """A message cannot be encoded within RocketMQ's limits (size, topic length, separators)."""


class PropertiesSizeExceededError(MessageIllegalError):
    """Encoded properties are longer than MAX_PROPERTIES_LENGTH."""
