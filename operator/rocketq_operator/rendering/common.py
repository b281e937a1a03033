"""What every rendered object shares: labels, owner references, hashes and pod defaults.

Labels follow Kubernetes' recommended ``app.kubernetes.io/*`` set plus ``rocketq.io/cluster``
(every child of a cluster, so the reconciler can list them) and ``rocketq.io/broker-group``
(every child of one broker group). Selectors use a smaller, never-changing subset because a
StatefulSet's selector is immutable.

Hashes are short SHA-256 digests of canonical JSON. ``rocketq.io/config-hash`` on a pod
template changes when broker.conf changes; ``rocketq.io/template-hash`` changes when anything
in the pod template changes, and since pods carry their template's annotations, a pod whose
annotation differs from its StatefulSet's desired template is out of date. That is how the
operator decides which pods to roll under ``updateStrategy: OnDelete`` without relying on
controller revisions.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

from rocketq_operator import names
from rocketq_operator.spec import Cluster, SchedulingSpec

API_GROUP: Final = "rocketq.io"
API_VERSION: Final = "rocketq.io/v1alpha1"
CLUSTER_KIND: Final = "RocketMQCluster"

LABEL_NAME: Final = "app.kubernetes.io/name"
LABEL_INSTANCE: Final = "app.kubernetes.io/instance"
LABEL_COMPONENT: Final = "app.kubernetes.io/component"
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
LABEL_CLUSTER: Final = "rocketq.io/cluster"
LABEL_BROKER_GROUP: Final = "rocketq.io/broker-group"

APP_NAME: Final = "rocketq"
MANAGER: Final = "rocketq-operator"
COMPONENT_NAMESRV: Final = "namesrv"
COMPONENT_BROKER: Final = "broker"
COMPONENT_PROXY: Final = "proxy"

ANNOTATION_CONFIG_HASH: Final = "rocketq.io/config-hash"
ANNOTATION_TEMPLATE_HASH: Final = "rocketq.io/template-hash"
ANNOTATION_BROKER_MODE: Final = "rocketq.io/broker-mode"

RUN_AS_USER: Final = 10001
"""The non-root user the rocketq image runs as (see broker-image/Dockerfile)."""

HASH_LENGTH: Final = 16


def digest(value: Any) -> str:
    """A short, stable digest of a JSON-able value (sorted keys, no whitespace)."""
    raw = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()[:HASH_LENGTH]


def selector_labels(cluster: str, component: str, group: str | None = None) -> dict[str, str]:
    labels = {
        LABEL_NAME: APP_NAME,
        LABEL_INSTANCE: cluster,
        LABEL_COMPONENT: component,
    }
    if group is not None:
        labels[LABEL_BROKER_GROUP] = group
    return labels


def labels(cluster: str, component: str, group: str | None = None) -> dict[str, str]:
    out = selector_labels(cluster, component, group)
    out[LABEL_MANAGED_BY] = MANAGER
    out[LABEL_CLUSTER] = cluster
    return dict(sorted(out.items()))


def owner_reference(cluster: Cluster) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": CLUSTER_KIND,
        "name": cluster.meta.name,
        "uid": cluster.meta.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def metadata(cluster: Cluster, name: str, component: str, group: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": cluster.meta.namespace,
        "labels": labels(cluster.meta.name, component, group),
        "ownerReferences": [owner_reference(cluster)],
    }


def pod_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_USER,
        "fsGroup": RUN_AS_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def health_probes(startup_failures: int) -> dict[str, Any]:
    """Readiness, liveness and startup probes asking the process itself (GET :5557/health)."""
    http = {"path": "/health", "port": "metrics"}
    return {
        "startupProbe": {"httpGet": dict(http), "periodSeconds": 5, "timeoutSeconds": 3,
                         "failureThreshold": startup_failures},
        "readinessProbe": {"httpGet": dict(http), "periodSeconds": 5, "timeoutSeconds": 3,
                           "failureThreshold": 3},
        "livenessProbe": {"httpGet": dict(http), "periodSeconds": 10, "timeoutSeconds": 5,
                          "failureThreshold": 6},
    }


def metrics_annotations(enabled: bool) -> dict[str, str]:
    if not enabled:
        return {}
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(names.METRICS_PORT),
        "prometheus.io/path": "/metrics",
    }


def scheduling(spec: SchedulingSpec, spread: Mapping[str, str]) -> dict[str, Any]:
    """Pod scheduling fields; without an explicit affinity, replicas prefer different nodes."""
    out: dict[str, Any] = {}
    if spec.node_selector:
        out["nodeSelector"] = dict(spec.node_selector)
    if spec.tolerations:
        out["tolerations"] = [dict(t) for t in spec.tolerations]
    if spec.affinity:
        out["affinity"] = copy.deepcopy(dict(spec.affinity))
    else:
        out["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": dict(spread)},
            },
        }]}}
    return out


def seal_template(template: dict[str, Any]) -> dict[str, Any]:
    """Stamp a pod template with the hash of its own content (see the module docstring)."""
    annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
    annotations.pop(ANNOTATION_TEMPLATE_HASH, None)
    annotations[ANNOTATION_TEMPLATE_HASH] = digest(template)
    return template


def template_hash(statefulset: Mapping[str, Any]) -> str | None:
    """The template hash a (rendered or live) StatefulSet asks its pods to carry."""
    template = statefulset.get("spec", {}).get("template", {})
    value = template.get("metadata", {}).get("annotations", {}).get(ANNOTATION_TEMPLATE_HASH)
    return value if isinstance(value, str) else None
