"""Client settings (RocketMQ keys, env, validation) and the HeartbeatData body."""

from __future__ import annotations

import orjson
import pytest

from rocketq import settings as settings_loader
from rocketq.client import heartbeats
from rocketq.client.errors import ClientStateError
from rocketq.client.heartbeats import ConsumerData, ConsumeType
from rocketq.client.settings import (
    ConsumeFromWhere,
    MessageModel,
    ProducerSettings,
    PushConsumerSettings,
    configure,
)
from rocketq.protocol import subscription


def test_defaults_are_rocketmq_defaults() -> None:
    p = ProducerSettings()
    assert (p.send_msg_timeout, p.retry_times_when_send_failed, p.compress_msg_body_over_howmuch,
            p.max_message_size, p.default_topic_queue_nums, p.create_topic_key) == (3000, 2, 4096, 4194304, 4, "TBW102")
    c = PushConsumerSettings()
    assert (c.pull_threshold_for_queue, c.pull_threshold_size_for_queue, c.consume_concurrently_max_span,
            c.pull_batch_size, c.consume_message_batch_max_size, c.consume_thread_max,
            c.broker_suspend_max_time_millis, c.consumer_timeout_millis_when_suspend,
            c.persist_consumer_offset_interval, c.rebalance_interval) == (
        1000, 100, 2000, 32, 1, 20, 15000, 30000, 5000, 20000)
    assert c.message_model is MessageModel.CLUSTERING and c.effective_max_reconsume_times == 16


def test_properties_file_keys_load_with_java_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    c = settings_loader.build(PushConsumerSettings, {
        "namesrvAddr": "a:1;b:2", "messageModel": "broadcasting", "pullBatchSize": "8",
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET"})
    assert c.namesrv_list() == ["a:1", "b:2"] and c.message_model is MessageModel.BROADCASTING
    assert c.pull_batch_size == 8 and c.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def test_configure_uses_env_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", "env:9876")
    assert configure(ProducerSettings, {}).namesrv_addr == "env:9876"
    assert configure(ProducerSettings, {"namesrv_addr": "arg:1"}).namesrv_addr == "arg:1"
    assert configure(ProducerSettings, {"namesrv_addr": None}).namesrv_addr == "env:9876"


@pytest.mark.parametrize("cls, options, match", [
    (ProducerSettings, {"no_such_option": 1}, "unknown"),
    (ProducerSettings, {"send_msg_timeout": 0}, "send_msg_timeout"),
    (ProducerSettings, {"retry_times_when_send_failed": -1}, "retry_times"),
    (PushConsumerSettings, {"pull_batch_size": "32"}, "pull_batch_size"),
    (PushConsumerSettings, {"consumer_timeout_millis_when_suspend": 1000}, "consumerTimeoutMillisWhenSuspend"),
    (PushConsumerSettings, {"max_reconsume_times": -2}, "maxReconsumeTimes"),
])
def test_bad_options_are_clear_errors(cls, options, match) -> None:
    with pytest.raises(ClientStateError, match=match):
        configure(cls, options)


def test_heartbeat_body_is_rocketmq_heartbeat_data() -> None:
    sub = subscription.build("TopicTest", "TagA || TagB", sub_version=123)
    consumer = ConsumerData("cg", ConsumeType.CONSUME_PASSIVELY, MessageModel.CLUSTERING,
                            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, (sub,))
    body = orjson.loads(heartbeats.encode("10.0.0.1@42#7", ["pg"], [consumer]))
    assert body == {
        "clientID": "10.0.0.1@42#7",
        "producerDataSet": [{"groupName": "pg"}],
        "consumerDataSet": [{
            "groupName": "cg", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
            "subscriptionDataSet": [{
                "classFilterMode": False, "topic": "TopicTest", "subString": "TagA || TagB",
                "tagsSet": ["TagA", "TagB"], "codeSet": sorted([2598919, 2598920]), "subVersion": 123,
                "expressionType": "TAG"}],
        }],
    }
