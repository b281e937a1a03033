"""Applying objects (results as values), merge diffs, conditions and status patches, config."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rocketq_operator import applying, conditions, kubeapi, runtime
from rocketq_operator.conditions import Condition, Type
from rocketq_operator.metrics import Metrics, MetricsServer


class MemoryApi:
    """A KubeApi over a dict, applying merge patches the way the API server does."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.writes: list[tuple[str, str, Any]] = []

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        obj = self.objects.get((kind, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    async def list(self, kind: str, namespace: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for (k, ns, _), o in self.objects.items()
                if k == kind and ns == namespace and kubeapi.matches(o, labels)]

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        key = (str(obj["kind"]), obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in self.objects:
            raise kubeapi.Conflict("exists", 409)
        self.writes.append(("create", key[2], copy.deepcopy(obj)))
        self.objects[key] = copy.deepcopy(dict(obj))
        self.objects[key]["metadata"]["uid"] = "server-uid"
        return copy.deepcopy(self.objects[key])

    async def patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any],
                    subresource: str | None = None) -> dict[str, Any]:
        self.writes.append(("patch", name, copy.deepcopy(patch)))
        self.objects[(kind, namespace, name)] = merge(self.objects[(kind, namespace, name)], patch)
        return copy.deepcopy(self.objects[(kind, namespace, name)])

    async def delete(self, kind: str, namespace: str, name: str, *, orphan: bool = False) -> bool:
        self.writes.append(("delete", name, None))
        return self.objects.pop((kind, namespace, name), None) is not None


def merge(base: Any, patch: Any) -> Any:
    if not isinstance(base, dict) or not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(base.get(key), value)
    return out


def configmap(data: dict[str, str], labels: dict[str, str] | None = None, owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cm", "namespace": "mq"}
    if labels is not None:
        meta["labels"] = labels
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster",
                                    "name": owner, "uid": f"uid-{owner}", "controller": True}]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


async def test_apply_creates_then_noops_then_patches_with_removals() -> None:
    api = MemoryApi()
    first = await applying.apply(api, configmap({"a": "1", "b": "2"}, {"x": "y"}))
    assert first.action is applying.Action.CREATED and first.changed
    assert (await applying.apply(api, configmap({"a": "1", "b": "2"}, {"x": "y"}))).action is applying.Action.NOOP

    # Someone else's annotation and the server's uid survive; a dropped key and label go.
    api.objects[("ConfigMap", "mq", "cm")]["metadata"]["annotations"]["other/tool"] = "keep"
    result = await applying.apply(api, configmap({"a": "9"}))
    assert result.action is applying.Action.PATCHED
    live = api.objects[("ConfigMap", "mq", "cm")]
    assert live["data"] == {"a": "9"}
    assert "labels" not in live["metadata"]
    assert live["metadata"]["uid"] == "server-uid"
    assert live["metadata"]["annotations"]["other/tool"] == "keep"
    assert applying.last_applied(live) == configmap({"a": "9"})
    patch = api.writes[-1][2]
    assert patch["data"] == {"a": "9", "b": None}
    assert patch["metadata"]["labels"] is None


async def test_apply_takes_over_its_own_object_without_last_applied() -> None:
    api = MemoryApi()
    api.objects[("ConfigMap", "mq", "cm")] = configmap({"old": "x"}, owner="demo")
    result = await applying.apply(api, configmap({"a": "1"}, owner="demo"))
    assert result.action is applying.Action.PATCHED
    assert api.objects[("ConfigMap", "mq", "cm")]["data"] == {"old": "x", "a": "1"}
    assert (await applying.apply(api, configmap({"a": "1"}, owner="demo"))).action is applying.Action.NOOP


@pytest.mark.parametrize(("holder", "expected"),
                         [(None, "has no owner"), ("other", "belongs to RocketMQCluster 'other'")])
async def test_apply_never_adopts_an_object_it_does_not_own(holder: str | None, expected: str) -> None:
    """Adopting a stranger's object would let the garbage collector delete it with the cluster."""
    api = MemoryApi()
    api.objects[("ConfigMap", "mq", "cm")] = configmap({"theirs": "1"}, owner=holder)
    with pytest.raises(applying.Refused) as refused:
        await applying.apply(api, configmap({"a": "1"}, owner="demo"))
    assert refused.value.reason == applying.NAME_CONFLICT
    assert f"ConfigMap mq/cm already exists and {expected}" in refused.value.message
    assert api.writes == []
    assert (await applying.remove(api, "ConfigMap", "mq", "cm", "uid-demo")).action is applying.Action.NOOP
    assert api.objects[("ConfigMap", "mq", "cm")]["data"] == {"theirs": "1"}


async def test_an_invalid_write_or_an_immutable_change_is_refused_not_raised() -> None:
    class InvalidApi(MemoryApi):
        async def patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any],
                        subresource: str | None = None) -> dict[str, Any]:
            raise kubeapi.ApiError("PATCH /x: 422 spec.selector: field is immutable", 422)

    api = InvalidApi()
    await applying.apply(api, configmap({"a": "1"}, owner="demo"))
    with pytest.raises(applying.Refused) as refused:
        await applying.apply(api, configmap({"a": "2"}, owner="demo"))
    assert refused.value.reason == applying.APPLY_INVALID and "field is immutable" in refused.value.message

    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": configmap({}, owner="demo")["metadata"],
           **statefulset()}
    api.objects[("StatefulSet", "mq", "cm")] = copy.deepcopy(sts)
    with pytest.raises(applying.Refused) as refused:
        await applying.apply(api, {**sts, "spec": {**sts["spec"], "serviceName": "other"}})
    assert refused.value.reason == applying.IMMUTABLE_FIELD_CHANGE and "spec.serviceName" in refused.value.message


async def test_remove_is_deleted_then_noop() -> None:
    api = MemoryApi()
    await applying.apply(api, configmap({}, owner="demo"))
    assert (await applying.remove(api, "ConfigMap", "mq", "cm", "uid-demo")).action is applying.Action.DELETED
    assert (await applying.remove(api, "ConfigMap", "mq", "cm", "uid-demo")).action is applying.Action.NOOP


def test_unparsable_last_applied_is_ignored() -> None:
    assert applying.last_applied({"metadata": {"annotations": {applying.LAST_APPLIED: "{not json"}}}) is None
    assert applying.last_applied({"metadata": {"annotations": {applying.LAST_APPLIED: "[1]"}}}) is None


json_trees = st.recursive(
    st.integers(0, 3) | st.text(max_size=3) | st.lists(st.integers(0, 3), max_size=2),
    lambda inner: st.dictionaries(st.sampled_from("abcde"), inner, max_size=4),
    max_leaves=15,
)


@given(old=st.dictionaries(st.sampled_from("abcde"), json_trees, max_size=4),
       new=st.dictionaries(st.sampled_from("abcde"), json_trees, max_size=4))
def test_merge_diff_turns_old_into_new(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert merge(old, applying.merge_diff(old, new)) == new
    assert applying.merge_diff(new, new) == {}


def statefulset(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"serviceName": "s", "selector": {"matchLabels": {"a": "b"}},
                            "podManagementPolicy": "Parallel", "volumeClaimTemplates": [
                                {"metadata": {"name": "store"}, "spec": {
                                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}}]}
    base.update(spec)
    return {"spec": base}


def test_immutable_statefulset_fields() -> None:
    live = statefulset()
    live["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] = "standard"  # server default
    assert applying.immutable_changes(live, statefulset()) == []
    bigger = statefulset()
    bigger["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "50Gi"
    assert applying.immutable_changes(live, bigger) == ["spec.volumeClaimTemplates"]
    other_class = statefulset()
    other_class["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] = "fast"
    assert applying.immutable_changes(live, other_class) == ["spec.volumeClaimTemplates"]
    assert applying.immutable_changes(live, statefulset(volumeClaimTemplates=[])) == ["spec.volumeClaimTemplates"]
    assert applying.immutable_changes(live, statefulset(serviceName="t")) == ["spec.serviceName"]


def test_conditions_keep_transition_times_until_status_flips() -> None:
    first = conditions.render([Condition(Type.READY, False, "Creating", "m")], None, "T1", 1)
    assert first == [{"type": "Ready", "status": "False", "reason": "Creating", "message": "m",
                      "lastTransitionTime": "T1", "observedGeneration": 1}]
    same = conditions.render([Condition(Type.READY, False, "Scaling", "n")], first, "T2", 2)
    assert same[0]["lastTransitionTime"] == "T1"
    flipped = conditions.render([Condition(Type.READY, True, "Running")], same, "T3", 2)
    assert flipped[0]["lastTransitionTime"] == "T3"
    long = conditions.render([Condition(Type.READY, False, "X", "m" * 5000)], None, "T", None)
    assert len(long[0]["message"]) == conditions.MAX_MESSAGE and "observedGeneration" not in long[0]


def test_status_patch_writes_only_changes_and_leaves_kopf_keys() -> None:
    current = {"phase": "Running", "kopf": {"progress": {}}, "old": 1}
    assert conditions.status_patch(current, {"phase": "Running", "old": 1}) == {}
    assert conditions.status_patch(current, {"phase": "Updating", "old": None}) == {"phase": "Updating", "old": None}
    assert conditions.status_patch(None, {"phase": "Pending", "gone": None}) == {"phase": "Pending"}


def test_operator_config_from_environment() -> None:
    config = runtime.OperatorConfig.from_env({
        "ROCKETQ_OPERATOR_FAILOVER_GRACE": "45", "ROCKETQ_OPERATOR_METRICS_PORT": "0",
        "ROCKETQ_OPERATOR_STANDALONE": "false", "ROCKETQ_OPERATOR_CAUGHT_UP_ENTRIES": "64", "UNRELATED": "x",
        "ROCKETQ_OPERATOR_READ_CACHE_TTL": "2.5",
    })
    assert config.failover_grace == 45.0 and config.metrics_port == 0 and config.standalone is False
    assert config.caught_up_entries == 64 and config.read_cache_ttl == 2.5
    assert runtime.OperatorConfig.from_env({}) == runtime.OperatorConfig()


@pytest.mark.parametrize(("env", "message"), [
    ({"ROCKETQ_OPERATOR_FAILOVER_GRACE": "soon"}, "expected a number of seconds"),
    ({"ROCKETQ_OPERATOR_DRAIN_TIMEOUT": "-1"}, "expected more than 0"),
    ({"ROCKETQ_OPERATOR_METRICS_PORT": "70000"}, "expected 0..65535"),
    ({"ROCKETQ_OPERATOR_CAUGHT_UP_BYTES": "1MB"}, "expected an integer"),
    ({"ROCKETQ_OPERATOR_CAUGHT_UP_ENTRIES": "-1"}, "expected 0.."),
    ({"ROCKETQ_OPERATOR_JSON_LOGS": "yes"}, "expected true or false"),
])
def test_bad_operator_config_is_refused_clearly(env: dict[str, str], message: str) -> None:
    with pytest.raises(runtime.ConfigError, match=message):
        runtime.OperatorConfig.from_env(env)


async def test_metrics_endpoint_serves_metrics_and_health() -> None:
    metrics = Metrics()
    metrics.reconciles.labels(kind="RocketMQCluster", result="ok").inc()
    server = MetricsServer(metrics, "127.0.0.1", 0)
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{server.port}/metrics") as response:
                text = await response.text()
            assert 'rocketq_operator_reconciles_total{kind="RocketMQCluster",result="ok"} 1.0' in text
            async with session.get(f"http://127.0.0.1:{server.port}/healthz") as response:
                assert response.status == 200 and await response.text() == "ok\n"
    finally:
        await server.close()
        await server.close()


def test_kind_paths() -> None:
    assert kubeapi.kind_of("StatefulSet").path("mq", "demo-broker-0") == (
        "/apis/apps/v1/namespaces/mq/statefulsets/demo-broker-0")
    assert kubeapi.kind_of("Pod").path("mq") == "/api/v1/namespaces/mq/pods"
    assert kubeapi.kind_of("RocketMQCluster").path("mq", "demo", "status") == (
        "/apis/rocketq.io/v1alpha1/namespaces/mq/rocketmqclusters/demo/status")
    with pytest.raises(ValueError, match="does not manage"):
        kubeapi.kind_of("Node")
    with pytest.raises(ValueError, match="namespaced"):
        kubeapi.kind_of("Pod").path("")
