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

Ownership: a desired object names its owner (the cluster) in a controller owner reference. An
object of the same name that this owner does not hold (a stranger's, or one nobody owns) is
never patched, adopted or deleted: adopting it would let the garbage collector delete it with
the cluster. ``apply`` raises ``Refused`` instead, as it does for a StatefulSet change the API
server would refuse (selector, serviceName, podManagementPolicy, volumeClaimTemplates; see
``immutable_changes``) and for any write the server answers 422 Invalid. A reconciler turns a
``Refused`` into a condition and an Event and carries on with the other objects.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
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


class Refused(Exception):
    """The live object cannot be brought to the desired one; nothing was written.

    ``reason`` is a condition reason (CamelCase), the message says what to do."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


NAME_CONFLICT: Final = "NameConflict"
IMMUTABLE_FIELD_CHANGE: Final = "ImmutableFieldChange"
APPLY_INVALID: Final = "ApplyInvalid"


def owner_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid of the object's controller (its first owner reference marked ``controller``)."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            uid = ref.get("uid")
            return uid if isinstance(uid, str) else None
    return None


def owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    refs = obj.get("metadata", {}).get("ownerReferences") or []
    return any(isinstance(ref, Mapping) and ref.get("uid") == uid for ref in refs)


def _holder(live: Mapping[str, Any]) -> str:
    refs = [r for r in live.get("metadata", {}).get("ownerReferences") or [] if isinstance(r, Mapping)]
    if not refs:
        return "has no owner"
    return "belongs to " + ", ".join(f"{r.get('kind')} {r.get('name')!r}" for r in refs)


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


def _check_live(live: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
    """Raise ``Refused`` when ``live`` is not ours to change, or cannot change as desired."""
    kind, namespace, name = _identity(desired)
    owner = owner_uid(desired)
    if owner is not None and not owned_by(live, owner):
        raise Refused(NAME_CONFLICT, (
            f"{kind} {namespace}/{name} already exists and {_holder(live)}: the operator does not "
            "take over objects it did not create; delete or rename it"))
    if kind == "StatefulSet" and (changes := immutable_changes(live, desired)):
        raise Refused(IMMUTABLE_FIELD_CHANGE, (
            f"StatefulSet {name}: {', '.join(changes)} cannot change on a running StatefulSet; "
            "it keeps its current settings until the spec is reverted"))


async def _write(what: str, call: Any) -> dict[str, Any]:
    try:
        result: dict[str, Any] = await call
    except kubeapi.ApiError as exc:
        if exc.status == HTTPStatus.UNPROCESSABLE_ENTITY:
            raise Refused(APPLY_INVALID, f"the API server refused {what}: {exc}") from exc
        raise
    return result


async def apply(api: kubeapi.KubeApi, desired: Mapping[str, Any],
                listed: Mapping[str, Any] | None = None) -> ApplyResult:
    """Create ``desired`` or bring the live object to it; Noop when it is what was applied last.

    ``listed`` is the live object when the caller has just read it (a LIST of the cluster's
    StatefulSets and ConfigMaps): no GET then. Without it the object is read first.
    Raises ``Refused`` (nothing written) for an object another owner holds, an immutable change
    or a write the API server finds invalid; ``kubeapi.ApiError`` for anything else."""
    kind, namespace, name = _identity(desired)
    live = listed if listed is not None else await api.get(kind, namespace, name)
    stamped = _stamped(desired)
    if live is None:
        try:
            created = await _write(f"creating {kind} {name}", api.create(stamped))
        except kubeapi.Conflict:
            # Someone created it between our read and write; the next pass looks at it.
            return ApplyResult(Action.NOOP, kind, name, await api.get(kind, namespace, name))
        return ApplyResult(Action.CREATED, kind, name, created)
    _check_live(live, desired)
    previous = last_applied(live)
    wanted = _strip_last_applied(desired)
    if previous == wanted:
        return ApplyResult(Action.NOOP, kind, name, live)
    patch = merge_diff(previous, wanted) if previous is not None else copy.deepcopy(wanted)
    patch.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = (
        stamped["metadata"]["annotations"][LAST_APPLIED]
    )
    patched = await _write(f"the patch of {kind} {name}", api.patch(kind, namespace, name, patch))
    return ApplyResult(Action.PATCHED, kind, name, patched)


async def remove(api: kubeapi.KubeApi, kind: str, namespace: str, name: str, owner: str) -> ApplyResult:
    """Delete an object the spec no longer asks for; Noop when it is gone or not ``owner``'s."""
    live = await api.get(kind, namespace, name)
    if live is None or not owned_by(live, owner):
        return ApplyResult(Action.NOOP, kind, name, live)
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
