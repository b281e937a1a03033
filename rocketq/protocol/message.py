"""Compatibility: the names of the former ``rocketq.protocol.message``, now split by concept.

New code imports the module that holds the concept:

* ``messagetypes``: ``Message``, ``MessageExt``, ``MessageSysFlag``, ``CompressionType``.
* ``messageproperties``: property names (``UNIQ_KEY``, ``TAGS``, ...) and the properties codec.
* ``storedrecords``: the stored-record codec (encode, decode, positions, magic codes).
* ``batchbodies``: the SEND_BATCH_MESSAGE body codec.
* ``javahash``: Java's ``String.hashCode`` (tag codes, index keys).
* ``messageerrors``: ``MessageFormatError``, ``MessageIllegalError``.

This module only re-exports them, for the modules whose bodies another branch is changing
(``broker/send.py``, ``client/producer.py``) and for code written against the old name; it
adds no indirection (each name is the same object). Remove it once nothing imports it.
"""

from __future__ import annotations

from rocketq.protocol.batchbodies import (  # noqa: F401
    BATCH_ITEM_MAGIC,
    BatchItem,
    batch_entries,
    decode_batch_body,
    encode_batch_body,
    encode_batch_entries,
)
from rocketq.protocol.javahash import (  # noqa: F401
    java_string_hash,
    java_string_hash_after,
    java_string_hash_unsigned,
    tag_hash,
)
from rocketq.protocol.messageerrors import (  # noqa: F401
    MessageFormatError,
    MessageIllegalError,
    PropertiesSizeExceededError,
)
from rocketq.protocol.messageproperties import (  # noqa: F401
    ARRIVE_TIME,
    BUYER_ID,
    CHECK_IMMUNITY_TIME_IN_SECONDS,
    CLUSTER,
    CONSUME_START_TIME,
    CORRECTION_FLAG,
    CORRELATION_ID,
    DELAY,
    INSTANCE_ID,
    KEY_SEPARATOR,
    KEYS,
    MAX_OFFSET,
    MAX_PROPERTIES_LENGTH,
    MAX_RECONSUME_TIMES,
    MIN_OFFSET,
    MQ2_FLAG,
    MSG_REGION,
    MSG_TYPE,
    NAME_VALUE_SEPARATOR,
    ORIGIN_MESSAGE_ID,
    PGROUP,
    PROPERTY_SEPARATOR,
    PUSH_REPLY_TIME,
    REAL_QID,
    REAL_TOPIC,
    RECONSUME_TIME,
    REPLY_TO_CLIENT,
    RETRY_TOPIC,
    SHARDING_KEY,
    TAGS,
    TRACE_ON,
    TRAN_MSG,
    TRAN_PREPARED_QUEUE_OFFSET,
    TRANSACTION_CHECK_TIMES,
    TRANSACTION_ID,
    TRANSFER_FLAG,
    TTL,
    UNIQ_KEY,
    WAIT,
    decode_properties,
    encode_properties,
    is_canonical,
    property_value,
    split_keys,
)
from rocketq.protocol.messagetypes import (  # noqa: F401
    CompressionType,
    Host,
    Message,
    MessageExt,
    MessageSysFlag,
    compression_type,
    transaction_type,
    with_transaction_type,
)
from rocketq.protocol.storedrecords import (  # noqa: F401
    BLANK_MAGIC,
    BODY_CRC_POS,
    BORN_HOST_POS,
    DEFAULT_MAX_MESSAGE_SIZE,
    MAGIC_POS,
    MAGIC_V1,
    MAGIC_V2,
    MAX_INFLATED_BODY_SIZE,
    MAX_TOPIC_LENGTH_V1,
    MAX_TOPIC_LENGTH_V2,
    MIN_RECORD_SIZE,
    PHYSICAL_OFFSET_POS,
    POSITIONS,
    QUEUE_ID_POS,
    QUEUE_OFFSET_POS,
    STORE_TIMESTAMP,
    SYS_FLAG_POS,
    TOTAL_SIZE_POS,
    RecordEncoder,
    body_crc,
    decode_stored_record,
    encode_stored_record,
    host_size,
    inflate_body,
    iter_stored_records,
    pack_host,
    record_size_at,
    store_timestamp_pos,
    stored_properties,
)
