"""How admin values read as mqadmin text and as JSON."""

from __future__ import annotations

from rocketq.admin import stats, views
from rocketq.admin.routes import BrokerData, QueueData, TopicRoute
from rocketq.admin.stats import MessageQueue
from rocketq.protocol import messagetypes, storedrecords


def record(body: bytes, **props: str) -> messagetypes.MessageExt:
    raw = storedrecords.encode_stored_record(topic="T", queue_id=2, body=body, properties=props, queue_offset=7,
                                       physical_offset=300, store_timestamp=1700000000123,
                                       store_host=("10.0.0.1", 10911), born_host=("::1", 5))
    return storedrecords.decode_stored_record(raw)


def test_message_json_keeps_text_bodies_and_encodes_binary_ones() -> None:
    text = views.message_json(record("héllo".encode(), KEYS="a b", TAGS="t", UNIQ_KEY="U1"))
    assert text["body"] == "héllo" and text["keys"] == ["a", "b"] and text["msgId"] == "U1"
    assert text["storeHost"] == "10.0.0.1:10911" and text["bornHost"] == "[::1]:5"
    assert text["offsetMsgId"].endswith(f"{300:016X}")
    binary = views.message_json(record(b"\xff\x00"))
    assert binary["bodyBase64"] == "/wA=" and "body" not in binary


def test_message_block_and_line() -> None:
    rec = record(b"line1\nline2", TAGS="t")
    block = views.message_block(rec)
    assert "Queue Offset        : 7" in block and "Tags                : [t]" in block
    line = views.message_line(MessageQueue("T", "b", 2), rec, "utf-8", True)
    assert line.startswith(f"MSGID: {rec.offset_msg_id}") and line.endswith("BODY: line1\\nline2")
    assert "BODY" not in views.message_line(MessageQueue("T", "b", 2), rec, "utf-8", False)


def test_route_views() -> None:
    route = TopicRoute((QueueData("b", 4, 2, 6, 0),), (BrokerData("c", "b", ((0, "h:1"), (1, "h:2"))),), topic="T")
    assert views.route_table(route).splitlines()[1].split() == ["c", "b", "0:h:1,1:h:2", "4", "2", "RW-"]
    assert views.route_json(route)["brokerDatas"][0]["brokerAddrs"] == {"0": "h:1", "1": "h:2"}


def test_progress_views() -> None:
    progress = stats.ConsumeStats(((MessageQueue("T", "b", 0), stats.OffsetWrapper(9, 4, 0)),), 2.5)
    text = views.progress_table(progress)
    assert "Consume TPS: 2.50" in text and "Consume Diff Total: 5" in text
    data = views.progress_json("g", progress)
    assert data["offsets"] == [{"topic": "T", "brokerName": "b", "queueId": 0, "brokerOffset": 9,
                                "consumerOffset": 4, "diff": 5, "lastTimestamp": 0}]
