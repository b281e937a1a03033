"""Status conditions and status patches, computed as values and written only when they change.

A condition is ``{type, status, reason, message, lastTransitionTime, observedGeneration}`` as
in Kubernetes' own API conventions. ``lastTransitionTime`` moves only when ``status`` flips, so
a reconcile pass that finds nothing new produces exactly the status already stored, and
``status_patch`` returns nothing to write. One pass writes at most one status patch.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rocketq_operator import applying

MAX_MESSAGE: Final = 1024
"""Longest condition message; error lists from a bad spec are cut to fit."""


class Phase(enum.Enum):
    PENDING = "Pending"
    CREATING = "Creating"
    RUNNING = "Running"
    UPDATING = "Updating"
    SCALING = "Scaling"
    DEGRADED = "Degraded"
    FAILED = "Failed"
    READY = "Ready"
    """Topics and consumer groups: present on every master."""
    DELETING = "Deleting"
    """Topics and consumer groups: deleted, waiting to be removed from the brokers."""


class Type(enum.Enum):
    READY = "Ready"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    PAUSED = "ReconciliationPaused"
    ANALYTICS_UNAVAILABLE = "AnalyticsUnavailable"
    """spec.analytics is enabled but its Spark jobs cannot be created (no spark-operator CRD, no RBAC)."""
    PROXY_READY = "ProxyReady"
    """spec.proxy is enabled and every proxy pod of the current template is ready (absent when disabled)."""


@dataclass(frozen=True)
class Condition:
    type: Type
    status: bool
    reason: str
    message: str = ""


def _status_word(value: bool) -> str:
    return "True" if value else "False"


def render(wanted: Iterable[Condition], previous: Sequence[Any] | None, now: str,
           generation: int | None) -> list[dict[str, Any]]:
    """Conditions as JSON, keeping each one's lastTransitionTime unless its status flipped."""
    before = {c.get("type"): c for c in previous or () if isinstance(c, Mapping)}
    out = []
    for condition in wanted:
        word = _status_word(condition.status)
        old = before.get(condition.type.value)
        since = old.get("lastTransitionTime") if old is not None and old.get("status") == word else None
        message = condition.message if len(condition.message) <= MAX_MESSAGE else (
            condition.message[: MAX_MESSAGE - 3] + "...")
        item: dict[str, Any] = {
            "type": condition.type.value,
            "status": word,
            "reason": condition.reason,
            "message": message,
            "lastTransitionTime": since or now,
        }
        if generation is not None:
            item["observedGeneration"] = generation
        out.append(item)
    return out


def status_patch(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch for ``status`` that writes ``desired``'s keys; empty when nothing changed.

    Only the keys in ``desired`` are compared and written: kopf keeps its own bookkeeping under
    ``status`` too, and that must survive. A ``None`` in ``desired`` means "absent".
    """
    mine = {key: value for key, value in (current or {}).items() if key in desired}
    target = {key: value for key, value in desired.items() if value is not None}
    return applying.merge_diff(mine, target)


def _without_messages(status: Mapping[str, Any] | None, keys: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in keys:
        value = (status or {}).get(key)
        if key == "conditions" and isinstance(value, list):
            value = [{k: v for k, v in c.items() if k != "message"} if isinstance(c, Mapping) else c for c in value]
        out[key] = value
    return out


def only_messages_differ(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """Whether writing ``desired`` would change nothing but conditions' messages (the kind of
    change a status rate limit may hold back; phase, reason and status flips always go out)."""
    return _without_messages(current, desired) == _without_messages(desired, desired)
