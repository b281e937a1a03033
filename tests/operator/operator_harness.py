"""Run the real operator (kopf + handlers) against a kmock Kubernetes emulator.

kmock's ``KubernetesEmulator`` stores objects, serves list/watch/get/create/patch/delete and
API discovery, which is all kopf needs. What a real control plane adds and kmock does not is
filled in here, as narrowly as possible:

- ``ApiServer`` (a KubernetesEmulator subclass) stamps what the API server owns:
  ``uid``, ``creationTimestamp``, ``resourceVersion`` on every write, ``generation`` bumped when
  ``spec`` changes, a name for ``generateName`` (kopf's Events use it), the CRD defaults of
  rocketq.io objects (via tests/k8s/crdschema.py, from the real crds/ files), and HTTP 422
  for a JSON patch whose ``test`` op fails (kmock answers 500, and kopf's finalizer removal
  depends on the 422). With ``admission`` (the default) it also refuses, with 422 as the API
  server does, a rocketq.io object whose create or update fails the CRD's schema or CEL rules
  (crdschema.validate, transition rules against the stored object): so every write the
  operator makes to its own objects passes the rules a real server runs. Tests of the
  operator's own checks (for API servers without CEL) turn it off. A request for a resource
  it does not declare is 404, as for a CRD that is not installed (spark-operator's only exists
  after ``declare_spark_operator``). It does not filter by label selector or garbage-collect by
  owner reference. Its store is indexed by resource and namespace (``indexedstore``): kmock's
  own answers every request by scanning every stored object.
- ``StatefulSetController`` plays the StatefulSet controller and kubelet: it creates pods
  ``<sts>-<ordinal>`` from the template, recreates deleted ones (new uid), removes pods above
  ``replicas`` and pods of deleted StatefulSets, marks pods Ready unless a test says
  otherwise (``unready``) and never recreates ``lost`` pods (a lost node). It also plays the
  brokers registering with the name servers, and DLedger groups electing, in the fake
  BrokerAdmin; ``restarts`` lists every broker pod that went away, with the Raft role it had
  when it went (None outside DLedger), in order. It plays the Deployment controller too, by
  status only (no pods): every Deployment reports its current generation rolled out with all
  replicas ready, except those in ``unready`` (none ready) or ``held`` (the controller has not
  seen the latest spec: a roll in progress); ``rollouts`` lists (Deployment, image) each time a
  Deployment's pod template changed, in order.

``OperatorEnv`` runs ``kopf.operator()`` with a fresh registry, a login handler pointing at
the emulator and the fake BrokerAdmin, and stops everything it started. The operator gets its
own thread and event loop, as ``kopf.testing.KopfRunner`` does: when kopf stops, it cancels
every task created in its loop after it started, which in a shared loop would include the
test's own tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import itertools
import logging
import pathlib
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
import crdschema
import indexedstore
import jsonpatch
import kmock
import kopf
import kubernetes
import yaml
from operator_fakes import FakeBrokerAdmin
from rocketq_operator import handlers, identities, kubeapi, names
from rocketq_operator.rendering import common
from rocketq_operator.runtime import OperatorConfig

CRD_DIR: Final = pathlib.Path(__file__).resolve().parents[2] / "crds"
NAMESPACE: Final = "mq"
TICK: Final = 0.05
WAIT_TIMEOUT: Final = 20.0
STOP_TIMEOUT: Final = 15.0

ROCKETQ_KINDS: Final = {"rocketmqclusters": "RocketMQCluster", "rocketmqtopics": "RocketMQTopic",
                        "rocketmqconsumergroups": "RocketMQConsumerGroup"}
PATHS: Final = {
    "RocketMQCluster": "/apis/rocketq.io/v1alpha1/namespaces/{ns}/rocketmqclusters",
    "RocketMQTopic": "/apis/rocketq.io/v1alpha1/namespaces/{ns}/rocketmqtopics",
    "RocketMQConsumerGroup": "/apis/rocketq.io/v1alpha1/namespaces/{ns}/rocketmqconsumergroups",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Service": "/api/v1/namespaces/{ns}/services",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "Event": "/api/v1/namespaces/{ns}/events",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "ScheduledSparkApplication": "/apis/sparkoperator.k8s.io/v1beta2/namespaces/{ns}/scheduledsparkapplications",
    "Ingress": "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
}
RESOURCES: Final = {
    "RocketMQCluster": "rocketq.io/v1alpha1/rocketmqclusters",
    "RocketMQTopic": "rocketq.io/v1alpha1/rocketmqtopics",
    "RocketMQConsumerGroup": "rocketq.io/v1alpha1/rocketmqconsumergroups",
    "StatefulSet": "apps/v1/statefulsets",
    "Deployment": "apps/v1/deployments",
    "Pod": "v1/pods",
    "ConfigMap": "v1/configmaps",
    "Service": "v1/services",
    "PodDisruptionBudget": "policy/v1/poddisruptionbudgets",
    "Event": "v1/events",
    "ServiceAccount": "v1/serviceaccounts",
    "Role": "rbac.authorization.k8s.io/v1/roles",
    "RoleBinding": "rbac.authorization.k8s.io/v1/rolebindings",
    "PersistentVolumeClaim": "v1/persistentvolumeclaims",
    "ScheduledSparkApplication": "sparkoperator.k8s.io/v1beta2/scheduledsparkapplications",
    "Ingress": "networking.k8s.io/v1/ingresses",
}


def _now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _merge(base: Any, patch: Any) -> Any:
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(base.get(key), value)
    return out


@attrs.define(kw_only=True)
class ApiServer(indexedstore.IndexedLookups, kmock.KubernetesEmulator):
    admission: bool = True
    _versions: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), init=False)

    async def _handle(self, request: kmock.Request) -> Any:
        if (request.resource is not None and request.namespace is not None and self.resources
                and request.resource not in self.resources):
            # kmock stores objects of any namespaced path; a real server has no such resource (no
            # CRD): 404. (Cluster-wide requests are left alone: kopf's discovery and CRD watch.)
            raise kmock.KubernetesError(status=404, reason="NotFound",
                                        message="the server could not find the requested resource")
        data = request.data
        if request.resource is not None and isinstance(data, dict):
            if request.action == kmock.action.CREATE:
                self._stamp_create(request, data)
                self._admit(request, data, None)
            elif request.action == kmock.action.UPDATE and request.name is not None:
                self._stamp_update(request, data)
                current = self._current(request)
                self._admit(request, data if request.method == "PUT" else _merge(current, data), current)
        elif request.resource is not None and isinstance(data, list) and request.action == kmock.action.UPDATE:
            self._stamp_json_patch(request, data)
            current = self._current(request)
            if current is not None:
                self._admit(request, jsonpatch.apply_patch(current, data), current)
        return await super()._handle(request)

    def _current(self, request: kmock.Request) -> dict[str, Any] | None:
        key = (request.resource, request.namespace, request.name)
        if key[0] is None or key not in self.objects or self.objects[key].deleted:
            return None
        return copy.deepcopy(self.objects[key].raw)

    def _admit(self, request: kmock.Request, result: Any, old: dict[str, Any] | None) -> None:
        """422 for a rocketq.io object the CRD's schema or CEL rules refuse, as the server does."""
        kind = ROCKETQ_KINDS.get(str(request.resource.plural)) if request.resource else None
        if not self.admission or kind is None or not isinstance(result, dict):
            return
        errors = crdschema.validate(kind, crdschema.apply_defaults(kind, result), old=old)
        if errors:
            raise kmock.KubernetesError(status=422, reason="Invalid",
                                        message=f"{kind} is invalid: {'; '.join(errors)}")

    def _stamp_json_patch(self, request: kmock.Request, ops: list[Any]) -> None:
        """JSON patches: a failed ``test`` op is 422 (kopf relies on it), and the version moves on."""
        assert request.resource is not None and request.name is not None
        key = (request.resource, request.namespace, request.name)
        current = self.objects[key].raw if key in self.objects and not self.objects[key].deleted else None
        if current is None:
            return
        try:
            jsonpatch.apply_patch(current, [op for op in ops if isinstance(op, dict) and op.get("op") == "test"])
        except jsonpatch.JsonPatchTestFailed as exc:
            raise kmock.KubernetesError(status=422, reason="Invalid", message=str(exc)) from None
        ops.append({"op": "add", "path": "/metadata/resourceVersion", "value": str(next(self._versions))})

    def _stamp_create(self, request: kmock.Request, data: dict[str, Any]) -> None:
        meta = data.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", _now())
        meta["resourceVersion"] = str(next(self._versions))
        meta["generation"] = 1
        kind = ROCKETQ_KINDS.get(str(request.resource.plural)) if request.resource else None
        if kind is not None:
            defaulted = crdschema.apply_defaults(kind, copy.deepcopy(data))
            data.clear()
            data.update(defaulted)

    def _stamp_update(self, request: kmock.Request, data: dict[str, Any]) -> None:
        assert request.resource is not None and request.name is not None
        key = (request.resource, request.namespace, request.name)
        current = self.objects[key].raw if key in self.objects and not self.objects[key].deleted else {}
        meta = data.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(self._versions))
        spec_changed = "spec" in data and _merge(current.get("spec"), data["spec"]) != current.get("spec")
        if request.subresource is None and spec_changed:
            meta["generation"] = int(current.get("metadata", {}).get("generation", 1)) + 1


def declare_spark_operator(server: kmock.KubernetesEmulator) -> None:
    """What installing spark-operator adds: its ScheduledSparkApplication resource (not declared
    by default, as in a cluster without spark-operator)."""
    server.resources[RESOURCES["ScheduledSparkApplication"]] = kmock.ResourceInfo(
        kind="ScheduledSparkApplication", singular="scheduledsparkapplication", namespaced=True,
        shortnames={"scheduledsparkapp"}, subresources={"status"},
        verbs={"get", "list", "watch", "create", "update", "patch", "delete"},
    )


def declare_resources(server: kmock.KubernetesEmulator) -> None:
    server.resources.load_bundled()
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        crd_names = crd["spec"]["names"]
        version = crd["spec"]["versions"][0]
        server.resources[f"{crd['spec']['group']}/{version['name']}/{crd_names['plural']}"] = kmock.ResourceInfo(
            kind=crd_names["kind"], singular=crd_names["singular"], namespaced=True,
            shortnames=set(crd_names.get("shortNames", [])), subresources=set(version.get("subresources", {})),
            verbs={"get", "list", "watch", "create", "update", "patch", "delete"},
        )


class StatefulSetController:
    def __init__(self, server: kmock.KubernetesEmulator, admin: FakeBrokerAdmin) -> None:
        self.server = server
        self.admin = admin
        self.unready: set[str] = set()
        self.lost: set[str] = set()
        self.restarts: list[tuple[str, str | None]] = []
        self.held: set[str] = set()
        self.rollouts: list[tuple[str, str]] = []
        self._templates: dict[tuple[str, str], Any] = {}
        self._roles: dict[str, str] = {}
        self._seen: set[tuple[str, str]] = set()
        self._task: asyncio.Task[None] | None = None

    def live(self, kind: str) -> list[dict[str, Any]]:
        objects = self.server.objects
        resource = kmock.resource(RESOURCES[kind])
        if isinstance(objects, indexedstore.IndexedObjects):  # the emulator's store, by resource
            found = objects.lookup(resource, None, None, any_namespace=True)
        else:
            found = (obj for key, obj in list(objects.items()) if key[0] == resource)
        return [obj.raw for obj in list(found) if not obj.deleted]

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="statefulset controller")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            await self.tick()
            await asyncio.sleep(TICK)

    async def tick(self) -> None:
        statefulsets = {_key(s): s for s in self.live("StatefulSet")}
        pods = {_key(p): p for p in self.live("Pod")}
        owned: dict[tuple[str, str | None], dict[str, dict[str, Any]]] = {}
        for (namespace, name), pod in pods.items():  # one walk, not one per StatefulSet
            owned.setdefault((namespace, _owner(pod)), {})[name] = pod
        for key, statefulset in statefulsets.items():
            await self._converge(statefulset, owned.get(key, {}))
        for (namespace, name), pod in pods.items():
            if (namespace, _owner(pod)) not in statefulsets:
                await self.server.delete(f"{PATHS['Pod'].format(ns=namespace)}/{name}")
        for deployment in self.live("Deployment"):
            await self._deploy(deployment)
        self._register()

    async def _deploy(self, deployment: Mapping[str, Any]) -> None:
        """A Deployment's status as its controller would write it once the roll is done."""
        key, name = _key(deployment), deployment["metadata"]["name"]
        template = deployment["spec"]["template"]
        if self._templates.get(key) != template:
            self._templates[key] = copy.deepcopy(template)
            self.rollouts.append((name, template["spec"]["containers"][0]["image"]))
        if name in self.held:
            return
        replicas = deployment["spec"]["replicas"]
        ready = 0 if name in self.unready else replicas
        status = {"observedGeneration": deployment["metadata"].get("generation", 1), "replicas": replicas,
                  "updatedReplicas": replicas, "readyReplicas": ready, "availableReplicas": ready}
        if {k: deployment.get("status", {}).get(k) for k in status} != status:
            await self.server.patch(f"{PATHS['Deployment'].format(ns=key[0])}/{name}/status", json={"status": status})

    async def _converge(self, statefulset: Mapping[str, Any], pods: Mapping[str, dict[str, Any]]) -> None:
        meta = statefulset["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        replicas = statefulset["spec"]["replicas"]
        path = PATHS["Pod"].format(ns=namespace)
        for ordinal in range(replicas):
            pod_name = f"{name}-{ordinal}"
            if pod_name in self.lost:
                if pod_name in pods:
                    await self.server.delete(f"{path}/{pod_name}")
            elif pod_name not in pods:
                if (namespace, pod_name) in self._seen:
                    self.restarts.append((pod_name, self._roles.pop(pod_name, None)))
                await self.server.post(path, json=_pod(statefulset, pod_name))
            self._seen.add((namespace, pod_name))
        for pod_name, pod in pods.items():
            pod_ordinal = names.pod_ordinal(pod_name)
            if pod_ordinal is None or pod_ordinal >= replicas:
                await self.server.delete(f"{path}/{pod_name}")
                continue
            want = "False" if pod_name in self.unready else "True"
            if _ready(pod) != want:
                await self.server.patch(f"{path}/{pod_name}/status",
                                        json={"status": {"conditions": [{"type": "Ready", "status": want}]}})
        ready = sum(1 for p in pods.values() if _ready(p) == "True" and p["metadata"]["name"] not in self.unready)
        status = {"replicas": len(pods), "readyReplicas": ready}
        if {k: statefulset.get("status", {}).get(k) for k in status} != status:
            await self.server.patch(f"{PATHS['StatefulSet'].format(ns=namespace)}/{name}/status",
                                    json={"status": status})

    def _register(self) -> None:
        """Play the brokers: every serving broker pod registers with its current identity."""
        registered: dict[tuple[str, str], dict[str, dict[int, str]]] = {}
        configmaps = {_key(c): c for c in self.live("ConfigMap")}
        pods = {_key(p): p for p in self.live("Pod")}
        for statefulset in self.live("StatefulSet"):
            labels = statefulset["metadata"].get("labels", {})
            if labels.get(common.LABEL_COMPONENT) != common.COMPONENT_BROKER:
                continue
            cluster, group = labels[common.LABEL_CLUSTER], statefulset["metadata"]["name"]
            namespace = statefulset["metadata"]["namespace"]
            index = names.group_index(cluster, group)
            mode = (statefulset["metadata"].get("annotations") or {}).get(common.ANNOTATION_BROKER_MODE)
            config = configmaps.get((namespace, f"{group}-config"), {}).get("data", {})
            replicas = statefulset["spec"]["replicas"]
            serving = sorted(o for o in range(replicas)
                             if (namespace, f"{group}-{o}") in pods
                             and _ready(pods[namespace, f"{group}-{o}"]) == "True"
                             and f"{group}-{o}" not in self.unready)
            ids: dict[int, str] = {}
            assert index is not None
            if mode == "DLedger":
                addresses = {o: names.broker_address(cluster, namespace, index, o) for o in range(replicas)}
                self.admin.play_raft(group, addresses, frozenset(serving))
                for ordinal, address in addresses.items():
                    state = self.admin.raft.get(address)
                    if state is not None:
                        self._roles[f"{group}-{ordinal}"] = state.role.value
            for ordinal in serving:
                address = names.broker_address(cluster, namespace, index, ordinal)
                if mode == "DLedger":
                    if group in self.admin.leaders:  # without a leader nobody registers as master
                        ids[0 if ordinal == self.admin.leaders[group] else ordinal + 1] = address
                else:
                    master = int(config.get("masterOrdinal", "0"))
                    ids[identities.master_slave_identity(ordinal, master).broker_id] = address
            registered.setdefault((namespace, cluster), {})[group] = ids
        self.admin.registered = registered


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return obj["metadata"]["namespace"], obj["metadata"]["name"]


def _owner(pod: Mapping[str, Any]) -> str | None:
    for ref in pod.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("kind") == "StatefulSet":
            return str(ref.get("name"))
    return None


def _ready(pod: Mapping[str, Any]) -> str:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return "False"


def _pod(statefulset: Mapping[str, Any], name: str) -> dict[str, Any]:
    template = statefulset["spec"]["template"]
    meta = statefulset["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": dict(template["metadata"].get("labels", {})),
            "annotations": dict(template["metadata"].get("annotations", {})),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": meta["name"],
                                 "uid": meta.get("uid", ""), "controller": True}],
        },
        "spec": copy.deepcopy(template["spec"]),
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
    }


def fast_config(**overrides: Any) -> OperatorConfig:
    values: dict[str, Any] = {"reconcile_interval": 0.2, "entity_interval": 0.3, "failover_grace": 10.0,
                              "drain_timeout": 30.0, "retry_delay": 0.2, "admin_timeout": 1.0, "metrics_port": 0,
                              "read_cache_ttl": 0.1}
    values.update(overrides)
    return OperatorConfig(**values)


class OperatorThread:
    """The real operator (kopf and every handler, a fresh registry) in a thread of its own,
    against the API server at a URL, with the given BrokerAdmin."""

    def __init__(self, config: OperatorConfig, admin: FakeBrokerAdmin) -> None:
        self.config = config
        self.admin = admin
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def start(self, url: str) -> None:
        registry = kopf.OperatorRegistry()

        @kopf.on.login(registry=registry)
        def login(**_: Any) -> kopf.ConnectionInfo:
            return kopf.ConnectionInfo(server=url)

        handlers.register(registry, self.config, lambda _config: self.admin,
                          lambda: kubeapi.ClientApi(kubernetes.client.Configuration(host=url)))
        settings = kopf.OperatorSettings()
        settings.networking.error_backoffs = [0.1, 0.2, 0.5]
        settings.watching.reconnect_backoff = 0.1

        def run() -> None:
            try:
                asyncio.run(kopf.operator(registry=registry, settings=settings, clusterwide=True,
                                          stop_flag=self._stop, standalone=True))
            except BaseException as exc:  # reported by close(), in the caller's thread
                self._failure = exc

        self._thread = threading.Thread(target=run, name="operator", daemon=True)
        self._thread.start()

    async def close(self) -> None:
        """Stop the operator; AssertionError if it does not stop or had failed."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            await asyncio.to_thread(thread.join, STOP_TIMEOUT)
            assert not thread.is_alive(), "the operator did not stop"
        if self._failure is not None:
            raise AssertionError("the operator failed") from self._failure


class OperatorEnv:
    """The emulator, the StatefulSet controller, the fake BrokerAdmin and a running operator."""

    def __init__(self, server: ApiServer, config: OperatorConfig | None,
                 admin: FakeBrokerAdmin | None = None) -> None:
        self.server = server
        self.config = config or fast_config()
        self.admin = admin or FakeBrokerAdmin()
        self.sts = StatefulSetController(server, self.admin)
        self.operator = OperatorThread(self.config, self.admin)

    async def start(self) -> None:
        declare_resources(self.server)
        self.sts.start()
        self.operator.start(str(self.server.url))

    async def close(self) -> None:
        try:
            await self.operator.close()
        finally:
            await self.sts.close()

    # -- reading and writing objects --------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str = NAMESPACE) -> dict[str, Any] | None:
        key = (kmock.resource(RESOURCES[kind]), namespace, name)
        if key not in self.server.objects or self.server.objects[key].deleted:
            return None
        return copy.deepcopy(self.server.objects[key].raw)

    def names(self, kind: str) -> set[str]:
        return {obj["metadata"]["name"] for obj in self.sts.live(kind)}

    async def create(self, kind: str, name: str, spec: Mapping[str, Any], *, namespace: str = NAMESPACE,
                     annotations: Mapping[str, str] | None = None) -> None:
        body: dict[str, Any] = {"apiVersion": "rocketq.io/v1alpha1", "kind": kind,
                                "metadata": {"name": name, "namespace": namespace}, "spec": dict(spec)}
        if annotations:
            body["metadata"]["annotations"] = dict(annotations)
        response = await self.server.post(PATHS[kind].format(ns=namespace), json=body)
        assert response.status < 300, await response.text()

    async def patch(self, kind: str, name: str, patch: Mapping[str, Any], *, namespace: str = NAMESPACE) -> None:
        response = await self.server.patch(f"{PATHS[kind].format(ns=namespace)}/{name}", json=dict(patch))
        assert response.status < 300, await response.text()

    async def delete(self, kind: str, name: str, *, namespace: str = NAMESPACE) -> None:
        response = await self.server.delete(f"{PATHS[kind].format(ns=namespace)}/{name}")
        assert response.status < 300, await response.text()

    def operator_requests(self, method: str, kind: str) -> list[str]:
        """Paths the operator (not the emulators) sent ``method`` to, for objects of ``kind``, in order."""
        plural = RESOURCES[kind].rsplit("/", 1)[1]
        return [
            request.url.path for request in self.server
            if request.method == method.upper()
            and request.headers.get("User-Agent", "").startswith(("kopf", kubeapi.USER_AGENT))
            and request.resource is not None and request.resource.plural == plural
        ]

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.sts.live("Event") if e.get("reason") == reason]

    async def wait_for(self, check: Callable[[], Any], what: str, timeout: float = WAIT_TIMEOUT) -> Any:
        """Poll until ``check()`` is truthy (and return it); fail with ``what`` otherwise."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                value = check()
            except (KeyError, IndexError, TypeError):
                value = None
            if value:
                return value
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(TICK)

    def status(self, kind: str, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        obj = self.get(kind, name, namespace)
        return (obj or {}).get("status") or {}

    def condition(self, kind: str, name: str, condition: str, namespace: str = NAMESPACE) -> dict[str, Any] | None:
        for item in self.status(kind, name, namespace).get("conditions") or []:
            if item.get("type") == condition:
                return dict(item)
        return None


def quiet_logs() -> None:
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
