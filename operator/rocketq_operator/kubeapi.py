"""Kubernetes API access for the reconcilers: five verbs, paths from a kind table, typed errors.

The operator talks to the API server through kopf's own authenticated client
(``kopf._cogs.clients.api``): the same credentials, TLS setup, re-login on 401 and retry on
5xx/429 that kopf uses for its watches, with no second client library to configure. That
module is internal to kopf, so this one is the only place that imports it; everything else
uses the ``KubeApi`` protocol below, which a test may implement differently.

Objects are plain JSON dicts. Writes are merge patches (RFC 7386): a value of ``None``
removes a key and a list replaces the whole list, which is what the apply step relies on.
Label selectors are sent to the server *and* re-checked here: a server that ignores them
(some emulators do) cannot make the operator adopt or delete an object that is not its own.

What it does not do: watches (kopf does those), strategic-merge or server-side apply.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import aiohttp
import kopf
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import errors as kopf_errors

MERGE_PATCH: Final = {"Content-Type": "application/merge-patch+json"}


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
    "PersistentVolumeClaim": Kind("v1", "persistentvolumeclaims"),
    "StatefulSet": Kind("apps/v1", "statefulsets"),
    "PodDisruptionBudget": Kind("policy/v1", "poddisruptionbudgets"),
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


class KopfApi:
    """``KubeApi`` over kopf's authenticated client; usable only inside a running kopf operator."""

    def __init__(self, settings: kopf.OperatorSettings, logger: logging.Logger | None = None) -> None:
        self._settings = settings
        self._logger = logger or logging.getLogger(__name__)

    async def _call(self, method: str, path: str, payload: object | None = None,
                    headers: Mapping[str, str] | None = None) -> Any:
        try:
            response = await kopf_api.request(
                method, path, payload=payload, headers=dict(headers) if headers else None,
                settings=self._settings, logger=self._logger,
            )
            async with response:
                return await response.json()
        except kopf_errors.APINotFoundError as exc:
            raise NotFound(f"{method.upper()} {path}: not found", 404) from exc
        except kopf_errors.APIConflictError as exc:
            raise Conflict(f"{method.upper()} {path}: {exc.message or 'conflict'}", 409) from exc
        except kopf_errors.APIError as exc:
            raise ApiError(f"{method.upper()} {path}: {exc.status} {exc.message or exc}", exc.status) from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(f"{method.upper()} {path}: {exc!r}", 0) from exc

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = await self._call("get", kind_of(kind).path(namespace, name))
        except NotFound:
            return None
        return result

    async def list(self, kind: str, namespace: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        path = kind_of(kind).path(namespace)
        if labels:
            selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
            path += "?" + urllib.parse.urlencode({"labelSelector": selector})
        result = await self._call("get", path)
        items = result.get("items") or [] if isinstance(result, dict) else []
        return [item for item in items if isinstance(item, dict) and matches(item, labels)]

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata", {})
        path = kind_of(str(obj.get("kind"))).path(meta.get("namespace"))
        result: dict[str, Any] = await self._call("post", path, payload=obj)
        return result

    async def patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any],
                    subresource: str | None = None) -> dict[str, Any]:
        path = kind_of(kind).path(namespace, name, subresource)
        result: dict[str, Any] = await self._call("patch", path, payload=patch, headers=MERGE_PATCH)
        return result

    async def delete(self, kind: str, namespace: str, name: str, *, orphan: bool = False) -> bool:
        options = {"apiVersion": "v1", "kind": "DeleteOptions",
                   "propagationPolicy": "Orphan" if orphan else "Background"}
        try:
            await self._call("delete", kind_of(kind).path(namespace, name), payload=options)
        except NotFound:
            return False
        return True
