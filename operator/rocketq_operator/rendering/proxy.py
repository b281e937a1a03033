"""The RocketMQ 5 gRPC proxy (``spec.proxy``): a ConfigMap, a Deployment, a Service.

The pods run ``rocketq proxy -c /etc/rocketq/rmq-proxy.json`` (CLUSTER mode) from the cluster's
image (or ``spec.proxy.image``): the proxy keeps no state, so any pod serves any client and a
Deployment is enough. It reaches the brokers through the name servers (``NAMESRV_ADDR``, the
same stable pod list the brokers get) and answers QueryRoute with the address each client
dialled and its own gRPC port, which is why the Service's port is the container's port and
why there is no NodePort type (see ``spec.ProxyServiceType``).

rmq-proxy.json carries ``rocketMQClusterName`` (the cluster's name, as every broker.conf
carries ``brokerClusterName``), ``grpcServerPort``, ``metricsPort`` (the pods' /metrics, scraped
through the pod annotations as brokers are; the Service, possibly a LoadBalancer, does not
expose it) and ``spec.proxy.config`` over the brokers' ``maxMessageSize`` /
``messageDelayLevel``. Its digest is a pod-template annotation, so a config change rolls the
Deployment like an image or resources change does; Kubernetes' RollingUpdate brings a new pod
up (and ready) before it stops an old one.

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

With ``spec.proxy.tls`` enforcing, the Secret's ``tls.crt`` / ``tls.key`` are mounted read-only
at ``TLS_DIR`` and rmq-proxy.json points ``tlsCertPath`` / ``tlsKeyPath`` at them (test mode off);
the pair's digest (``rocketq_operator.proxytls``) is a template annotation, so a renewed certificate rolls the
pods. The kubelet's ``grpc`` probe speaks plaintext only, so a TLS port gets other probes:
startup and readiness are ``tcpSocket`` (the port binds only after the certificate loaded and
the gRPC server started, and a TCP connect costs nothing every 5 s); liveness is an exec of
``rocketq proxy health --tls`` (grpc.health.v1 over TLS to 127.0.0.1), which sees what a TCP
connect cannot: a process that accepts connections but no longer answers. It runs through
``python -m rocketq.cli.proxy``, which loads only the proxy's commands (about 0.15 s of CPU
instead of 0.5 s for the whole ``rocketq`` group), every 20 s.
"""

from __future__ import annotations

import copy
from typing import Any, Final

import orjson

from rocketq_operator import names
from rocketq_operator.rendering import brokerconf, common
from rocketq_operator.spec import Cluster, ProxyTlsSpec

CONFIG_DIR: Final = "/etc/rocketq"
CONFIG_KEY: Final = "rmq-proxy.json"
CONTAINER: Final = "proxy"
PORT_NAME: Final = "grpc"
TOOLS_FILE: Final = brokerconf.TOOLS_FILE
"""The proxy's own account: key ``tools.yml`` of the ACL Secret (RocketMQ's ``conf/tools.yml`` form)."""
ACL_VOLUME: Final = "acl"
PROXY_STARTUP_FAILURES: Final = 30
"""Up to a minute (30 x 2 s) for the interpreter to load and the port to bind."""
PROXY_TERMINATION_GRACE_SECONDS: Final = 30
"""The proxy gives open streams (long polls, telemetry) 5 s when it stops; the rest is slack."""
CERT_KEY: Final = "tls.crt"
KEY_KEY: Final = "tls.key"
"""The keys of a kubernetes.io/tls Secret; the pods mount exactly these two, under the same names."""
TLS_DIR: Final = "/etc/rocketq-tls"
"""Where the TLS Secret is mounted: its own directory, not inside the ConfigMap's mount."""
TLS_VOLUME: Final = "tls"
TLS_FILE_MODE: Final = 0o440
"""Owner and group (the pod's fsGroup, which the proxy's user is in) may read the key; no one else."""
ANNOTATION_TLS_HASH: Final = "rocketq.io/tls-hash"
"""The digest of the TLS Secret's pair on the pod template: a renewed certificate rolls the pods."""
HEALTH_TIMEOUT_S: Final = 5
"""``rocketq proxy health --timeout``; the exec probe's own timeout leaves room for Python to start."""
LIVENESS_EXEC_PERIOD_S: Final = 20
"""How often the TLS liveness probe starts an interpreter (about 0.15 s of CPU each time)."""


def proxy_config(cluster: Cluster) -> dict[str, Any]:
    """rmq-proxy.json's keys: what the operator decides, then the spec's (already checked) values."""
    wanted = cluster.spec.proxy
    return {"rocketMQClusterName": cluster.meta.name, "grpcServerPort": wanted.grpc_port,
            "metricsPort": names.METRICS_PORT, **_acl_config(cluster), **_tls_config(cluster), **wanted.config}


def _acl_config(cluster: Cluster) -> dict[str, Any]:
    if cluster.spec.acl_secret_name is None:
        return {}
    return {"aclEnable": True, brokerconf.ACL_FILE_KEY: brokerconf.ACL_FILE,
            "enableAclRpcHookForClusterMode": True, brokerconf.INNER_CLIENT_FILE_KEY: TOOLS_FILE}


def _tls_config(cluster: Cluster) -> dict[str, Any]:
    """The TLS keys of an enforcing proxy (none when disabled: rocketq proxy's default is plaintext)."""
    if not cluster.spec.proxy.tls.enabled:
        return {}
    return {"tls.server.mode": cluster.spec.proxy.tls.mode.value, "tlsTestModeEnable": False,
            "tlsCertPath": f"{TLS_DIR}/{CERT_KEY}", "tlsKeyPath": f"{TLS_DIR}/{KEY_KEY}"}


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


def health_command(port: int) -> list[str]:
    """The TLS liveness probe: ``rocketq proxy health`` through the proxy commands' own module."""
    return ["python", "-m", "rocketq.cli.proxy", "health", "--port", str(port), "--tls",
            "--timeout", str(HEALTH_TIMEOUT_S)]


def _probes(port: int, tls: bool) -> dict[str, Any]:
    """gRPC health probes on a plaintext port; tcpSocket and an exec health check on a TLS one."""
    check: dict[str, Any] = {"tcpSocket": {"port": port}} if tls else {"grpc": {"port": port}}
    liveness: dict[str, Any] = (
        {"exec": {"command": health_command(port)}, "periodSeconds": LIVENESS_EXEC_PERIOD_S,
         "timeoutSeconds": 2 * HEALTH_TIMEOUT_S, "failureThreshold": 3} if tls
        else {"grpc": {"port": port}, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 6})
    return {
        "startupProbe": {**copy.deepcopy(check), "periodSeconds": 2, "timeoutSeconds": 2,
                         "failureThreshold": PROXY_STARTUP_FAILURES},
        "readinessProbe": {**copy.deepcopy(check), "periodSeconds": 5, "timeoutSeconds": 3, "failureThreshold": 3},
        "livenessProbe": liveness,
    }


def render_proxy_deployment(cluster: Cluster, tls_digest: str | None = None) -> dict[str, Any]:
    """The proxy's Deployment; with TLS, ``tls_digest`` is the Secret's (``proxytls.inspect``)."""
    spec, wanted = cluster.spec, cluster.spec.proxy
    tls_secret = _tls_secret(wanted.tls, tls_digest)
    selector = common.selector_labels(cluster.meta.name, common.COMPONENT_PROXY)
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": wanted.image or spec.image,
        "imagePullPolicy": spec.image_pull_policy.value,
        "command": command(),
        "ports": [{"name": PORT_NAME, "containerPort": wanted.grpc_port, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": names.METRICS_PORT, "protocol": "TCP"}],
        "env": [{"name": "NAMESRV_ADDR", "value": names.namesrv_addresses(
            cluster.meta.name, cluster.meta.namespace, spec.name_servers.replicas)}],
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
        **_probes(wanted.grpc_port, wanted.tls.enabled),
        "securityContext": common.container_security_context(),
    }
    resources = wanted.resources.as_k8s()
    if resources:
        container["resources"] = resources
    template: dict[str, Any] = {
        "metadata": {
            "labels": common.labels(cluster.meta.name, common.COMPONENT_PROXY),
            "annotations": {common.ANNOTATION_CONFIG_HASH: common.digest(render_proxy_config_text(cluster)),
                            **common.metrics_annotations(spec.metrics_enabled)},
        },
        "spec": {
            "securityContext": common.pod_security_context(),
            "terminationGracePeriodSeconds": PROXY_TERMINATION_GRACE_SECONDS,
            "containers": [container],
            "volumes": [{"name": "config", "configMap": {
                "name": names.proxy_config(cluster.meta.name), "items": [{"key": CONFIG_KEY, "path": CONFIG_KEY}]}}],
            **common.scheduling(spec.scheduling, selector),
        },
    }
    if spec.acl_secret_name is not None:
        _mount_acl(template, container, spec.acl_secret_name)
    if tls_secret is not None:
        _mount_tls(template, container, *tls_secret)
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


def _mount_acl(template: dict[str, Any], container: dict[str, Any], secret_name: str) -> None:
    """The cluster's ACL Secret where the brokers have it (plain_acl.yml, and the proxy's tools.yml)."""
    container["volumeMounts"].append({"name": ACL_VOLUME, "mountPath": brokerconf.ACL_DIR, "readOnly": True})
    template["spec"]["volumes"].append({"name": ACL_VOLUME, "secret": {"secretName": secret_name}})


def _tls_secret(tls: ProxyTlsSpec, digest: str | None) -> tuple[str, str] | None:
    """The Secret's name and digest when TLS is on (None when off); without them it cannot be rendered."""
    if not tls.enabled:
        return None
    if tls.secret_name is None or digest is None:
        raise ValueError("a TLS proxy's Deployment needs its Secret's name and digest (proxytls.inspect)")
    return tls.secret_name, digest


def _mount_tls(template: dict[str, Any], container: dict[str, Any], secret_name: str, tls_digest: str) -> None:
    """The Secret's two keys as read-only files under TLS_DIR, and its digest on the template."""
    template["metadata"]["annotations"][ANNOTATION_TLS_HASH] = tls_digest
    container["volumeMounts"].append({"name": TLS_VOLUME, "mountPath": TLS_DIR, "readOnly": True})
    template["spec"]["volumes"].append({"name": TLS_VOLUME, "secret": {
        "secretName": secret_name, "defaultMode": TLS_FILE_MODE,
        "items": [{"key": key, "path": key} for key in (CERT_KEY, KEY_KEY)]}})


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
