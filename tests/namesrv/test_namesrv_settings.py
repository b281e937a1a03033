"""namesrv.conf keys, defaults and the errors a bad value gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq import settings
from rocketq.namesrv.settings import NamesrvSettings
from rocketq.settings import SettingsError


def test_defaults_match_rocketmq() -> None:
    s = NamesrvSettings()
    assert s.listen_port == 9876
    assert s.kv_config_path == "~/namesrv/kvConfig.json"
    assert s.scan_interval_s == 10 and s.broker_timeout_s == 120
    assert s.frame_max_length == 16 * 1024 * 1024
    assert s.metrics_port == 0, "any free port: a name server must not take a port a broker may want"
    assert s.order_message_enable is False


def test_properties_file_with_rocketmq_keys(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text("listenPort=9877\nkvConfigPath=/data/kv.json\nbrokerChannelExpiredTime=3000\n"
                    "orderMessageEnable=true\nrocketmqHome=/opt/rocketmq\nserverWorkerThreads=8\n")
    values = settings.read_properties(conf)
    s = settings.build(NamesrvSettings, values, environ={})
    assert (s.listen_port, s.kv_config_path, s.broker_timeout_s, s.order_message_enable) == (
        9877, "/data/kv.json", 3.0, True)
    assert settings.unknown_keys(values, [NamesrvSettings]) == ["rocketmqHome", "serverWorkerThreads"]


@pytest.mark.parametrize("values, message", [
    ({"listenPort": "70000"}, "listenPort=70000"),
    ({"listenPort": "abc"}, "listenPort='abc': expected an integer"),
    ({"metricsPort": "-2"}, "metricsPort=-2"),
    ({"metricsPort": "65536"}, "metricsPort=65536"),
    ({"scanNotActiveBrokerInterval": "0"}, "scanNotActiveBrokerInterval=0"),
    ({"brokerChannelExpiredTime": "-5"}, "brokerChannelExpiredTime=-5"),
    ({"frameMaxLength": "10"}, "frameMaxLength=10"),
    ({"orderMessageEnable": "yes"}, "orderMessageEnable='yes'"),
    ({"listenPort": "9000", "metricsPort": "9000"}, "both 9000"),
    ({"bindAddress": ""}, "bindAddress"),
])
def test_bad_values_name_the_key(values: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        settings.build(NamesrvSettings, values, environ={})
