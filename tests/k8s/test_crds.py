"""The rocketq.io CRDs: well-formed, structural, and accepting/rejecting the right objects."""

from __future__ import annotations

import copy
import pathlib
import re
from typing import Any

import crdschema
import hypothesis
import pytest
import yaml
from hypothesis import strategies

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "docs" / "examples").glob("*.yaml"))
SHORT_NAMES = {
    "RocketMQCluster": ["rmq", "rmqc"],
    "RocketMQTopic": ["rmqt"],
    "RocketMQConsumerGroup": ["rmqg"],
}
# Keywords a structural schema may carry (apiextensions.k8s.io/v1 JSONSchemaProps, minus $ref,
# which CRDs forbid, and the value-combinators we do not use).
ALLOWED_KEYWORDS = {
    "type", "format", "description", "default", "enum", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties", "required", "properties", "additionalProperties", "items",
    "anyOf", "nullable", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    "x-kubernetes-validations", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
}


def version_of(kind: str) -> dict[str, Any]:
    crd = crdschema.load_crd(kind)
    (version,) = crd["spec"]["versions"]
    return version


def schema_nodes(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = [(path or "<root>", node)]
    for name, sub in node.get("properties", {}).items():
        found += schema_nodes(sub, f"{path}.{name}" if path else name)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            found += schema_nodes(node[key], f"{path}[{key}]")
    return found


def cr(kind: str, name: str = "demo", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "rocketq.io/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}


# ---- the CRD documents themselves -----------------------------------------------------------


@pytest.mark.parametrize("kind", crdschema.KINDS)
def test_crd_names_scope_and_subresources(kind: str) -> None:
    crd = crdschema.load_crd(kind)
    names = crd["spec"]["names"]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{names['plural']}.rocketq.io"
    assert crd["spec"]["group"] == "rocketq.io"
    assert crd["spec"]["scope"] == "Namespaced"
    assert names["shortNames"] == SHORT_NAMES[kind]
    assert names["categories"] == ["rocketq"]
    version = version_of(kind)
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


@pytest.mark.parametrize("kind", crdschema.KINDS)
def test_schema_is_structural(kind: str) -> None:
    root = version_of(kind)["schema"]["openAPIV3Schema"]
    problems = []
    for path, node in schema_nodes(root):
        if unknown := set(node) - ALLOWED_KEYWORDS:
            problems.append(f"{path}: keywords not allowed in a structural schema: {sorted(unknown)}")
        int_or_string = node.get("x-kubernetes-int-or-string")
        if "type" not in node and not int_or_string:
            problems.append(f"{path}: no type")
        if "anyOf" in node and not int_or_string:
            problems.append(f"{path}: anyOf only for int-or-string")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: properties and additionalProperties together")
        if node.get("x-kubernetes-preserve-unknown-fields") and path not in {
            "status", "spec.scheduling.affinity",
        }:
            problems.append(f"{path}: preserve-unknown-fields where it is not needed")
    # metadata at the root may only be declared an object: the API server owns its shape.
    assert root["properties"]["metadata"] == {"type": "object"}
    assert problems == []


@pytest.mark.parametrize("kind", crdschema.KINDS)
def test_defaults_satisfy_their_own_schema(kind: str) -> None:
    """The API server refuses a CRD whose default would not validate against its own node."""
    import jsonschema

    root = crdschema._json_schema(kind)
    for path, node in schema_nodes(root):
        if "default" in node:
            errors = list(jsonschema.Draft7Validator(node).iter_errors(node["default"]))
            assert errors == [], f"{path}: default {node['default']!r} invalid: {errors[0].message}"


@pytest.mark.parametrize("kind", crdschema.KINDS)
def test_defaults_pass_the_api_servers_crd_checks_including_cel(kind: str) -> None:
    """kube-apiserver runs each default, as written, through the CEL rules at and below it."""
    assert crdschema.default_errors(kind) == []


def test_a_rule_reading_a_field_of_an_empty_default_refuses_the_crd() -> None:
    """The CRD as it was: ``brokers: default: {}`` under rules reading ``self.mode``."""
    schema = version_of("RocketMQCluster")["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["brokers"]["default"] = {}
    schema["properties"]["spec"]["properties"]["storage"]["default"] = {}
    errors = crdschema.default_errors("RocketMQCluster", schema)
    # kube-apiserver says "no such key: mode"; cel-python words it its own way.
    assert any(e.startswith("spec.brokers.default:") and "rule evaluation error" in e for e in errors), errors
    assert any(e.startswith("spec.storage.default:") and "'type'" in e for e in errors), errors


@pytest.mark.parametrize("kind", crdschema.KINDS)
def test_object_defaults_are_complete(kind: str) -> None:
    """An object's default already holds its fields' defaults: what the server stores is the same
    whether the object was left out or given as {} (and the CEL check above sees full values)."""
    for path, node in schema_nodes(version_of(kind)["schema"]["openAPIV3Schema"]):
        if isinstance(node.get("default"), dict):
            filled = copy.deepcopy(node["default"])
            crdschema._default_node(node, filled)
            assert filled == node["default"], f"{path}: default {node['default']} lacks {filled}"


@pytest.mark.parametrize("kind", crdschema.KINDS)
def test_printer_columns_point_at_schema_fields(kind: str) -> None:
    root = version_of(kind)["schema"]["openAPIV3Schema"]
    known = {path for path, _ in schema_nodes(root)} | {"metadata.creationTimestamp"}
    columns = version_of(kind)["additionalPrinterColumns"]
    assert [c["name"] for c in columns][-1] == "Age"
    for column in columns:
        assert column["jsonPath"].lstrip(".") in known, column


def test_cel_rules_compile_and_every_rule_has_a_message() -> None:
    for kind in crdschema.KINDS:
        for path, node in schema_nodes(version_of(kind)["schema"]["openAPIV3Schema"]):
            for entry in node.get("x-kubernetes-validations", []):
                assert entry.get("message"), f"{kind} {path}: rule without message"
                crdschema._program(entry["rule"])  # raises on a syntax error


# ---- defaulting -----------------------------------------------------------------------------


def test_defaults_fill_the_whole_cluster_spec() -> None:
    obj = cr("RocketMQCluster")
    spec = crdschema.apply_defaults("RocketMQCluster", obj)["spec"]
    assert obj["spec"] == {}, "apply_defaults must not change its argument"
    assert spec["image"] == "rocketq/rocketq:0.1.0"
    assert spec["nameServers"] == {"replicas": 2}
    assert spec["brokers"] == {
        "groups": 1, "mode": "MasterSlave", "replicasPerGroup": 2,
        "brokerRole": "ASYNC_MASTER", "flushDiskType": "ASYNC_FLUSH",
    }
    assert spec["storage"] == {"type": "PersistentVolumeClaim", "size": "20Gi"}
    assert spec["metrics"] == {"enabled": True}
    assert "acl" not in spec
    assert "analytics" not in spec, "analytics is off unless asked for"


def test_defaults_fill_an_enabled_analytics() -> None:
    spec = crdschema.apply_defaults("RocketMQCluster", cr("RocketMQCluster", analytics={"enabled": True}))["spec"]
    assert spec["analytics"] == {
        "enabled": True, "image": "ghcr.io/rocketq/rocketq-spark:0.1.0", "lagSchedule": "*/5 * * * *",
        "traceSchedule": "0 * * * *", "history": {"size": "5Gi"}, "driver": {"cores": 1, "memory": "512m"},
        "executor": {"instances": 1, "cores": 1, "memory": "512m"},
    }


def test_defaults_fill_an_enabled_proxy() -> None:
    spec = crdschema.apply_defaults("RocketMQCluster", cr("RocketMQCluster", proxy={"enabled": True}))["spec"]
    assert spec["proxy"] == {"enabled": True, "replicas": 2, "grpcPort": 8081, "service": {"type": "ClusterIP"}}


def test_proxy_config_keys_in_the_crd_are_the_ones_the_operator_accepts() -> None:
    """The CEL list of spec.proxy.config keys is rocketq proxy's own keys minus the operator's."""
    from rocketq_operator import spec

    config = version_of("RocketMQCluster")["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "proxy"]["properties"]["config"]
    (rule,) = config["x-kubernetes-validations"]
    listed = re.findall(r"'([A-Za-z.]+)'", rule["rule"])
    assert listed == list(spec.PROXY_CONFIG_KEYS)
    for key in spec.PROXY_CONFIG_KEYS:
        assert key in rule["message"]


def test_a_long_cluster_name_is_fine_without_analytics() -> None:
    for analytics in ({}, {"enabled": False}):
        assert crdschema.validate("RocketMQCluster", cr("RocketMQCluster", "a" * 40, analytics=analytics)) == []


def test_defaults_keep_given_values_and_are_idempotent() -> None:
    obj = cr("RocketMQTopic", clusterRef="demo", perm=4, order=True)
    once = crdschema.apply_defaults("RocketMQTopic", obj)
    assert once["spec"] == {
        "clusterRef": "demo", "perm": 4, "order": True, "readQueueNums": 8, "writeQueueNums": 8,
    }
    assert crdschema.apply_defaults("RocketMQTopic", once) == once


@pytest.mark.parametrize("spec", [
    {"messageType": "FIFO"},
    {"messageType": "MIXED"},
    {"messageType": "DELAY", "order": False},
    {"order": True},
    {"order": True, "messageType": "FIFO"},
    {"messageType": "TRANSACTION", "perm": 4},
])
def test_message_types_consistent_with_order_pass_over_defaulted_objects(spec: dict[str, Any]) -> None:
    obj = crdschema.apply_defaults("RocketMQTopic", cr("RocketMQTopic", clusterRef="demo", **spec))
    assert crdschema.validate("RocketMQTopic", obj) == []
    assert crdschema.validate("RocketMQTopic", obj, old=copy.deepcopy(obj)) == []


def test_message_type_has_no_default_so_an_ordered_topic_stays_valid() -> None:
    """A default NORMAL would make every stored ``order: true`` topic fail the order rule when
    the API server defaults it on read; unset, the operator takes FIFO for it."""
    spec = crdschema.apply_defaults("RocketMQTopic", cr("RocketMQTopic", clusterRef="d", order=True))["spec"]
    assert "messageType" not in spec
    assert crdschema.validate("RocketMQTopic", cr("RocketMQTopic", clusterRef="d", order=True)) == []


def test_message_type_may_change_on_update() -> None:
    """The brokers decide which type changes they take (MIXED needs enableMixedMessageType):
    the CRD does not freeze the field, the operator reports a refusal as a condition."""
    old = cr("RocketMQTopic", clusterRef="a", messageType="NORMAL")
    assert crdschema.validate("RocketMQTopic", cr("RocketMQTopic", clusterRef="a", messageType="MIXED"), old=old) == []


def test_group_orderly_flag_has_no_default_and_takes_both_values() -> None:
    """Unset means "keep what the brokers have"; a default false would reset an admin-set flag."""
    spec = crdschema.apply_defaults("RocketMQConsumerGroup", cr("RocketMQConsumerGroup", clusterRef="d"))["spec"]
    assert "consumeMessageOrderly" not in spec
    for value in (True, False):
        obj = crdschema.apply_defaults("RocketMQConsumerGroup",
                                       cr("RocketMQConsumerGroup", clusterRef="d", consumeMessageOrderly=value))
        assert obj["spec"]["consumeMessageOrderly"] is value
        assert crdschema.validate("RocketMQConsumerGroup", obj) == []


def test_group_defaults() -> None:
    spec = crdschema.apply_defaults("RocketMQConsumerGroup", cr("RocketMQConsumerGroup", clusterRef="d"))["spec"]
    assert spec == {
        "clusterRef": "d", "consumeEnable": True, "consumeBroadcastEnable": False,
        "retryMaxTimes": 16, "retryQueueNums": 1,
    }


# ---- accepted objects -----------------------------------------------------------------------


def example_documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in EXAMPLES:
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            docs.append((f"{path.name}#{index}", doc))
    return docs


def test_there_are_examples_of_every_kind() -> None:
    kinds = {doc["kind"] for _, doc in example_documents()}
    assert kinds == set(crdschema.KINDS)
    modes = {doc["spec"].get("brokers", {}).get("mode") for _, doc in example_documents()}
    assert {"DLedger", None} <= modes and "MasterSlave" in modes


@pytest.mark.parametrize(("where", "doc"), example_documents(), ids=[w for w, _ in example_documents()])
def test_every_example_validates(where: str, doc: dict[str, Any]) -> None:
    assert crdschema.validate(doc["kind"], doc) == []


@pytest.mark.parametrize(("where", "doc"), example_documents(), ids=[w for w, _ in example_documents()])
def test_every_example_can_be_applied_again(where: str, doc: dict[str, Any]) -> None:
    """A re-apply is an update: the transition rules run with oldSelf = the stored object."""
    assert crdschema.validate(doc["kind"], doc, old=copy.deepcopy(doc)) == []


@pytest.mark.parametrize(
    "spec",
    [
        {"brokers": {"mode": "DLedger", "replicasPerGroup": 3}},
        {"brokers": {"mode": "DLedger", "replicasPerGroup": 5}},
        {"brokers": {"mode": "DLedger", "replicasPerGroup": 3, "config": {"preferredLeaderId": "n2"}}},
        {"brokers": {"mode": "DLedger", "replicasPerGroup": 5, "config": {"preferredLeaderId": "n4"}}},
        {"brokers": {"replicasPerGroup": 1}},
        {"brokers": {"replicasPerGroup": 5, "brokerRole": "SYNC_MASTER"}},
        {"storage": {"type": "EmptyDir", "size": "500Mi"}},
        {"brokers": {"resources": {"requests": {"cpu": 2, "memory": "1.5Gi"}}}},
        {"brokers": {"config": {"fileReservedTime": "48", "deleteWhen": "04", "maxMessageSize": "4194304"}}},
        {"analytics": {"enabled": True}},
        {"analytics": {"enabled": True, "lagSchedule": "@every 10m", "traceSchedule": "@hourly",
                       "pushgateway": "pushgateway.monitoring.svc:9091", "history": {"storageClassName": "nfs"},
                       "driver": {"memory": "2g"}, "executor": {"instances": 4, "cores": 2}}},
        {"proxy": {"enabled": True}},
        {"proxy": {"enabled": False}, "acl": {"secretName": "acl"}},
        {"proxy": {"enabled": True}, "acl": {"secretName": "acl"}},
        {"proxy": {"enabled": True, "replicas": 3, "grpcPort": 18081, "image": "rocketq/rocketq:0.2.0",
                   "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}},
                   "service": {"type": "LoadBalancer",
                               "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}},
                   "config": {"maxMessageSize": "1048576", "enableTopicMessageTypeCheck": "false"}}},
    ],
)
def test_valid_cluster_specs(spec: dict[str, Any]) -> None:
    assert crdschema.validate("RocketMQCluster", cr("RocketMQCluster", **spec)) == []


# ---- rejected objects -----------------------------------------------------------------------

INVALID = [
    ("RocketMQCluster", "demo", {"brokers": {"mode": "Raft"}},
     'spec.brokers.mode: Unsupported value: "Raft": supported values: "MasterSlave", "DLedger"'),
    ("RocketMQCluster", "demo", {"brokers": {"groups": 0}},
     "spec.brokers.groups: Invalid value: 0: should be greater than or equal to 1"),
    ("RocketMQCluster", "demo", {"brokers": {"groups": 129}},
     "spec.brokers.groups: Invalid value: 129: should be less than or equal to 128"),
    ("RocketMQCluster", "demo", {"brokers": {"mode": "DLedger", "replicasPerGroup": 4}},
     "replicasPerGroup must be 3 or 5 when mode is DLedger"),
    ("RocketMQCluster", "demo", {"brokers": {"mode": "DLedger"}},  # default 2 peers
     "replicasPerGroup must be 3 or 5 when mode is DLedger"),
    ("RocketMQCluster", "demo", {"brokers": {"mode": "DLedger", "replicasPerGroup": 3,
                                             "config": {"preferredLeaderId": "n3"}}},
     "preferredLeaderId applies only to mode DLedger and must name a member"),
    ("RocketMQCluster", "demo", {"brokers": {"config": {"preferredLeaderId": "n0"}}},
     "preferredLeaderId applies only to mode DLedger and must name a member"),
    ("RocketMQCluster", "demo", {"brokers": {"replicasPerGroup": 6}},
     "spec.brokers.replicasPerGroup: Invalid value: 6: should be less than or equal to 5"),
    ("RocketMQCluster", "demo", {"brokers": {"brokerRole": "SLAVE"}},
     'spec.brokers.brokerRole: Unsupported value: "SLAVE"'),
    ("RocketMQCluster", "demo", {"brokers": {"flushDiskType": "sync"}},
     'spec.brokers.flushDiskType: Unsupported value: "sync"'),
    ("RocketMQCluster", "demo", {"brokers": {"config": {"brokerName": "x"}}},
     "brokers.config must not set brokerClusterName, brokerName, brokerId or brokerRole"),
    ("RocketMQCluster", "demo", {"brokers": {"config": {"fileReservedTime": 48}}},
     'spec.brokers.config.fileReservedTime: Invalid value: 48: must be of type string'),
    ("RocketMQCluster", "demo", {"brokers": {"config": {"listenPort": "10911"}}},
     "brokers.config must not set listenPort, haListenPort, storePathRootDir, namesrvAddr"),
    ("RocketMQCluster", "demo", {"brokers": {"config": {"dLegerPeers": "n0-a:40911"}}},
     "the operator sets them for the pods it renders"),
    ("RocketMQCluster", "demo", {"brokers": {"config": {"deleteWhen": "04\nbrokerId=0"}}},
     "spec.brokers.config.deleteWhen: Invalid value"),
    ("RocketMQCluster", "demo", {"nameServers": {"replicas": 0}},
     "spec.nameServers.replicas: Invalid value: 0: should be greater than or equal to 1"),
    ("RocketMQCluster", "demo", {"nameServers": {"resources": {"limits": {"cpu": "lots"}}}},
     "spec.nameServers.resources.limits.cpu: Invalid value"),
    ("RocketMQCluster", "demo", {"storage": {"size": "20GB"}}, "spec.storage.size: Invalid value"),
    ("RocketMQCluster", "demo", {"storage": {"type": "HostPath"}}, 'spec.storage.type: Unsupported value'),
    ("RocketMQCluster", "demo", {"storage": {"type": "EmptyDir", "storageClassName": "ssd"}},
     "storage.storageClassName applies only to type PersistentVolumeClaim"),
    ("RocketMQCluster", "demo", {"imagePullPolicy": "Sometimes"}, "spec.imagePullPolicy: Unsupported value"),
    ("RocketMQCluster", "demo", {"scheduling": {"tolerations": [{"operator": "Maybe"}]}},
     "spec.scheduling.tolerations[0].operator: Unsupported value"),
    ("RocketMQCluster", "demo", {"acl": {}}, "spec.acl.secretName: Required value"),
    ("RocketMQCluster", "demo", {"replicas": 3}, 'unknown field "spec.replicas"'),
    ("RocketMQCluster", "Demo", {}, "metadata.name must be a DNS-1035 label"),
    ("RocketMQCluster", "a" * 41, {}, "metadata.name must be at most 40 characters"),
    ("RocketMQCluster", "a" * 37, {"analytics": {"enabled": True}},
     "metadata.name must be at most 36 characters when spec.analytics is enabled"),
    ("RocketMQCluster", "demo", {"analytics": {"enabled": True, "lagSchedule": "every five minutes"}},
     "spec.analytics.lagSchedule: Invalid value"),
    ("RocketMQCluster", "demo", {"analytics": {"enabled": True, "driver": {"memory": "512Mi"}}},
     "spec.analytics.driver.memory: Invalid value"),
    ("RocketMQCluster", "demo", {"analytics": {"executor": {"instances": 0}}},
     "spec.analytics.executor.instances: Invalid value: 0"),
    ("RocketMQCluster", "demo", {"analytics": {"pushgateway": "pg :9091"}},
     "spec.analytics.pushgateway: Invalid value"),
    ("RocketMQCluster", "demo", {"proxy": {"enabled": True, "config": {"namesrvAddr": "a:9876"}}},
     "proxy.config may set only channelExpiredTimeout"),
    ("RocketMQCluster", "demo", {"proxy": {"config": {"grpcServerPort": "9000"}}},
     "proxy.config may set only channelExpiredTimeout"),
    ("RocketMQCluster", "demo", {"proxy": {"service": {"type": "NodePort"}}},
     'spec.proxy.service.type: Unsupported value: "NodePort"'),
    ("RocketMQCluster", "demo", {"proxy": {"replicas": 0}},
     "spec.proxy.replicas: Invalid value: 0: should be greater than or equal to 1"),
    ("RocketMQCluster", "demo", {"proxy": {"grpcPort": 70000}},
     "spec.proxy.grpcPort: Invalid value: 70000"),
    ("RocketMQCluster", "demo", {"proxy": {"config": {"maxMessageSize": 1024}}},
     "spec.proxy.config.maxMessageSize: Invalid value: 1024: must be of type string"),
    ("RocketMQCluster", "demo", {"proxy": {"tls": {"mode": "enforcing"}}},
     "spec.proxy.tls.mode enforcing needs spec.proxy.tls.secretName"),
    ("RocketMQCluster", "demo", {"proxy": {"tls": {"secretName": "proxy-tls", "mode": "permissive"}}},
     'spec.proxy.tls.mode: Unsupported value: "permissive"'),
    ("RocketMQCluster", "demo", {"console": {"enabled": True}},
     "spec.console.usersSecret is required when the console is enabled"),
    ("RocketMQCluster", "demo", {"console": {"ingress": {"tlsSecret": "tls"}}},
     "spec.console.ingress.tlsSecret needs spec.console.ingress.host"),
    ("RocketMQCluster", "demo", {"console": {"service": {"type": "ExternalName"}}},
     "spec.console.service.type: Unsupported value"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "perm": 5},
     "spec.perm: Unsupported value: 5: supported values: 2, 4, 6"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "readQueueNums": 0},
     "spec.readQueueNums: Invalid value: 0: should be greater than or equal to 1"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "writeQueueNums": 1025},
     "spec.writeQueueNums: Invalid value: 1025: should be less than or equal to 1024"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "topicName": "orders.created"},
     "spec.topicName: Invalid value: \"orders.created\": should match '^[%|a-zA-Z0-9_-]+$'"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "topicName": "x" * 128},
     "spec.topicName: Invalid value"),
    ("RocketMQTopic", "orders.created", {"clusterRef": "demo"}, "set spec.topicName"),
    ("RocketMQTopic", "a" * 128, {"clusterRef": "demo"}, "metadata.name is longer than 127 characters"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "topicName": "RMQ_SYS_TRACE_TOPIC"},
     "this is a RocketMQ system topic name"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "topicName": "TBW102"}, "this is a RocketMQ system topic name"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "topicName": "%DLQ%billing"}, "are made by the brokers"),
    ("RocketMQTopic", "t", {}, "spec.clusterRef: Required value"),
    ("RocketMQTopic", "t", {"clusterRef": "Demo_1"}, "spec.clusterRef: Invalid value"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "order": "yes"},
     'spec.order: Invalid value: "yes": must be of type boolean'),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "messageType": "LITE"},
     'spec.messageType: Unsupported value: "LITE": supported values: "NORMAL", "FIFO", "DELAY", "TRANSACTION", '
     '"MIXED"'),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "order": True, "messageType": "NORMAL"},
     "an ordered topic (spec.order: true) is FIFO: set spec.messageType to FIFO or leave it unset"),
    ("RocketMQTopic", "t", {"clusterRef": "demo", "order": True, "messageType": "MIXED"},
     "an ordered topic (spec.order: true) is FIFO"),
    ("RocketMQConsumerGroup", "g", {"clusterRef": "demo", "consumeMessageOrderly": "yes"},
     'spec.consumeMessageOrderly: Invalid value: "yes": must be of type boolean'),
    ("RocketMQConsumerGroup", "g", {"clusterRef": "demo", "retryMaxTimes": -1},
     "spec.retryMaxTimes: Invalid value: -1: should be greater than or equal to 0"),
    ("RocketMQConsumerGroup", "g", {"clusterRef": "demo", "retryQueueNums": 0},
     "spec.retryQueueNums: Invalid value: 0"),
    ("RocketMQConsumerGroup", "g", {"clusterRef": "demo", "groupName": "a b"}, "spec.groupName: Invalid value"),
    ("RocketMQConsumerGroup", "g", {"clusterRef": "demo", "groupName": "x" * 256}, "spec.groupName: Invalid value"),
    ("RocketMQConsumerGroup", "billing.v2", {"clusterRef": "demo"}, "set spec.groupName"),
    ("RocketMQConsumerGroup", "g", {"clusterRef": "demo", "groupName": "%RETRY%x"}, "cannot start with %RETRY%"),
]


@pytest.mark.parametrize(("kind", "name", "spec", "expected"), INVALID, ids=[e for *_, e in INVALID])
def test_invalid_objects_are_rejected_with_the_expected_message(
    kind: str, name: str, spec: dict[str, Any], expected: str,
) -> None:
    errors = crdschema.validate(kind, cr(kind, name, **spec))
    assert any(expected in error for error in errors), errors


def test_wrong_api_version_kind_or_missing_name() -> None:
    obj = cr("RocketMQTopic", clusterRef="demo")
    assert crdschema.validate("RocketMQTopic", {**obj, "apiVersion": "rocketq.io/v1"}) == [
        'apiVersion: Invalid value: "rocketq.io/v1": must be "rocketq.io/v1alpha1"'
    ]
    assert crdschema.validate("RocketMQCluster", obj)[0].startswith("kind: Invalid value")
    assert crdschema.validate("RocketMQTopic", {**obj, "metadata": {}}) == ["metadata.name: Required value"]
    with pytest.raises(crdschema.UnknownKindError):
        crdschema.validate("KafkaTopic", obj)


# ---- updates (transition rules) -------------------------------------------------------------

UPDATES = [
    ("RocketMQCluster", {"brokers": {"mode": "MasterSlave"}}, {"brokers": {"mode": "DLedger", "replicasPerGroup": 3}},
     "brokers.mode is immutable"),
    ("RocketMQCluster", {}, {"storage": {"type": "EmptyDir"}}, "storage.type is immutable"),
    ("RocketMQCluster", {"brokers": {"mode": "DLedger", "replicasPerGroup": 3}},
     {"brokers": {"mode": "DLedger", "replicasPerGroup": 5}}, "replicasPerGroup of a DLedger cluster is immutable"),
    ("RocketMQTopic", {"clusterRef": "a"}, {"clusterRef": "b"}, "spec.clusterRef is immutable"),
    ("RocketMQTopic", {"clusterRef": "a"}, {"clusterRef": "a", "topicName": "T1"}, "spec.topicName is immutable"),
    ("RocketMQTopic", {"clusterRef": "a", "topicName": "T1"}, {"clusterRef": "a", "topicName": "T2"},
     "spec.topicName is immutable"),
    ("RocketMQConsumerGroup", {"clusterRef": "a", "groupName": "G"}, {"clusterRef": "a"},
     "spec.groupName is immutable"),
]


@pytest.mark.parametrize(("kind", "before", "after", "expected"), UPDATES, ids=[u[-1] for u in UPDATES])
def test_immutable_fields_refuse_changes(
    kind: str, before: dict[str, Any], after: dict[str, Any], expected: str
) -> None:
    old, new = cr(kind, **before), cr(kind, **after)
    assert crdschema.validate(kind, new) == [], "the new object alone is valid"
    errors = crdschema.validate(kind, new, old=old)
    assert any(expected in error for error in errors), errors


def test_ordinary_updates_pass_transition_rules() -> None:
    old = cr("RocketMQCluster", brokers={"groups": 2})
    new = cr("RocketMQCluster", brokers={"groups": 4, "replicasPerGroup": 3}, image="rocketq/rocketq:0.2.0")
    assert crdschema.validate("RocketMQCluster", new, old=old) == []
    topic = cr("RocketMQTopic", clusterRef="a", topicName="T", readQueueNums=16)
    assert crdschema.validate("RocketMQTopic", topic, old=copy.deepcopy(topic)) == []


# ---- topic and group names, as properties ---------------------------------------------------

NAME_CHARS = "%|abcXYZ019_-"
NAME_RULE = re.compile(r"[%|a-zA-Z0-9_-]+")
SYSTEM = re.compile(r"^(%RETRY%|%DLQ%|RMQ_SYS_)|^(TBW102|SCHEDULE_TOPIC_XXXX|SELF_TEST_TOPIC|OFFSET_MOVED_EVENT)$")


@hypothesis.given(strategies.text(alphabet=NAME_CHARS + ".: /é\n", min_size=1, max_size=140))
@hypothesis.settings(max_examples=60, deadline=None)
def test_topic_name_accepted_exactly_when_rocketmq_allows_it(name: str) -> None:
    errors = crdschema.validate("RocketMQTopic", cr("RocketMQTopic", "t", clusterRef="d", topicName=name))
    allowed = bool(NAME_RULE.fullmatch(name)) and len(name) <= 127 and not SYSTEM.search(name)
    assert (errors == []) == allowed, (name, errors)


def test_every_cel_rule_is_seen_refusing_something() -> None:
    """Each rule holds on the examples and defaults (above) and fails on at least one case of
    INVALID or UPDATES here, so no rule is dead, inverted or unreachable."""
    produced: list[str] = []
    for kind, name, spec, _expected in INVALID:
        produced += crdschema.validate(kind, cr(kind, name, **spec))
    for kind, before, after, _expected in UPDATES:
        produced += crdschema.validate(kind, cr(kind, **after), old=cr(kind, **before))
    unseen = []
    for kind in crdschema.KINDS:
        for path, node in schema_nodes(version_of(kind)["schema"]["openAPIV3Schema"]):
            for entry in node.get("x-kubernetes-validations", []):
                if not any(entry["message"] in error for error in produced):
                    unseen.append(f"{kind} {path}: {entry['rule']}")
    assert unseen == []
