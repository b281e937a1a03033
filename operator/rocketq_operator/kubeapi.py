"""Kubernetes API access for the reconcilers: five verbs, paths from a kind table, typed errors.

kopf watches and patches the custom resources; the reconcilers' own calls (children, pods,
status of other objects) go through the official ``kubernetes`` client, configured the same
way kopf logs in (in-cluster service account, else kubeconfig). kopf's internal client is
not used: its modules are private and change between releases. Everything else uses the
``KubeApi`` protocol below, which a test may implement differently. A failed call is an
``ApiError`` and the pass is retried by kopf after ``retry_delay``; there is no retry loop
here.

Objects are plain JSON dicts. Writes are merge patches (RFC 7386): a value of ``None``
removes a key and a list replaces the whole list, which is what the apply step relies on.
Label selectors are sent to the server *and* re-checked here: a server that ignores them
(some emulators do) cannot make the operator adopt or delete an object that is not its own.

What it does not do: watches (kopf does those), strategic-merge or server-side apply.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final, Protocol

import kubernetes
import urllib3

MERGE_PATCH: Final = {"Content-Type": "application/merge-patch+json"}
USER_AGENT: Final = "rocketq-operator"
"""How the reconcilers' requests show in the API server's audit log (kopf's own say kopf)."""
REQUEST_TIMEOUT: Final = 30.0
"""Seconds one API call may take before the pass fails and is retried."""


@dataclass(frozen=True)
class Kind:
    api_version: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str | None, name: str | None = None, subresource: str | None = None) -> str:
        root = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        parts = [root]
        if self.namespaced:
            if not namespace:
                raise ValueError(f"{self.plural} are namespaced: a namespace is required")
            parts.append(f"namespaces/{urllib.parse.quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(urllib.parse.quote(name, safe=""))
        if subresource is not None:
            parts.append(subresource)
        return "/".join(parts)


KINDS: Final[Mapping[str, Kind]] = {
    "ConfigMap": Kind("v1", "configmaps"),
    "Service": Kind("v1", "services"),
    "Pod": Kind("v1", "pods"),
    "StatefulSet": Kind("apps/v1", "statefulsets"),
    "PodDisruptionBudget": Kind("policy/v1", "poddisruptionbudgets"),
    "Deployment": Kind("apps/v1", "deployments"),  # spec.proxy, spec.console
    "Secret": Kind("v1", "secrets"),  # read only: spec.proxy.tls (its pair checked, its digest on the pods)
    # spec.analytics: the Spark jobs and what their drivers need
    "ServiceAccount": Kind("v1", "serviceaccounts"),
    "Role": Kind("rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": Kind("rbac.authorization.k8s.io/v1", "rolebindings"),
    "PersistentVolumeClaim": Kind("v1", "persistentvolumeclaims"),
    "ScheduledSparkApplication": Kind("sparkoperator.k8s.io/v1beta2", "scheduledsparkapplications"),
    # spec.console: the web console
    "Ingress": Kind("networking.k8s.io/v1", "ingresses"),
    "RocketMQCluster": Kind("rocketq.io/v1alpha1", "rocketmqclusters"),
    "RocketMQTopic": Kind("rocketq.io/v1alpha1", "rocketmqtopics"),
    "RocketMQConsumerGroup": Kind("rocketq.io/v1alpha1", "rocketmqconsumergroups"),
}


def kind_of(kind: str) -> Kind:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"the operator does not manage objects of kind {kind!r}") from None


class ApiError(Exception):
    """A request the API server refused or could not serve; ``status`` 0 means no answer."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class NotFound(ApiError):
    """404: the object is not there (deleting it is then already done)."""


class Forbidden(ApiError):
    """403: the operator's service account may not do this (its RBAC lacks the grant)."""


class Conflict(ApiError):
    """409: the object exists already or changed under us; the next pass reads it again."""


def matches(obj: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    have = obj.get("metadata", {}).get("labels") or {}
    return all(have.get(key) == value for key, value in labels.items())


class KubeApi(Protocol):
    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def list(self, kind: str, namespace: str, labels: Mapping[str, str]) -> list[dict[str, Any]]: ...

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    async def patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any],
                    subresource: str | None = None) -> dict[str, Any]: ...

    async def delete(self, kind: str, namespace: str, name: str, *, orphan: bool = False) -> bool: ...

    async def close(self) -> None: ...


class ClientApi:
    """``KubeApi`` over the official ``kubernetes`` client (pinned in pyproject).

    The client does what an API client must get right: in-cluster service-account login (and
    the token's rotation), kubeconfig contexts with exec plugins, TLS. Its calls block, so each
    runs in a worker thread; a pass makes a handful of calls, so this costs nothing that
    matters. Paths come from ``Kind`` and bodies are plain dicts: no generated model classes.
    """

    def __init__(self, configuration: kubernetes.client.Configuration) -> None:
        self._client = kubernetes.client.ApiClient(configuration)
        self._client.user_agent = USER_AGENT

    @classmethod
    def from_environment(cls) -> ClientApi:
        """In a pod: its service account; elsewhere: the current kubeconfig context."""
        configuration = kubernetes.client.Configuration()
        try:
            kubernetes.config.load_incluster_config(client_configuration=configuration)
        except kubernetes.config.ConfigException:
            kubernetes.config.load_kube_config(client_configuration=configuration)
        return cls(configuration)

    async def close(self) -> None:
        await asyncio.to_thread(self._client.close)

    def _request(self, method: str, path: str, query: Mapping[str, str] | None, payload: object | None,
                 headers: Mapping[str, str] | None) -> Any:
        what = f"{method} {path}"
        header_params = {"Accept": "application/json", **(headers or {})}
        if payload is not None:
            header_params.setdefault("Content-Type", "application/json")
        try:
            method, url, header_params, body, _ = self._client.param_serialize(
                method, path, query_params=list((query or {}).items()), header_params=header_params,
                body=payload, auth_settings=["BearerToken"])
            response = self._client.call_api(method, url, header_params=header_params, body=body,
                                             _request_timeout=REQUEST_TIMEOUT)
            data = response.read()
        except kubernetes.client.ApiException as exc:
            raise ApiError(f"{what}: {exc.reason}", exc.status or 0) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(f"{what}: {exc!r}", 0) from exc
        if response.status >= 300:
            raise _error(what, response.status, data)
        return json.loads(data) if data else None

    async def _call(self, method: str, path: str, *, query: Mapping[str, str] | None = None,
                    payload: object | None = None, headers: Mapping[str, str] | None = None) -> Any:
        return await asyncio.to_thread(self._request, method, path, query, payload, headers)

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = await self._call("GET", kind_of(kind).path(namespace, name))
        except NotFound:
            return None
        return result

    async def list(self, kind: str, namespace: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        query = {"labelSelector": ",".join(f"{k}={v}" for k, v in sorted(labels.items()))} if labels else None
        result = await self._call("GET", kind_of(kind).path(namespace), query=query)
        items = result.get("items") or [] if isinstance(result, dict) else []
        return [item for item in items if isinstance(item, dict) and matches(item, labels)]

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata", {})
        path = kind_of(str(obj.get("kind"))).path(meta.get("namespace"))
        result: dict[str, Any] = await self._call("POST", path, payload=dict(obj))
        return result

    async def patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any],
                    subresource: str | None = None) -> dict[str, Any]:
        path = kind_of(kind).path(namespace, name, subresource)
        result: dict[str, Any] = await self._call("PATCH", path, payload=dict(patch), headers=MERGE_PATCH)
        return result

    async def delete(self, kind: str, namespace: str, name: str, *, orphan: bool = False) -> bool:
        options = {"apiVersion": "v1", "kind": "DeleteOptions",
                   "propagationPolicy": "Orphan" if orphan else "Background"}
        try:
            await self._call("DELETE", kind_of(kind).path(namespace, name), payload=options)
        except NotFound:
            return False
        return True


def _error(what: str, status: int, data: bytes | None) -> ApiError:
    """The API server's Status message, as a typed error."""
    message = ""
    try:
        decoded = json.loads(data) if data else None
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        message = str(decoded.get("message") or decoded.get("reason") or "")
    text = f"{what}: {status} {message}".rstrip()
    if status == HTTPStatus.NOT_FOUND:
        return NotFound(text, status)
    if status == HTTPStatus.CONFLICT:
        return Conflict(text, status)
    if status == HTTPStatus.FORBIDDEN:
        return Forbidden(text, status)
    return ApiError(text, status)
