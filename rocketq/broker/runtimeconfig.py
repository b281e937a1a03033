"""UPDATE_BROKER_CONFIG (25): which broker.conf keys change on a running broker, and how.

Apache RocketMQ applies any key naming a setter on its config objects at once and persists it,
but most of them are only read at start (ports, paths, thread pools), so the change silently
does nothing until a restart; 4.9.8+ refuses a small blacklist (``brokerConfigPath``,
``rocketmqHome``, ``configBlackList``). rocketq takes a stricter line: a key is accepted only
if a running rocketq broker actually acts on it from the next request on; every other key is
refused with a remark naming it and saying why (unknown, blacklisted, or read only at start),
and nothing of that request is applied.

Live keys are those read per request or per pass from the broker's one shared
``BrokerBehaviour`` (send checks, pulls, group auto-creation, reply storing) or ``StoreSettings``
(retention and flush loops). Those objects are frozen dataclasses that every handler holds; an
update builds a validated copy with ``rocketq.settings.build`` (so a bad value is refused with
the same message a bad broker.conf gets) and then writes the changed fields into the shared
instance — the one place they change after start. ``brokerPermission`` also re-registers the
broker at once (the caller does that). Changes are not written back to broker.conf: a restart
returns to the file's values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Final, TypeVar

from rocketq import settings
from rocketq.broker.settings import BrokerBehaviour, BrokerIdentity
from rocketq.ha.settings import HASettings
from rocketq.store.settings import StoreSettings

LIVE_BEHAVIOUR_KEYS: Final = frozenset({
    "brokerPermission", "autoCreateTopicEnable", "defaultTopicQueueNums", "autoCreateSubscriptionGroup",
    "longPollingEnable", "shortPollingTimeMills", "sendThreadPoolQueueCapacity",
    "startAcceptSendRequestTimeStamp", "rejectTransactionMessage", "storeReplyMessageEnable",
})
"""BrokerBehaviour keys the handlers read per request."""
LIVE_STORE_KEYS: Final = frozenset({
    "fileReservedTime", "diskMaxUsedSpaceRatio", "diskSpaceWarningLevelRatio", "flushIntervalCommitLog",
    "flushCommitLogLeastPages", "flushIntervalConsumeQueue", "flushConsumeQueueLeastPages",
})
"""StoreSettings keys the retention and flush loops read on every pass."""
RUNTIME_UPDATABLE_KEYS: Final = LIVE_BEHAVIOUR_KEYS | LIVE_STORE_KEYS
BLACKLIST: Final = frozenset({"brokerConfigPath", "rocketmqHome", "configBlackList"})
"""RocketMQ 4.9.8+'s ``configBlackList`` default plus what it always adds."""

S = TypeVar("S", BrokerBehaviour, StoreSettings)


class ConfigUpdateError(ValueError):
    """The update is refused as a whole; the text is the remark for the admin tool."""

    def __init__(self, remark: str, *, blacklisted: bool = False) -> None:
        super().__init__(remark)
        self.blacklisted = blacklisted


def refusal(keys: list[str], known: set[str]) -> ConfigUpdateError | None:
    """Why these keys cannot be changed at runtime (the first reason that applies), or None."""
    blacklisted = sorted(k for k in keys if k in BLACKLIST)
    if blacklisted:
        return ConfigUpdateError(f"Can not update config in black list: {', '.join(blacklisted)}", blacklisted=True)
    unknown = sorted(k for k in keys if k not in known)
    if unknown:
        return ConfigUpdateError(f"unknown broker config key(s): {', '.join(unknown)}")
    at_start = sorted(k for k in keys if k not in RUNTIME_UPDATABLE_KEYS)
    if at_start:
        return ConfigUpdateError(
            f"{', '.join(at_start)}: read only at broker start; set it in broker.conf and restart. "
            f"Changeable at runtime: {', '.join(sorted(RUNTIME_UPDATABLE_KEYS))}")
    return None


def _updated(current: S, updates: Mapping[str, str]) -> S:
    """A validated copy of ``current`` with ``updates`` (SettingsError names a bad value)."""
    values = {**settings.as_properties(current), **updates}
    fresh = settings.build(type(current), values, environ={})
    if isinstance(fresh, StoreSettings):
        fresh.validate()
    return fresh


def _write_into(target: object, source: object) -> list[str]:
    """Copy the fields that differ into the shared instance; the names changed."""
    changed = []
    for f in dataclasses.fields(source):  # type: ignore[arg-type]
        value = getattr(source, f.name)
        if getattr(target, f.name) != value:
            object.__setattr__(target, f.name, value)  # frozen: see the module docstring
            changed.append(f.name)
    return changed


def apply(updates: Mapping[str, str], behaviour: BrokerBehaviour, store: StoreSettings) -> list[str]:
    """Check every key and value first, then change the shared objects; the fields changed."""
    known = set().union(*(settings.keys_of(cls) for cls in (BrokerIdentity, BrokerBehaviour, StoreSettings,
                                                           HASettings)), BLACKLIST)
    refused = refusal(list(updates), known)
    if refused is not None:
        raise refused
    try:
        new_behaviour = _updated(behaviour, {k: v for k, v in updates.items() if k in LIVE_BEHAVIOUR_KEYS})
        new_store = _updated(store, {k: v for k, v in updates.items() if k in LIVE_STORE_KEYS})
    except settings.SettingsError as exc:
        raise ConfigUpdateError(str(exc)) from None
    return _write_into(behaviour, new_behaviour) + _write_into(store, new_store)
