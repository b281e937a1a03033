"""Apache RocketMQ's own broker.conf files load as they are; a broker runs from each of them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketq.broker.settings import BrokerRole
from rocketq.cli import broker as broker_cli
from rocketq.local.ports import free_port
from rocketq.settings import SettingsError
from rocketq.store.settings import FlushDiskType

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rocketmq-conf"
CONF_FILES = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".conf", ".properties"))


def test_the_fixture_set_is_there() -> None:
    assert len(CONF_FILES) == 13, CONF_FILES


def test_single_broker_default() -> None:
    identity, _behaviour, store, unknown = broker_cli.load(str(FIXTURES / "broker.conf"), {})
    assert identity.broker_cluster_name == "DefaultCluster" and identity.broker_name == "broker-a"
    assert identity.broker_id == 0 and identity.broker_role is BrokerRole.ASYNC_MASTER
    assert store.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    assert store.file_reserved_time == 48 and store.delete_when == "04"
    assert unknown == []


def test_slave_and_sync_master_roles() -> None:
    slave, *_ = broker_cli.load(str(FIXTURES / "2m-2s-async" / "broker-a-s.properties"), {})
    assert slave.broker_role is BrokerRole.SLAVE and slave.broker_id == 1
    sync, *_ = broker_cli.load(str(FIXTURES / "2m-2s-sync" / "broker-a.properties"), {})
    assert sync.broker_role is BrokerRole.SYNC_MASTER


def test_dledger_configs_load() -> None:
    conf = str(FIXTURES / "dledger" / "broker-n0.conf")
    identity, _b, store, unknown = broker_cli.load(conf, {})
    assert identity.broker_cluster_name == "RaftCluster" and identity.listen_port == 30911
    assert identity.namesrv_addr == "127.0.0.1:9876"
    assert store.store_path_commit_log == "/tmp/rmqstore/node00/commitlog"
    assert unknown == ["sendMessageThreadPoolNums"]
    assert "sendMessageThreadPoolNums" in broker_cli.ignored_key_warnings(unknown)[0]
    assert broker_cli.load_ha(conf, {}).enable_dleger_commit_log
    dledger = broker_cli.load_dledger(conf, {})
    assert (dledger.dleger_group, dledger.dleger_self_id) == ("RaftNode00", "n0")
    with pytest.raises(SettingsError, match="n7"):
        broker_cli.load_dledger(conf, {"dLegerSelfId": "n7"})  # not among dLegerPeers


def test_a_dledger_pods_ordinal_gives_its_self_id() -> None:
    assert broker_cli.ordinal_identity("demo-broker-0-2", 0, dledger=True) == {"dLegerSelfId": "n2"}


def test_trace_broker_config() -> None:
    identity, _b, _s, unknown = broker_cli.load(str(FIXTURES / "2m-noslave" / "broker-trace.properties"), {})
    assert identity.broker_name == "broker-trace" and unknown == []


def test_command_line_beats_environment_beats_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876")
    identity, *_ = broker_cli.load(str(FIXTURES / "dledger" / "broker-n0.conf"), {})
    assert identity.namesrv_addr == "10.0.0.1:9876"
    identity, *_ = broker_cli.load(str(FIXTURES / "dledger" / "broker-n0.conf"), {"namesrvAddr": "127.0.0.2:1"})
    assert identity.namesrv_addr == "127.0.0.2:1"


@pytest.mark.parametrize("bad, message", [
    ({"brokerId": "one"}, "brokerId"),
    ({"brokerRole": "LEADER"}, "brokerRole"),
    ({"flushDiskType": "SOMETIMES"}, "flushDiskType"),
    ({"autoCreateTopicEnable": "yes"}, "autoCreateTopicEnable"),
])
def test_bad_values_name_the_key(bad: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        broker_cli.load(str(FIXTURES / "broker.conf"), bad)


def test_the_metrics_port_defaults_to_any_free_port() -> None:
    identity, *_ = broker_cli.load(str(FIXTURES / "broker.conf"), {})
    assert identity.metrics_port == 0, "RocketMQ's brokers take no metrics port: one must not be assumed free"


def test_settings_that_did_nothing_are_reported_as_ignored() -> None:
    *_, unknown = broker_cli.load(str(FIXTURES / "broker.conf"),
                                  {"waitTimeMillsInSendQueue": "200", "transientStorePoolEnable": "true"})
    assert unknown == ["transientStorePoolEnable", "waitTimeMillsInSendQueue"]


@pytest.mark.parametrize("bad, message", [
    ({"listenPort": "70000"}, "listenPort=70000"),
    ({"listenPort": "-1"}, "listenPort=-1"),
    ({"haListenPort": "65536"}, "haListenPort=65536"),
    ({"metricsPort": "-2"}, "metricsPort=-2"),
    ({"namesrvAddr": "127.0.0.1:9876;127.0.0.1:70000"}, "namesrvAddr"),
    ({"namesrvAddr": "127.0.0.1"}, "namesrvAddr"),
    ({"namesrvAddr": "127.0.0.1:0"}, "namesrvAddr"),
    ({"listenPort": "10911", "metricsPort": "10911"}, "both 10911"),
    ({"deleteWhen": "25"}, "deleteWhen"),
    ({"mappedFileSizeCommitLog": "10"}, "mappedFileSizeCommitLog"),
    ({"brokerPermission": "8"}, "brokerPermission"),
    ({"defaultTopicQueueNums": "0"}, "defaultTopicQueueNums"),
])
def test_bad_values_are_refused_when_the_config_is_loaded(bad: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        broker_cli.load(str(FIXTURES / "broker.conf"), bad)


def test_a_port_from_the_environment_is_range_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:98760")
    with pytest.raises(SettingsError, match="namesrvAddr"):
        broker_cli.load(str(FIXTURES / "broker.conf"), {})


def test_metrics_off_is_minus_one() -> None:
    identity, *_ = broker_cli.load(str(FIXTURES / "broker.conf"), {"metricsPort": "-1"})
    assert identity.metrics_port == -1


def test_missing_file_is_a_clear_error() -> None:
    with pytest.raises(SettingsError, match="cannot read config file"):
        broker_cli.load("/nonexistent/broker.conf", {})


@pytest.mark.parametrize("hostname, master, expected", [
    ("demo-broker-0-0", 0, {"brokerId": "0"}),
    ("demo-broker-0-1", 0, {"brokerId": "1", "brokerRole": "SLAVE"}),
    ("demo-broker-0-0", 1, {"brokerId": "1", "brokerRole": "SLAVE"}),
    ("demo-broker-0-1", 1, {"brokerId": "0"}),
    ("demo-broker-0-2", 1, {"brokerId": "2", "brokerRole": "SLAVE"}),
])
def test_ordinal_identity(hostname: str, master: int, expected: dict[str, str]) -> None:
    assert broker_cli.ordinal_identity(hostname, master) == expected


def test_ordinal_needs_a_statefulset_hostname() -> None:
    with pytest.raises(SettingsError, match="ordinal"):
        broker_cli.ordinal_identity("laptop", 0)


@pytest.mark.parametrize("conf", CONF_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_broker_serves_from_each_rocketmq_config(conf: Path, tmp_path: Path) -> None:
    """Only paths and ports are overridden (loopback, temp dir; a DLedger member's peer ports);
    every other key is the file's. A DLedger member alone serves, as a follower without a leader."""
    port = free_port()
    args = [sys.executable, "-m", "rocketq", "broker", "-c", str(conf), "-p", str(port), "-n", "127.0.0.1:1",
            "--store-dir", str(tmp_path / "store"), "--metrics-port", "0",
            "--set", f"storePathCommitLog={tmp_path / 'store' / 'commitlog'}", "--set", "brokerIP1=127.0.0.1",
            "--set", f"haListenPort={free_port()}"]
    if conf.parent.name == "dledger":
        peers = ";".join(f"n{i}-127.0.0.1:{free_port()}" for i in range(3))
        args += ["--set", f"dLegerPeers={peers}"]
    log = tmp_path / "broker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while "listening on" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        text = log.read_text()
        assert f"listening on 127.0.0.1:{port}" in text, text
        assert "Traceback" not in text
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
