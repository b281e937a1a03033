"""The emulator's indexed store answers as kmock's own scan does (tests/operator/indexedstore.py)."""

from __future__ import annotations

import itertools

import kmock
import pytest
from indexedstore import IndexedLookups, IndexedObjects
from kmock._internal import rendering
from operator_harness import PATHS, ApiServer

PODS = kmock.resource("v1/pods")
MAPS = kmock.resource("v1/configmaps")
NODES = kmock.resource("v1/nodes")


def a_store(objects: kmock.KubernetesEmulator.ObjectsArray) -> None:
    for resource, namespace, name in itertools.product((PODS, MAPS), ("a", "b"), ("x", "y")):
        objects[resource, namespace, name] = {"metadata": {"name": name, "namespace": namespace}}
    objects[NODES, None, "n1"] = {"metadata": {"name": "n1"}}
    objects[PODS, "a", "y"].delete()  # soft-deleted: kmock's scan still finds it
    objects[MAPS, "b", "gone"] = {"metadata": {"name": "gone"}}
    del objects[MAPS, "b", "gone"]  # hard-deleted: found by neither
    objects[MAPS, "b", "x"] = {"metadata": {"name": "x", "namespace": "b"}, "data": {"v": "2"}}  # replaced


def found(emulator: kmock.KubernetesEmulator, request: rendering.Request, strict: bool) -> list[tuple[object, ...]]:
    objs = emulator._KubernetesEmulator__get_objs(request, strict=strict)  # type: ignore[attr-defined]
    return sorted((o.last.raw["metadata"].get("namespace"), o.last.raw["metadata"]["name"], o.deleted,
                   str(o.last.raw.get("data"))) for o in objs)


class IndexedEmulator(IndexedLookups, kmock.KubernetesEmulator):
    pass


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("resource", [PODS, MAPS, NODES, kmock.resource("v1/secrets")])
@pytest.mark.parametrize("namespace", [None, "a", "b", "c"])
@pytest.mark.parametrize("name", [None, "x", "y", "n1", "z"])
def test_lookups_match_kmocks_scan(strict: bool, resource: kmock.resource, namespace: str | None,
                                   name: str | None) -> None:
    plain, indexed = kmock.KubernetesEmulator(), IndexedEmulator()
    assert isinstance(indexed.objects, IndexedObjects)
    a_store(plain.objects)
    a_store(indexed.objects)
    request = rendering.Request(resource=resource, namespace=namespace, name=name)
    assert found(indexed, request, strict) == found(plain, request, strict)


def test_resources_include_stored_ones() -> None:
    indexed = IndexedEmulator()
    a_store(indexed.objects)
    assert {PODS, MAPS, NODES} <= set(indexed._get_resources())
    indexed.objects.clear()
    assert list(indexed.objects.lookup(PODS, None, None, any_namespace=True)) == []


async def test_the_harness_api_server_lists_gets_and_deletes_by_namespace() -> None:
    async with ApiServer(admission=False) as server, kmock.Server(server):
        for namespace, name in itertools.product(("a", "b"), ("p1", "p2")):
            body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}}
            assert (await server.post(PATHS["Pod"].format(ns=namespace), json=body)).status < 300
        listed = await (await server.get(PATHS["Pod"].format(ns="a"))).json()
        assert sorted(p["metadata"]["name"] for p in listed["items"]) == ["p1", "p2"]
        everywhere = await (await server.get("/api/v1/pods")).json()
        assert len(everywhere["items"]) == 4
        assert (await server.delete(f"{PATHS['Pod'].format(ns='a')}/p1")).status < 300
        assert (await server.get(f"{PATHS['Pod'].format(ns='a')}/p1")).status == 404
        assert (await server.get(f"{PATHS['Pod'].format(ns='b')}/p1")).status == 200
        listed = await (await server.get(PATHS["Pod"].format(ns="a"))).json()
        assert [p["metadata"]["name"] for p in listed["items"]] == ["p2"]
