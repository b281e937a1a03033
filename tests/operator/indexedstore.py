"""kmock's object store, indexed by resource and namespace, so a request costs what it reads.

kmock (0.8) keeps every object in one dict keyed by (resource, namespace, name) and answers
every GET, LIST, create, patch and delete by walking that whole dict
(``KubernetesEmulator.__get_objs``: a linear scan per request), and a LIST also walks it once
more to learn which resources exist (``_get_resources``). With a few thousand objects the
emulator's cost per request grows with the store, not with the request: at 100 clusters and
7 000 topic and group objects it used a whole core, eight times the operator it was serving,
and the bench measured the emulator instead of the operator.

``IndexedObjects`` is kmock's ``ObjectsArray`` plus an index (resource, namespace) -> names,
kept by the same ``__setitem__``/``__delitem__``/``clear`` through which kmock adds and
removes keys (patches and soft deletions change an ``Object`` in place, not the keys).
``IndexedLookups`` is the mixin for a ``KubernetesEmulator`` that installs it and answers
kmock's two scans from it: a GET by name is a dict lookup, a namespaced LIST touches that
namespace's objects of that resource. Answers are the same objects kmock's scan would find;
only their order across namespaces differs (grouped by namespace), which no client relies on.

It reaches into kmock's private lookup (the name-mangled ``_KubernetesEmulator__get_objs``), so
it is tied to the pinned kmock version: ``tests/operator/test_operator_harness.py`` checks the
indexed answers against kmock's own scan, and fails if that lookup goes away.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import kmock
from kmock._internal import k8s_dicts, k8s_views, references, rendering

Place = tuple[references.resource, str | None]
"""(resource, namespace): namespace None for cluster-wide objects."""


@attrs.frozen(eq=False, order=False)
class IndexedObjects(k8s_views.ObjectsArray):
    """``ObjectsArray`` that also knows the names stored per (resource, namespace)."""

    _places: dict[Place, dict[str, None]] = attrs.field(factory=dict, init=False)
    """Insertion-ordered name sets (dicts with None values), as the store orders its keys."""

    def __setitem__(self, key: Any, value: Any, /) -> None:
        super().__setitem__(key, value)
        if len(key) == 3:  # a whole object (a 4-item key edits the history of a stored one)
            resource, namespace, name = key
            self._places.setdefault((k8s_views._parse_resource(resource), namespace), {})[name] = None

    def __delitem__(self, key: Any, /) -> None:
        super().__delitem__(key)
        if len(key) == 3:
            resource, namespace, name = key
            self._places.get((k8s_views._parse_resource(resource), namespace), {}).pop(name, None)

    def clear(self) -> None:
        super().clear()
        self._places.clear()

    def resources(self) -> set[references.resource]:
        return {resource for resource, _ in self._places}

    def lookup(self, resource: references.resource | None, namespace: str | None, name: str | None, *,
               any_namespace: bool) -> Iterator[k8s_dicts.Object]:
        """Stored objects (deleted ones too, as kmock's scan) of ``resource`` in ``namespace`` (every
        namespace with ``any_namespace``), named ``name`` unless it is None."""
        if resource is None:
            return
        places = [place for place in self._places if place[0] == resource] if any_namespace else [(resource, namespace)]
        for place in places:
            stored = self._places.get(place, {})
            for item in ((name,) if name is not None else tuple(stored)):
                if item in stored:
                    yield self[place[0], place[1], item]


class IndexedLookups:
    """Mixin for a ``kmock.KubernetesEmulator`` subclass (put it first among the bases)."""

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()  # type: ignore[misc]
        # kmock's store is a field without an init argument: swap it before any request.
        self._objects = IndexedObjects()

    @property
    def _store(self) -> IndexedObjects:
        store = self._objects  # type: ignore[attr-defined]  # the emulator's, once mixed in
        assert isinstance(store, IndexedObjects)
        return store

    def _KubernetesEmulator__get_objs(self, request: rendering.Request, strict: bool) -> list[k8s_dicts.Object]:
        """kmock's scan, answered from the index: strict means "exactly this namespace" (None
        being cluster-wide); otherwise a request without a namespace means every namespace."""
        return list(self._store.lookup(request.resource, request.namespace, request.name,
                                       any_namespace=not strict and request.namespace is None))

    def _get_resources(self) -> list[references.resource]:
        declared = set(kmock.KubernetesScaffold._get_resources(self))  # type: ignore[arg-type]
        return list(declared | self._store.resources())
