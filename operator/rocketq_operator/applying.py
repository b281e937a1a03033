"""Apply one desired object: create it, patch it when it differs, delete it when unwanted.

The result is a value (``Noop``, ``Created``, ``Patched``, ``Deleted``), as in Strimzi's
ReconcileResult, so a reconciler can decide what to do next from what happened (a ConfigMap
that was patched means pods may need a roll; a StatefulSet that was created means a new group).

"Differs" is decided against what the operator applied last, kept in the object's
``rocketq.io/last-applied`` annotation, not against the live object: the API server adds
defaults and normalises values (``0.5`` CPU becomes ``500m``), so a live comparison would see
a change on every pass. The patch is the RFC 7386 merge diff from the last applied object to
the desired one, so a key the operator stopped rendering is removed, while keys others own
(status, server defaults, other tools' annotations) are left alone. The cost: an owned field
edited by hand is only put back on the next change of the spec.

StatefulSets have fields the API server refuses to change (selector, serviceName,
podManagementPolicy, volumeClaimTemplates); ``immutable_changes`` names them so a reconciler
can report the change instead of failing on it.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from rocketq_operator import kubeapi

LAST_APPLIED: Final = "rocketq.io/last-applied"
STATEFULSET_IMMUTABLE: Final = ("serviceName", "selector", "podManagementPolicy")


class Action(enum.Enum):
    NOOP = "Noop"
    CREATED = "Created"
    PATCHED = "Patched"
    DELETED = "Deleted"


@dataclass(frozen=True)
class ApplyResult:
    action: Action
    kind: str
    name: str
    live: Mapping[str, Any] | None
    """The object as the API server returned it after the step (None once deleted or absent)."""

    @property
    def changed(self) -> bool:
        return self.action is not Action.NOOP


def _strip_last_applied(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    annotations = out.get("metadata", {}).get("annotations")
    if annotations is not None:
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            del out["metadata"]["annotations"]
    return out


def _stamped(desired: Mapping[str, Any]) -> dict[str, Any]:
    clean = _strip_last_applied(desired)
    out = copy.deepcopy(clean)
    out.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = (
        orjson.dumps(clean, option=orjson.OPT_SORT_KEYS).decode()
    )
    return out


def last_applied(live: Mapping[str, Any]) -> dict[str, Any] | None:
    raw = (live.get("metadata", {}).get("annotations") or {}).get(LAST_APPLIED)
    if not isinstance(raw, str):
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The RFC 7386 merge patch that turns ``old`` into ``new``."""
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            nested = merge_diff(before, value)
            if nested:
                patch[key] = nested
        elif key not in old or before != value:
            patch[key] = copy.deepcopy(value)
    return patch


def _identity(desired: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = desired.get("metadata", {})
    return str(desired.get("kind")), str(meta.get("namespace")), str(meta.get("name"))


async def apply(api: kubeapi.KubeApi, desired: Mapping[str, Any]) -> ApplyResult:
    """Create ``desired`` or bring the live object to it; Noop when it is what was applied last."""
    kind, namespace, name = _identity(desired)
    live = await api.get(kind, namespace, name)
    stamped = _stamped(desired)
    if live is None:
        try:
            created = await api.create(stamped)
        except kubeapi.Conflict:
            # Someone created it between our read and write; the next pass patches it.
            return ApplyResult(Action.NOOP, kind, name, await api.get(kind, namespace, name))
        return ApplyResult(Action.CREATED, kind, name, created)
    previous = last_applied(live)
    wanted = _strip_last_applied(desired)
    if previous == wanted:
        return ApplyResult(Action.NOOP, kind, name, live)
    patch = merge_diff(previous, wanted) if previous is not None else copy.deepcopy(wanted)
    patch.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = (
        stamped["metadata"]["annotations"][LAST_APPLIED]
    )
    patched = await api.patch(kind, namespace, name, patch)
    return ApplyResult(Action.PATCHED, kind, name, patched)


async def remove(api: kubeapi.KubeApi, kind: str, namespace: str, name: str) -> ApplyResult:
    """Delete an object the spec no longer asks for; Noop when it is already gone."""
    deleted = await api.delete(kind, namespace, name)
    return ApplyResult(Action.DELETED if deleted else Action.NOOP, kind, name, None)


def _claims(statefulset: Mapping[str, Any]) -> list[tuple[str, Any, Any, Any]]:
    out = []
    for claim in statefulset.get("spec", {}).get("volumeClaimTemplates") or []:
        spec = claim.get("spec", {})
        out.append((
            claim.get("metadata", {}).get("name"),
            spec.get("resources", {}).get("requests", {}).get("storage"),
            spec.get("storageClassName"),
            tuple(spec.get("accessModes") or ()),
        ))
    return out


def immutable_changes(live: Mapping[str, Any], desired: Mapping[str, Any]) -> list[str]:
    """StatefulSet fields the desired object changes but the API server would refuse to."""
    changes = [
        f"spec.{field}" for field in STATEFULSET_IMMUTABLE
        if field in desired.get("spec", {}) and live.get("spec", {}).get(field) != desired["spec"][field]
    ]
    live_claims, desired_claims = _claims(live), _claims(desired)
    # The server fills storageClassName in when the spec leaves it to the cluster default.
    if len(live_claims) != len(desired_claims) or any(
        (ln, ls, lm) != (dn, ds, dm) or (dc is not None and lc != dc)
        for (ln, ls, lc, lm), (dn, ds, dc, dm) in zip(live_claims, desired_claims, strict=False)
    ):
        changes.append("spec.volumeClaimTemplates")
    return changes
