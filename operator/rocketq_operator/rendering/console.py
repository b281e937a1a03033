"""The web console of a cluster with ``spec.console.enabled``: Deployment, Service, Ingress.

The pods run ``rocketq console`` from the cluster's own image (``spec.image``: the rocketq image
carries the console extra, see broker-image/Dockerfile), pointed at the cluster's name-server
Service. Everything the process needs comes from its environment, so the container's command
is the same in every cluster (and the end-to-end test runs exactly this command):

* ``NAMESRV_ADDR``: the headless name-server Service, which resolves to every name server;
* ``ROCKETQ_CONSOLE_USERS``: the users file, key ``usersKey`` of the Secret ``usersSecret``
  mounted read-only (a change of the Secret reaches the file; the console reads it at start,
  so the operator rolls the pods when the Secret's name or key changes, not its content);
* ``ROCKETQ_CONSOLE_HOST``/``ROCKETQ_CONSOLE_PORT``: listen on every address, port 8080;
* ``ROCKETQ_ACCESS_KEY``/``ROCKETQ_SECRET_KEY`` from ``aclCredentialsSecret``, when given: the
  ACL account the console signs its admin requests with (a cluster with ``spec.acl``).

Probes ask ``/healthz``, which needs no login and no name server: a console whose name server
is down still serves pages that say so. Sessions live in a console process's memory, so with
more than one replica the Service keeps a client on one pod (``sessionAffinity: ClientIP``); an
Ingress needs the same from its controller (e.g. ingress-nginx's cookie affinity annotation,
given in ``ingress.annotations``). With ``ingress.tlsSecret`` the Ingress terminates HTTPS and
the console marks its cookie Secure (``--secure-cookies``).
"""

from __future__ import annotations

from typing import Any, Final

from rocketq_operator import names
from rocketq_operator.rendering import common
from rocketq_operator.spec import Cluster

COMPONENT_CONSOLE: Final = "console"
CONTAINER_PORT: Final = 8080
HEALTH_PATH: Final = "/healthz"
USERS_DIR: Final = "/etc/rocketq/console"
USERS_FILE: Final = "users"
"""The file name the Secret's key is mounted as, under ``USERS_DIR``."""
COMMAND: Final = ("rocketq", "console")
SECURE_COOKIES: Final = "--secure-cookies"
ENV_NAMESRV: Final = "NAMESRV_ADDR"
ENV_USERS: Final = "ROCKETQ_CONSOLE_USERS"
ENV_HOST: Final = "ROCKETQ_CONSOLE_HOST"
ENV_PORT: Final = "ROCKETQ_CONSOLE_PORT"
ACL_ENV: Final = (("ROCKETQ_ACCESS_KEY", "accessKey"), ("ROCKETQ_SECRET_KEY", "secretKey"))
"""The console's ACL variables and the keys of ``aclCredentialsSecret`` they come from."""
AFFINITY_TIMEOUT_SECONDS: Final = 8 * 3600
"""How long the Service keeps a client on one pod: the console's idle session lifetime."""
TERMINATION_GRACE_SECONDS: Final = 15
TMP_SIZE: Final = "64Mi"


def container(cluster: Cluster) -> dict[str, Any]:
    spec = cluster.spec
    wanted = spec.console
    command = list(COMMAND)
    if wanted.ingress.enabled and wanted.ingress.tls_secret:
        command.append(SECURE_COOKIES)
    http = {"path": HEALTH_PATH, "port": "http"}
    out: dict[str, Any] = {
        "name": "console",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy.value,
        "command": command,
        "env": [
            {"name": ENV_NAMESRV, "value": names.namesrv_service_address(cluster.meta.name, cluster.meta.namespace)},
            {"name": ENV_USERS, "value": f"{USERS_DIR}/{USERS_FILE}"},
            {"name": ENV_HOST, "value": "0.0.0.0"},
            {"name": ENV_PORT, "value": str(CONTAINER_PORT)},
        ],
        "ports": [{"name": "http", "containerPort": CONTAINER_PORT, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": dict(http), "periodSeconds": 5, "timeoutSeconds": 3, "failureThreshold": 3},
        "livenessProbe": {"httpGet": dict(http), "initialDelaySeconds": 10, "periodSeconds": 10,
                          "timeoutSeconds": 5, "failureThreshold": 6},
        # a read-only root: /tmp is where aiohttp would spool a large uploaded form field
        "volumeMounts": [{"name": "users", "mountPath": USERS_DIR, "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}],
        "securityContext": {**common.container_security_context(), "readOnlyRootFilesystem": True},
    }
    if wanted.acl_credentials_secret:
        out["env"] += [{"name": env, "valueFrom": {"secretKeyRef": {"name": wanted.acl_credentials_secret, "key": key}}}
                       for env, key in ACL_ENV]
    resources = wanted.resources.as_k8s()
    if resources:
        out["resources"] = resources
    return out


def render_deployment(cluster: Cluster) -> dict[str, Any]:
    wanted = cluster.spec.console
    name = names.console(cluster.meta.name)
    selector = common.selector_labels(cluster.meta.name, COMPONENT_CONSOLE)
    template = common.seal_template({
        "metadata": {"labels": common.labels(cluster.meta.name, COMPONENT_CONSOLE)},
        "spec": {
            "securityContext": common.pod_security_context(),
            "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
            "automountServiceAccountToken": False,  # the console talks to RocketMQ, never to Kubernetes
            "containers": [container(cluster)],
            "volumes": [
                {"name": "users", "secret": {"secretName": wanted.users_secret,
                                             "items": [{"key": wanted.users_key, "path": USERS_FILE}]}},
                {"name": "tmp", "emptyDir": {"sizeLimit": TMP_SIZE}},
            ],
            **common.scheduling(cluster.spec.scheduling, selector),
        },
    })
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": common.metadata(cluster, name, COMPONENT_CONSOLE),
        "spec": {
            "replicas": wanted.replicas,
            "selector": {"matchLabels": selector},
            "template": template,
        },
    }


def render_service(cluster: Cluster) -> dict[str, Any]:
    wanted = cluster.spec.console
    spec: dict[str, Any] = {
        "type": wanted.service_type.value,
        "selector": common.selector_labels(cluster.meta.name, COMPONENT_CONSOLE),
        "ports": [{"name": "http", "port": wanted.port, "targetPort": "http", "protocol": "TCP"}],
    }
    if wanted.replicas > 1:
        spec["sessionAffinity"] = "ClientIP"
        spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": AFFINITY_TIMEOUT_SECONDS}}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": common.metadata(cluster, names.console(cluster.meta.name), COMPONENT_CONSOLE),
        "spec": spec,
    }


def render_ingress(cluster: Cluster) -> dict[str, Any]:
    wanted = cluster.spec.console
    ingress = wanted.ingress
    name = names.console(cluster.meta.name)
    rule: dict[str, Any] = {"http": {"paths": [{
        "path": ingress.path,
        "pathType": "Prefix",
        "backend": {"service": {"name": name, "port": {"name": "http"}}},
    }]}}
    if ingress.host:
        rule["host"] = ingress.host
    spec: dict[str, Any] = {"rules": [rule]}
    if ingress.class_name:
        spec["ingressClassName"] = ingress.class_name
    if ingress.tls_secret and ingress.host:
        spec["tls"] = [{"hosts": [ingress.host], "secretName": ingress.tls_secret}]
    metadata = common.metadata(cluster, name, COMPONENT_CONSOLE)
    if ingress.annotations:
        metadata["annotations"] = dict(sorted(ingress.annotations.items()))
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": spec}


def render(cluster: Cluster) -> list[dict[str, Any]]:
    """What an enabled console applies, in order (the Service before the pods it selects)."""
    objects = [render_service(cluster), render_deployment(cluster)]
    if cluster.spec.console.ingress.enabled:
        objects.append(render_ingress(cluster))
    return objects


def removable(cluster: Cluster) -> list[tuple[str, str]]:
    """(kind, name) of what is removed when the console, or only its Ingress, is not wanted."""
    name = names.console(cluster.meta.name)
    if cluster.spec.console.enabled:
        return [] if cluster.spec.console.ingress.enabled else [("Ingress", name)]
    return [("Ingress", name), ("Deployment", name), ("Service", name)]
