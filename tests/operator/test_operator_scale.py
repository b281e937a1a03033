"""Many topic and consumer-group objects of one cluster: what their passes cost, counted (not timed).

A pass over a RocketMQTopic needs the cluster's view (four API reads) and each master's topic
table (one GET_ALL_TOPIC_CONFIG); per object, that made a round of passes quadratic in the
topics of a broker. These tests run the real ``entitysync.sync`` for many objects over an
in-memory API holding a rendered cluster and the recording fake BrokerAdmin, and count calls.
The wall-clock side is bench/operator_scale.py.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import datetime
import json
import logging
from typing import Any

import kopf
import pytest
from operator_fakes import FakeBrokerAdmin
from operator_harness import OperatorEnv
from rocketq_operator import (
    cachedadmin,
    conditions,
    entities,
    entitysync,
    handlers,
    names,
    observing,
    reconciler,
    runtime,
    spec,
    ticking,
)
from rocketq_operator.brokeradmin import BrokerAdminError, TopicConfig
from rocketq_operator.metrics import Metrics
from rocketq_operator.rendering import broker, namesrv
from test_operator_applying import MemoryApi

from rocketq.ttlcache import TtlCache

NAMESPACE = "mq"
GROUPS = 2
TOPICS = 300
TTL = 60.0
"""Longer than any test here: what is counted is sharing, not expiry."""


class CountingApi(MemoryApi):
    def __init__(self) -> None:
        super().__init__()
        self.reads: collections.Counter[str] = collections.Counter()

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads[f"get {kind}"] += 1
        return await super().get(kind, namespace, name)

    async def list(self, kind: str, namespace: str, labels: Any) -> list[dict[str, Any]]:
        self.reads[f"list {kind}"] += 1
        return await super().list(kind, namespace, labels)


def _put(api: MemoryApi, obj: dict[str, Any]) -> None:
    api.objects[(obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj


def _ready_pods(api: MemoryApi, statefulset: dict[str, Any]) -> None:
    template = statefulset["spec"]["template"]["metadata"]
    for ordinal in range(statefulset["spec"]["replicas"]):
        _put(api, {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"{statefulset['metadata']['name']}-{ordinal}", "namespace": NAMESPACE,
                                "uid": f"pod-{ordinal}", "labels": dict(template["labels"]),
                                "annotations": dict(template.get("annotations") or {})},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}]}})


def a_running_cluster(api: MemoryApi) -> None:
    """A MasterSlave cluster ``demo`` with GROUPS seeded groups, every pod ready."""
    body = {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster",
            "metadata": {"name": "demo", "namespace": NAMESPACE, "uid": "demo-uid", "generation": 1},
            "spec": {"brokers": {"groups": GROUPS}}}
    _put(api, body)
    parsed = spec.parse_cluster_spec(body["spec"], "demo")
    assert parsed.spec is not None
    cluster = spec.Cluster(spec.cluster_meta(body), parsed.spec)
    statefulsets = [namesrv.render_namesrv_statefulset(cluster)]
    for index in range(GROUPS):
        configmap = broker.render_broker_configmap(cluster, index, 0)
        configmap["metadata"].setdefault("annotations", {})[observing.METADATA_SYNCED] = "true"
        _put(api, configmap)
        statefulsets.append(broker.render_broker_statefulset(cluster, index))
    for statefulset in statefulsets:
        _put(api, statefulset)
        _ready_pods(api, statefulset)


def topic(number: int) -> dict[str, Any]:
    return {"apiVersion": "rocketq.io/v1alpha1", "kind": entities.TOPIC_KIND,
            "metadata": {"name": f"topic-{number}", "namespace": NAMESPACE, "generation": 1},
            "spec": {"clusterRef": "demo"}}


def make_runtime(api: MemoryApi, admin: FakeBrokerAdmin) -> runtime.Runtime:
    config = runtime.OperatorConfig(metrics_port=0, read_cache_ttl=TTL)
    return runtime.Runtime(api=api, admin=cachedadmin.CachingBrokerAdmin(admin, TTL), config=config,
                           metrics=Metrics())


def context(rt: runtime.Runtime) -> runtime.Context:
    return runtime.Context(runtime=rt, emit=lambda *_: None, logger=logging.getLogger("test"),
                           now=datetime.datetime.now(tz=datetime.UTC))


def masters() -> list[str]:
    return [names.broker_address("demo", NAMESPACE, index, 0) for index in range(GROUPS)]


async def test_a_round_over_many_topics_reads_each_master_and_the_cluster_once() -> None:
    api, admin = CountingApi(), FakeBrokerAdmin()
    a_running_cluster(api)
    bodies = [topic(n) for n in range(TOPICS)]
    for body in bodies:
        _put(api, copy.deepcopy(body))
    rt = make_runtime(api, admin)
    api.reads.clear()

    statuses = await asyncio.gather(*(entitysync.sync(context(rt), entities.TOPIC_KIND, b) for b in bodies))

    assert {s["phase"] for s in statuses} == {"Ready"}
    calls = collections.Counter(method for method, _, _ in admin.calls)
    # One table read per master and one registration read for the whole round, not per topic;
    # the writes are the topics that were missing, one per topic per master.
    assert calls == {"list_topics": GROUPS, "cluster_brokers": 1, "create_or_update_topic": GROUPS * TOPICS}
    assert sum(api.reads.values()) == 4, api.reads  # the cluster, its StatefulSets, ConfigMaps, pods

    admin.calls.clear()
    api.reads.clear()
    for body in bodies:  # the next round (timers): everything is in place, nothing is read again
        await entitysync.sync(context(rt), entities.TOPIC_KIND, body)
    assert admin.calls == [] and not api.reads


async def test_the_cached_tables_follow_the_operators_writes_and_are_dropped_on_failure() -> None:
    admin = FakeBrokerAdmin()
    master = masters()[0]
    admin.topics[master] = {"old": TopicConfig("old")}
    now = [0.0]
    cached = cachedadmin.CachingBrokerAdmin(admin, 10.0, clock=lambda: now[0])

    assert set(await cached.list_topics(master)) == {"old"}
    await cached.create_or_update_topic(master, TopicConfig("new", 4, 4))
    await cached.delete_topic(master, "old")
    assert dict(await cached.list_topics(master)) == {"new": TopicConfig("new", 4, 4)}
    assert admin.called("list_topics") == [(master, None)], "answered from the one read, with the writes"

    admin.down.add(master)
    with pytest.raises(BrokerAdminError):
        await cached.create_or_update_topic(master, TopicConfig("other"))
    admin.down.clear()
    admin.topics[master]["by-hand"] = TopicConfig("by-hand")
    assert "by-hand" in await cached.list_topics(master), "a failed call makes the next one read the broker"
    admin.topics[master]["later"] = TopicConfig("later")
    now[0] = 11.0
    assert "later" in await cached.list_topics(master), "others' changes show once the ttl is over"
    assert len(admin.called("list_topics")) == 3


async def test_concurrent_readers_share_one_read_and_failures_are_not_kept() -> None:
    cache: TtlCache[str, int] = TtlCache(10.0)
    loads = 0
    gate = asyncio.Event()

    async def load() -> int:
        nonlocal loads
        loads += 1
        await gate.wait()
        return loads

    readers = [asyncio.ensure_future(cache.get("k", load)) for _ in range(5)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*readers) == [1] * 5 and loads == 1

    async def fail() -> int:
        raise BrokerAdminError("down")

    with pytest.raises(BrokerAdminError):
        await cache.get("other", fail)
    assert cache.peek("other") is None
    cache.drop("k")
    assert await cache.get("k", load) == 2


def _status(reason: str, message: str) -> dict[str, Any]:
    return {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "reason": reason,
                                                "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}


def test_only_messages_differ() -> None:
    assert conditions.only_messages_differ(_status("BrokersPending", "a"), _status("BrokersPending", "b"))
    assert not conditions.only_messages_differ(_status("BrokersPending", "a"), _status("ClusterNotReady", "a"))
    assert not conditions.only_messages_differ(_status("A", "a"), {**_status("A", "b"), "phase": "Ready"})
    assert not conditions.only_messages_differ(None, _status("A", "a"))


async def test_a_status_whose_message_alone_changes_is_written_at_most_once_per_interval() -> None:
    rt = make_runtime(MemoryApi(), FakeBrokerAdmin())
    memo = {"runtime": rt}
    wanted = [_status("BrokersPending", "group 0 not ready")]

    async def work(_ctx: Any, _body: Any) -> dict[str, Any]:
        return wanted[0]

    async def run(stored: dict[str, Any]) -> dict[str, Any]:
        body = kopf.Body(topic(0) | {"status": stored})
        patch = kopf.Patch()
        await handlers._run(entities.TOPIC_KIND, body, patch, memo, logging.getLogger("test"), work,
                            message_interval=TTL)
        return dict(patch.get("status") or {})

    first = await run(_status("ClusterNotReady", "no cluster"))
    assert first["conditions"][0]["message"] == "group 0 not ready"
    stored = _status("BrokersPending", "group 0 not ready")
    wanted[0] = _status("BrokersPending", "group 1 not ready")
    assert await run(stored) == {}, "a new message only, right after the last write: held back"
    wanted[0] = {**_status("Applied", "present"), "phase": "Ready"}
    assert (await run(stored))["phase"] == "Ready", "a new phase goes out at once"


def test_entity_timers_start_spread_over_the_interval() -> None:
    delays = [handlers.spread(kopf.Body({"metadata": {"uid": f"uid-{n}"}}), 60.0) for n in range(1000)]
    assert all(0 <= d < 60.0 for d in delays)
    assert handlers.spread(kopf.Body({"metadata": {"uid": "uid-1"}}), 60.0) == delays[1], "fixed per object"
    assert len({int(d // 6) for d in delays}) == 10, "every tenth of the interval gets some"


async def test_the_cluster_ticker_runs_passes_side_by_side_up_to_its_limit() -> None:
    active, most, seen = 0, 0, []
    round_done = asyncio.Event()

    async def run_one(namespace: str, name: str) -> None:
        nonlocal active, most
        active += 1
        most = max(most, active)
        await asyncio.sleep(0.01)
        active -= 1
        seen.append(name)
        if name == "c03":
            raise RuntimeError("a broken cluster")
        if len(seen) == 20:
            round_done.set()

    ticker = ticking.Ticker(0.01, run_one)
    for n in range(20):
        ticker.track(NAMESPACE, f"c{n:02d}", present=True)
    ticker.start()
    await asyncio.wait_for(round_done.wait(), 10)
    await ticker.close()
    assert most == ticking.CONCURRENT_PASSES
    assert sorted(seen[:20]) == [f"c{n:02d}" for n in range(20)], "one broken cluster stops no other"


def _reads(api: CountingApi) -> dict[str, int]:
    return dict(api.reads)


async def test_a_steady_cluster_pass_reads_each_child_once_and_its_topics_read_nothing() -> None:
    """A pass over a running cluster where nothing changed: one LIST per observed kind, a GET per
    child it did not list (Services, PDBs), no second observation, no write; and the view it
    published serves a whole round of topic passes, which then read no cluster at all."""
    api, admin = CountingApi(), FakeBrokerAdmin()
    body: dict[str, Any] = {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster",
                            "metadata": {"name": "demo", "namespace": NAMESPACE, "uid": "demo-uid", "generation": 1},
                            "spec": {"brokers": {"groups": GROUPS}}}
    _put(api, body)
    rt = make_runtime(api, admin)
    body["status"] = await reconciler.reconcile(context(rt), body)  # creates every child
    for statefulset in [o for (kind, _, _), o in list(api.objects.items()) if kind == "StatefulSet"]:
        _ready_pods(api, statefulset)
    admin.registered[(NAMESPACE, "demo")] = {names.broker_group("demo", index): {0: master}
                                             for index, master in enumerate(masters())}
    body["status"] = await reconciler.reconcile(context(rt), body)  # seeds the groups
    assert body["status"]["phase"] == "Running"
    api.reads.clear()
    api.writes.clear()

    await reconciler.reconcile(context(rt), body)

    assert api.writes == []
    assert _reads(api) == {"list StatefulSet": 1, "list ConfigMap": 1, "list Pod": 1,
                           "get Service": 1 + GROUPS, "get PodDisruptionBudget": 1 + GROUPS}
    api.reads.clear()
    bodies = [topic(n) for n in range(TOPICS)]
    for topic_body in bodies:
        _put(api, copy.deepcopy(topic_body))
    statuses = await asyncio.gather(*(entitysync.sync(context(rt), entities.TOPIC_KIND, b) for b in bodies))
    assert {s["phase"] for s in statuses} == {"Ready"}
    assert not api.reads, "the topics used the view the cluster pass published"


def _kopf_patches(env: OperatorEnv, name: str) -> list[str]:
    """The bodies of kopf's own PATCHes of RocketMQTopic ``name`` (not the reconcilers')."""
    return [json.dumps(request.data) for request in env.server
            if request.method == "PATCH" and request.headers.get("User-Agent", "").startswith("kopf")
            and request.resource is not None and request.resource.plural == "rocketmqtopics"
            and request.name == name]


async def test_kopf_records_a_new_topic_once_not_again_for_the_operators_annotation(env: OperatorEnv) -> None:
    """kopf stores what it handled (spec and annotations) and rewrites that record when they
    change; the operator's own ``applied-name`` annotation must not count as a change, or every
    new topic and group costs one more PATCH."""
    await env.create("RocketMQCluster", "demo", {"brokers": {"groups": 1}})
    await env.wait_for(lambda: env.status("RocketMQCluster", "demo").get("phase") == "Running", "demo Running")
    await env.create("RocketMQTopic", "orders", {"clusterRef": "demo"})
    await env.wait_for(lambda: env.status("RocketMQTopic", "orders").get("phase") == "Ready", "the topic Ready")
    await env.wait_for(lambda: entitysync.APPLIED_NAME in (env.get("RocketMQTopic", "orders") or {}).get(
        "metadata", {}).get("annotations", {}), "the applied-name annotation")
    await asyncio.sleep(1.0)  # time for kopf to see the annotation's event and react, if it did
    records = [body for body in _kopf_patches(env, "orders") if "last-handled-configuration" in body]
    assert len(records) == 1, records


async def test_topics_waiting_for_their_cluster_write_nothing() -> None:
    """Topics of a cluster whose groups are not seeded yet have nothing to write to: no
    applied-name annotation either (it is recorded just before the first broker write)."""
    api, admin = CountingApi(), FakeBrokerAdmin()
    a_running_cluster(api)
    for (kind, _, _), obj in api.objects.items():
        if kind == "ConfigMap":
            del obj["metadata"]["annotations"][observing.METADATA_SYNCED]
    bodies = [topic(n) for n in range(TOPICS)]
    for body in bodies:
        _put(api, copy.deepcopy(body))
    rt = make_runtime(api, admin)

    statuses = await asyncio.gather(*(entitysync.sync(context(rt), entities.TOPIC_KIND, b) for b in bodies))

    assert {s["phase"] for s in statuses} == {"Pending"}
    assert api.writes == [] and admin.calls == [("cluster_brokers", admin.calls[0][1], "demo")]


async def test_topic_passes_run_at_most_entity_passes_at_once() -> None:
    rt = make_runtime(MemoryApi(), FakeBrokerAdmin())
    active, most = 0, 0

    async def work(_ctx: Any, _body: Any) -> dict[str, Any]:
        nonlocal active, most
        active += 1
        most = max(most, active)
        await asyncio.sleep(0.01)
        active -= 1
        return {}

    await asyncio.gather(*(handlers._run(entities.TOPIC_KIND, kopf.Body(topic(n)), kopf.Patch(), {"runtime": rt},
                                         logging.getLogger("test"), work, slots=rt.entity_slots)
                           for n in range(5 * runtime.ENTITY_PASSES)))
    assert most == runtime.ENTITY_PASSES


async def test_a_pass_from_a_body_older_than_the_annotation_does_not_write_it_again() -> None:
    """kopf may hand a timer the body from before the create pass's annotation write came back."""
    api, admin = CountingApi(), FakeBrokerAdmin()
    a_running_cluster(api)
    stale = topic(0)
    _put(api, copy.deepcopy(stale))
    rt = make_runtime(api, admin)

    for _ in range(3):
        status = await entitysync.sync(context(rt), entities.TOPIC_KIND, stale)
        assert status["phase"] == "Ready"
    assert [write[0] for write in api.writes] == ["patch"]
    renamed = topic(0) | {"spec": {"clusterRef": "demo", "topicName": "other"}}
    assert (await entitysync.sync(context(rt), entities.TOPIC_KIND, renamed))["phase"] == "Failed", \
        "the name written is kept even before the body shows it"


async def test_a_cluster_pass_over_an_invalid_spec_tells_its_topics_without_a_read() -> None:
    api, admin = CountingApi(), FakeBrokerAdmin()
    body: dict[str, Any] = {"apiVersion": "rocketq.io/v1alpha1", "kind": "RocketMQCluster",
                            "metadata": {"name": "demo", "namespace": NAMESPACE, "uid": "demo-uid", "generation": 1},
                            "spec": {"brokers": {"groups": 0}}}
    _put(api, body)
    rt = make_runtime(api, admin)
    assert (await reconciler.reconcile(context(rt), body))["phase"] == "Failed"
    api.reads.clear()

    status = await entitysync.sync(context(rt), entities.TOPIC_KIND, topic(0))

    assert status["phase"] == "Pending" and "invalid spec" in status["conditions"][0]["message"]
    assert not api.reads
