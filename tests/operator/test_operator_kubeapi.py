"""How the operator reaches the API server: the official kubernetes client, and kopf's public
API only (kopf's underscore modules change between releases)."""

from __future__ import annotations

import ast
import pathlib

import kmock
import kubernetes
import pytest
from operator_harness import ApiServer, declare_resources
from rocketq_operator import kubeapi

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "operator" / "rocketq_operator"


def private_kopf_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [name for name in names if name.startswith("kopf.") and any(
            part.startswith("_") for part in name.split(".")[1:])]
    return found


def test_no_module_of_the_operator_imports_kopfs_private_modules() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert modules
    problems = {str(path.relative_to(PACKAGE)): private_kopf_imports(path.read_text()) for path in modules}
    assert {path: names for path, names in problems.items() if names} == {}


def test_the_check_sees_both_import_forms() -> None:
    assert private_kopf_imports("from kopf._cogs.clients import api\nimport kopf._core.x as y\nimport kopf") == [
        "kopf._cogs.clients", "kopf._core.x"]


async def test_the_kubernetes_client_api_maps_answers_to_typed_errors() -> None:
    """``ClientApi`` against the emulated API server: create, conflict, list by label, patch,
    the status subresource, delete and not-found, with the operator's User-Agent."""
    async with ApiServer() as server, kmock.Server(server):
        declare_resources(server)
        api = kubeapi.ClientApi(kubernetes.client.Configuration(host=str(server.url)))
        try:
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "cm", "namespace": "mq", "labels": {"a": "1"}}, "data": {"k": "v"}}
            created = await api.create(body)
            assert created["metadata"]["uid"]
            with pytest.raises(kubeapi.Conflict) as conflict:
                await api.create(body)
            assert conflict.value.status == 409
            assert [o["metadata"]["name"] for o in await api.list("ConfigMap", "mq", {"a": "1"})] == ["cm"]
            assert await api.list("ConfigMap", "mq", {"a": "2"}) == []
            patched = await api.patch("ConfigMap", "mq", "cm", {"data": {"k": None, "n": "1"}})
            assert patched["data"] == {"n": "1"}
            assert await api.get("ConfigMap", "mq", "nothing") is None
            assert await api.delete("ConfigMap", "mq", "cm") is True
            assert await api.delete("ConfigMap", "mq", "cm") is False
        finally:
            await api.close()
        agents = {request.headers.get("User-Agent") for request in server if request.resource is not None}
        assert agents == {kubeapi.USER_AGENT}
