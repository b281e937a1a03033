"""The RocketMQ 5 gRPC proxy (``spec.proxy``): a ConfigMap, a Deployment, a Service.

The pods run ``rocketq proxy -c /etc/rocketq/rmq-proxy.json`` (CLUSTER mode) from the cluster's
image (or ``spec.proxy.image``): the proxy keeps no state, so any pod serves any client and a
Deployment is enough. It reaches the brokers through the name servers (``NAMESRV_ADDR``, the
same stable pod list the brokers get) and answers QueryRoute with the address each client
dialled and its own gRPC port, which is why the Service's port is the container's port and
why there is no NodePort type (see ``spec.ProxyServiceType``).

rmq-proxy.json carries ``rocketMQClusterName`` (the cluster's name, as every broker.conf
carries ``brokerClusterName``), ``grpcServerPort`` and ``spec.proxy.config`` over the brokers'
``maxMessageSize`` / ``messageDelayLevel``. Its digest is a pod-template annotation, so a config
change rolls the Deployment like an image or resources change does; Kubernetes' RollingUpdate
brings a new pod up (and ready) before it stops an old one.

With ``spec.acl`` the pods mount the cluster's ACL Secret where the brokers do
(``/etc/rocketq-acl``) and rmq-proxy.json turns ACL on both ways: ``aclEnable`` with the Secret's
``plain_acl.yml`` (clients are checked as the brokers would check them; the file is re-read when
Kubernetes updates the Secret), and ``enableAclRpcHookForClusterMode`` with
``innerClientCredentialsFile`` pointing at the Secret's ``tools.yml`` (RocketMQ's file for the
proxy's and tools' own account: ``accessKey``, ``secretKey``), which signs the proxy's calls to
the brokers. The operator never reads the Secret: a missing ``tools.yml`` stops the proxy at start
(exit 2, the file named) and the pod does not become ready.

Probes are gRPC probes (``grpc.health.v1.Health/Check`` on the gRPC port, Kubernetes 1.24+):
``rocketq proxy`` serves the health service on the same server as MessagingService, so a
probe passes only when that port answers gRPC.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from rocketq_operator import names
from rocketq_operator.rendering import brokerconf, common
from rocketq_operator.spec import Cluster

CONFIG_DIR: Final = "/etc/rocketq"
CONFIG_KEY: Final = "rmq-proxy.json"
CONTAINER: Final = "proxy"
PORT_NAME: Final = "grpc"
TOOLS_FILE: Final = f"{brokerconf.ACL_DIR}/tools.yml"
"""The proxy's own account: key ``tools.yml`` of the ACL Secret (RocketMQ's ``conf/tools.yml`` form)."""
ACL_VOLUME: Final = "acl"
PROXY_STARTUP_FAILURES: Final = 30
"""Up to a minute (30 x 2 s) for the interpreter to load and the port to bind."""
PROXY_TERMINATION_GRACE_SECONDS: Final = 30
"""The proxy gives open streams (long polls, telemetry) 5 s when it stops; the rest is slack."""


def proxy_config(cluster: Cluster) -> dict[str, Any]:
    """rmq-proxy.json's keys: what the operator decides, then the spec's (already checked) values."""
    wanted = cluster.spec.proxy
    return {"rocketMQClusterName": cluster.meta.name, "grpcServerPort": wanted.grpc_port, **_acl_config(cluster),
            **wanted.config}


def _acl_config(cluster: Cluster) -> dict[str, Any]:
    if cluster.spec.acl_secret_name is None:
        return {}
    return {"aclEnable": True, brokerconf.ACL_FILE_KEY: brokerconf.ACL_FILE,
            "enableAclRpcHookForClusterMode": True, "innerClientCredentialsFile": TOOLS_FILE}


def render_proxy_config_text(cluster: Cluster) -> str:
    return orjson.dumps(proxy_config(cluster), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"


def render_proxy_configmap(cluster: Cluster) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": common.metadata(cluster, names.proxy_config(cluster.meta.name), common.COMPONENT_PROXY),
        "data": {CONFIG_KEY: render_proxy_config_text(cluster)},
    }


def command() -> list[str]:
    return ["rocketq", "proxy", "-c", f"{CONFIG_DIR}/{CONFIG_KEY}"]


def _probes(port: int) -> dict[str, Any]:
    grpc = {"port": port}
    return {
        "startupProbe": {"grpc": dict(grpc), "periodSeconds": 2, "timeoutSeconds": 2,
                         "failureThreshold": PROXY_STARTUP_FAILURES},
        "readinessProbe": {"grpc": dict(grpc), "periodSeconds": 5, "timeoutSeconds": 3, "failureThreshold": 3},
        "livenessProbe": {"grpc": dict(grpc), "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 6},
    }


def render_proxy_deployment(cluster: Cluster) -> dict[str, Any]:
    spec, wanted = cluster.spec, cluster.spec.proxy
    selector = common.selector_labels(cluster.meta.name, common.COMPONENT_PROXY)
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": wanted.image or spec.image,
        "imagePullPolicy": spec.image_pull_policy.value,
        "command": command(),
        "ports": [{"name": PORT_NAME, "containerPort": wanted.grpc_port, "protocol": "TCP"}],
        "env": [{"name": "NAMESRV_ADDR", "value": names.namesrv_addresses(
            cluster.meta.name, cluster.meta.namespace, spec.name_servers.replicas)}],
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
        **_probes(wanted.grpc_port),
        "securityContext": common.container_security_context(),
    }
    resources = wanted.resources.as_k8s()
    if resources:
        container["resources"] = resources
    volumes: list[dict[str, Any]] = [{"name": "config", "configMap": {
        "name": names.proxy_config(cluster.meta.name), "items": [{"key": CONFIG_KEY, "path": CONFIG_KEY}]}}]
    if spec.acl_secret_name is not None:
        volumes.append({"name": ACL_VOLUME, "secret": {"secretName": spec.acl_secret_name}})
        container["volumeMounts"].append({"name": ACL_VOLUME, "mountPath": brokerconf.ACL_DIR, "readOnly": True})
    template = {
        "metadata": {
            "labels": common.labels(cluster.meta.name, common.COMPONENT_PROXY),
            "annotations": {common.ANNOTATION_CONFIG_HASH: common.digest(render_proxy_config_text(cluster))},
        },
        "spec": {
            "securityContext": common.pod_security_context(),
            "terminationGracePeriodSeconds": PROXY_TERMINATION_GRACE_SECONDS,
            "containers": [container],
            "volumes": volumes,
            **common.scheduling(spec.scheduling, selector),
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": common.metadata(cluster, names.proxy(cluster.meta.name), common.COMPONENT_PROXY),
        "spec": {
            "replicas": wanted.replicas,
            "selector": {"matchLabels": selector},
            # A new pod serves before an old one stops: clients keep a proxy through every roll.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": template,
        },
    }


def render_proxy_service(cluster: Cluster) -> dict[str, Any]:
    wanted = cluster.spec.proxy
    metadata = common.metadata(cluster, names.proxy(cluster.meta.name), common.COMPONENT_PROXY)
    if wanted.service_annotations:
        metadata["annotations"] = dict(sorted(wanted.service_annotations.items()))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "type": wanted.service_type.value,
            "selector": common.selector_labels(cluster.meta.name, common.COMPONENT_PROXY),
            # port == targetPort: routes carry the dialled host with the proxy's own port
            "ports": [{"name": PORT_NAME, "port": wanted.grpc_port, "targetPort": PORT_NAME, "protocol": "TCP",
                       "appProtocol": "grpc"}],
        },
    }
