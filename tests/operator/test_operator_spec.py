"""RocketMQCluster spec parsing: defaults, every refusal as a readable line, never an exception."""

from __future__ import annotations

from typing import Any

import crdschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rocketq_operator import names
from rocketq_operator import spec as specs
from rocketq_operator.spec import BrokerMode, BrokerRole, FlushDiskType, PullPolicy, StorageType


def test_empty_spec_gets_the_crd_defaults() -> None:
    parsed = specs.parse_cluster_spec({}, "demo")
    assert parsed.errors == ()
    assert parsed.spec == specs.ClusterSpec()
    assert parsed.spec.image == "rocketq/rocketq:0.1.0"
    assert parsed.spec.name_servers.replicas == 2
    assert parsed.spec.brokers.groups == 1
    assert parsed.spec.brokers.replicas_per_group == 2
    assert parsed.spec.storage.size == "20Gi"


def test_operator_defaults_equal_what_the_crd_defaults_to() -> None:
    defaulted = crdschema.apply_defaults("RocketMQCluster", {
        "apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster",
        "metadata": {"name": "demo"}, "spec": {},
    })
    assert specs.parse_cluster_spec(defaulted["spec"], "demo").spec == specs.ClusterSpec()


def test_full_spec_is_read_field_by_field() -> None:
    raw = {
        "image": "registry.local/rocketq:1.2",
        "imagePullPolicy": "Always",
        "nameServers": {"replicas": 3, "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}},
        "brokers": {
            "groups": 4, "mode": "DLedger", "replicasPerGroup": 5, "brokerRole": "SYNC_MASTER",
            "flushDiskType": "SYNC_FLUSH", "resources": {"limits": {"cpu": 2, "memory": "4Gi"}},
            "config": {"fileReservedTime": "48"},
        },
        "storage": {"type": "PersistentVolumeClaim", "size": "50Gi", "storageClassName": "fast-ssd"},
        "metrics": {"enabled": False},
        "scheduling": {"nodeSelector": {"pool": "mq"}, "tolerations": [{"key": "mq", "operator": "Exists"}],
                       "affinity": {"nodeAffinity": {}}},
        "acl": {"secretName": "rocketq-acl"},
    }
    parsed = specs.parse_cluster_spec(raw, "demo")
    assert parsed.errors == ()
    spec = parsed.spec
    assert spec is not None
    assert spec.image == "registry.local/rocketq:1.2"
    assert spec.image_pull_policy is PullPolicy.ALWAYS
    assert spec.name_servers == specs.NameServerSpec(3, specs.Resources(requests={"cpu": "100m", "memory": "256Mi"}))
    assert spec.brokers.groups == 4
    assert spec.brokers.mode is BrokerMode.DLEDGER
    assert spec.brokers.replicas_per_group == 5
    assert spec.brokers.broker_role is BrokerRole.SYNC_MASTER
    assert spec.brokers.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert spec.brokers.resources.limits == {"cpu": 2, "memory": "4Gi"}
    assert spec.brokers.config == {"fileReservedTime": "48"}
    assert spec.storage == specs.StorageSpec(StorageType.PERSISTENT_VOLUME_CLAIM, "50Gi", "fast-ssd")
    assert spec.metrics_enabled is False
    assert spec.scheduling.node_selector == {"pool": "mq"}
    assert spec.scheduling.tolerations == ({"key": "mq", "operator": "Exists"},)
    assert spec.acl_secret_name == "rocketq-acl"


@pytest.mark.parametrize(("raw", "expected"), [
    ({"brokers": {"mode": "DLedger", "replicasPerGroup": 2}},
     "spec.brokers.replicasPerGroup: DLedger needs an odd quorum: must be 3 or 5 when mode is DLedger, got 2"),
    ({"brokers": {"mode": "DLedger", "replicasPerGroup": 4}},
     "spec.brokers.replicasPerGroup: DLedger needs an odd quorum: must be 3 or 5 when mode is DLedger, got 4"),
    ({"brokers": {"config": {"brokerName": "x"}}},
     "spec.brokers.config.brokerName: the operator owns brokerClusterName, brokerName, brokerId and brokerRole"),
    ({"brokers": {"config": {"brokerId": "1"}}},
     "spec.brokers.config.brokerId: the operator owns brokerClusterName, brokerName, brokerId and brokerRole"),
    ({"brokers": {"config": {"listenPort": "1234"}}},
     "spec.brokers.config.listenPort: the operator sets this key for the pods it renders (ports, paths, peers)"),
    ({"brokers": {"config": {"rocketmq.acl.plain.file": "/tmp/x.yml"}}},
     "spec.brokers.config.rocketmq.acl.plain.file: the operator sets this key for the pods it renders (ports, paths, "
     "peers)"),
    ({"brokers": {"config": {"fileReservedTime": 48}}},
     "spec.brokers.config.fileReservedTime: must be a string (broker.conf values are text), got 48"),
    ({"brokers": {"config": {"a b": "1"}}},
     "spec.brokers.config.a b: is not a broker.conf key (letters, digits, '_' and '.', starting with a letter)"),
    ({"brokers": {"config": {"x": "line\nbreak"}}},
     "spec.brokers.config.x: must be one line of at most 4096 characters"),
    ({"brokers": {"groups": 0}}, "spec.brokers.groups: must be between 1 and 128, got 0"),
    ({"brokers": {"groups": "2"}}, "spec.brokers.groups: must be an integer, got '2'"),
    ({"brokers": {"groups": True}}, "spec.brokers.groups: must be an integer, got True"),
    ({"brokers": {"mode": "Raft"}}, "spec.brokers.mode: must be one of MasterSlave, DLedger, got 'Raft'"),
    ({"brokers": {"replicasPerGroup": 6}}, "spec.brokers.replicasPerGroup: must be between 1 and 5, got 6"),
    ({"nameServers": {"replicas": 0}}, "spec.nameServers.replicas: must be between 1 and 9, got 0"),
    ({"nameServers": {"resources": {"requests": {"cpu": "lots"}}}},
     "spec.nameServers.resources.requests.cpu: 'lots' is not a Kubernetes quantity"),
    ({"nameServers": {"resources": {"claims": []}}},
     "spec.nameServers.resources.claims: unknown field (only requests and limits are supported)"),
    ({"storage": {"size": "20 GB"}},
     "spec.storage.size: '20 GB' does not match ^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"),
    ({"storage": {"type": "EmptyDir", "storageClassName": "fast"}},
     "spec.storage.storageClassName: applies only to type PersistentVolumeClaim"),
    ({"imagePullPolicy": "Sometimes"},
     "spec.imagePullPolicy: must be one of Always, IfNotPresent, Never, got 'Sometimes'"),
    ({"image": ""}, "spec.image: must be a non-empty string, got ''"),
    ({"metrics": {"enabled": "yes"}}, "spec.metrics.enabled: must be true or false, got 'yes'"),
    ({"scheduling": {"tolerations": {"key": "x"}}},
     "spec.scheduling.tolerations: must be a list, got {'key': 'x'}"),
    ({"scheduling": {"nodeSelector": {"pool": 1}}}, "spec.scheduling.nodeSelector.pool: must be a string, got 1"),
    ({"acl": {}}, "spec.acl.secretName: is required when spec.acl is set"),
    ({"brokers": []}, "spec.brokers: must be an object, got []"),
])
def test_refusals_are_single_readable_lines(raw: dict[str, Any], expected: str) -> None:
    parsed = specs.parse_cluster_spec(raw, "demo")
    assert parsed.spec is None
    assert parsed.errors == (expected,)


def test_all_problems_are_reported_together() -> None:
    parsed = specs.parse_cluster_spec({"brokers": {"groups": 0, "mode": "DLedger", "replicasPerGroup": 2},
                                       "nameServers": {"replicas": 10}}, "demo")
    assert len(parsed.errors) == 3


@pytest.mark.parametrize(("name", "expected"), [
    ("Demo", "metadata.name: 'Demo' must be a DNS-1035 label: it names Services"),
    ("1demo", "metadata.name: '1demo' must be a DNS-1035 label: it names Services"),
    ("a" * 41, "metadata.name: must be at most 40 characters, got 41"),
])
def test_cluster_names_must_fit_child_names(name: str, expected: str) -> None:
    assert specs.parse_cluster_spec({}, name).errors == (expected,)


def test_longest_name_and_most_groups_keep_statefulset_names_within_52() -> None:
    name = "a" * specs.MAX_CLUSTER_NAME
    assert specs.parse_cluster_spec({"brokers": {"groups": specs.MAX_GROUPS}}, name).errors == ()
    assert len(names.broker_group(name, specs.MAX_GROUPS - 1)) <= 52


def test_cluster_meta_reads_identity() -> None:
    meta = specs.cluster_meta({"metadata": {"name": "demo", "namespace": "mq", "uid": "u-1", "generation": 3}})
    assert meta == specs.ClusterMeta("demo", "mq", "u-1", 3)
    assert specs.cluster_meta({"metadata": {"name": "d", "generation": "x"}}).generation is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 2000) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
spec_keys = st.sampled_from(["image", "imagePullPolicy", "nameServers", "brokers", "storage", "metrics",
                             "scheduling", "acl", "groups", "mode", "replicasPerGroup", "config",
                             "replicas", "resources", "requests", "size", "type", "enabled"])
spec_like = st.recursive(
    json_values,
    lambda inner: st.dictionaries(spec_keys, inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(raw=spec_like, name=st.text(max_size=50))
def test_any_json_parses_to_a_spec_or_errors_without_raising(raw: Any, name: str) -> None:
    parsed = specs.parse_cluster_spec(raw, name)
    assert (parsed.spec is None) == bool(parsed.errors)
    assert all(isinstance(line, str) and ": " in line for line in parsed.errors)


def test_dledger_parses_with_an_odd_quorum() -> None:
    parsed = specs.parse_cluster_spec({"brokers": {"mode": "DLedger", "replicasPerGroup": 5}}, "demo")
    assert parsed.errors == () and parsed.spec is not None
    assert parsed.spec.brokers.mode is specs.BrokerMode.DLEDGER and parsed.spec.brokers.replicas_per_group == 5
    for replicas in (1, 2, 4):
        refused = specs.parse_cluster_spec({"brokers": {"mode": "DLedger", "replicasPerGroup": replicas}}, "demo")
        assert refused.errors == (f"spec.brokers.replicasPerGroup: DLedger needs an odd quorum: must be 3 or 5 "
                                  f"when mode is DLedger, got {replicas}",)


def test_preferred_leader_must_name_a_member_of_a_dledger_group() -> None:
    def errors(mode: str, replicas: int, leader: str) -> tuple[str, ...]:
        return specs.parse_cluster_spec({"brokers": {"mode": mode, "replicasPerGroup": replicas,
                                                     "config": {"preferredLeaderId": leader}}}, "demo").errors

    assert errors("DLedger", 3, "n2") == ()
    assert errors("DLedger", 5, "n4") == ()
    assert errors("DLedger", 3, "n3") == ("spec.brokers.config.preferredLeaderId: 'n3' names no member: the "
                                          "members are n0 .. n2 (n<pod ordinal>)",)
    assert errors("DLedger", 3, "0")[0].endswith("names no member: the members are n0 .. n2 (n<pod ordinal>)")
    assert errors("MasterSlave", 3, "n0") == ("spec.brokers.config.preferredLeaderId: applies only to mode DLedger",)
