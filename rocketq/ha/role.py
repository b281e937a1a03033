"""Runtime role changes: a slave promoted to master, a master demoted to slave, without a restart.

The request is RocketMQ 5's NOTIFY_BROKER_ROLE_CHANGED (code 1008), which a RocketMQ controller
sends a broker after ELECT_MASTER. rocketq has no controller: an operator (``rocketq admin
electMaster`` / ``changeToSlave``) or the kopf operator sends it, with rocketq's own header
fields, because a broker here must be told its new ``brokerId``/``brokerRole`` rather than
derive them from a controller's SyncStateSet:

| field | meaning |
|---|---|
| ``brokerRole`` | ``ASYNC_MASTER``, ``SYNC_MASTER`` (promote, brokerId becomes 0) or ``SLAVE`` (demote) |
| ``brokerId`` | the slave id to take when demoted (1..); ignored when promoted |
| ``masterAddress`` | optional: a demoted broker's new master HA ``host:port`` (else from the name servers) |
| ``masterEpochAbove`` | optional, promote only: number the new epoch past this one (the operator's floor) |

The broker does the switch (``BrokerServer.change_role``); this module holds what is not the
broker's wiring: the request's parsing and the role file. ``broker.conf`` is never rewritten:
the new role is written to ``config/role.json`` in the store's config directory (write, fsync,
rename), and a broker starting with that file takes its ``brokerId``/``brokerRole`` (and a
demoted broker's ``masterAddress``) from it instead of ``broker.conf``'s. Deleting the file
returns the broker to its ``broker.conf`` role.

``masterEpochAbove`` is for a promotion retried after one that failed midway: the candidate that
failed may have become master anyway, at an epoch the kopf operator can bound; the next
candidate's epoch goes past that bound, so the name servers fence the failed one if it serves.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from rocketq.broker.settings import BrokerIdentity, BrokerRole
from rocketq.protocol import addresses, codes
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.connection import Connection, Handler
from rocketq.store import configfiles

log = logging.getLogger(__name__)

ROLE_FILE: Final = "role.json"


class RoleChangeError(ValueError):
    """A role change request that cannot be applied (answered SYSTEM_ERROR with the reason)."""


@dataclasses.dataclass(frozen=True, slots=True)
class RoleChange:
    role: BrokerRole
    broker_id: int
    master_address: str = ""
    """A slave's master HA address; empty: from the name servers' registration answers."""
    epoch_above: int = 0
    """Promote only: number the new epoch past this one (never saved: epoch.json keeps the result)."""

    @property
    def is_master(self) -> bool:
        return self.role is not BrokerRole.SLAVE

    def to_json(self) -> dict[str, object]:
        return {"brokerRole": self.role.value, "brokerId": self.broker_id, "masterAddress": self.master_address}

    @classmethod
    def of(cls, role: str, broker_id: int | str | None, master_address: str = "",
           epoch_above: str | None = None) -> RoleChange:
        try:
            parsed = BrokerRole(role.strip().upper())
        except ValueError:
            raise RoleChangeError(f"brokerRole={role!r}: expected ASYNC_MASTER, SYNC_MASTER or SLAVE") from None
        if parsed is not BrokerRole.SLAVE:
            above = (epoch_above or "0").strip()
            if not above.isdigit():
                raise RoleChangeError(f"masterEpochAbove={epoch_above!r}: expected a non-negative number")
            return cls(parsed, codes.MASTER_ID, epoch_above=int(above))
        try:
            slave_id = int(broker_id) if broker_id not in (None, "") else 0
        except ValueError:
            raise RoleChangeError(f"brokerId={broker_id!r}: expected a number") from None
        if slave_id <= 0:
            raise RoleChangeError("a slave needs a brokerId of 1 or more")
        if master_address and not addresses.is_host_port(master_address):
            raise RoleChangeError(f"masterAddress={master_address!r}: expected host:port")
        return cls(parsed, slave_id, master_address)


def role_path(config_dir: Path) -> Path:
    return config_dir / ROLE_FILE


def save(config_dir: Path, change: RoleChange) -> None:
    """Write the role durably: a crash leaves the old file or the new one, never half of one."""
    configfiles.write_json_atomic(role_path(config_dir), change.to_json())


def load(config_dir: Path) -> RoleChange | None:
    """The saved role, None without a file. A file that does not parse stops the start: running
    with broker.conf's role instead could make two masters of one group."""
    path = role_path(config_dir)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        return RoleChange.of(str(data["brokerRole"]), data.get("brokerId"), str(data.get("masterAddress", "")))
    except (ValueError, KeyError, TypeError) as exc:
        raise RoleChangeError(f"{path}: not a role file ({exc}); fix or delete it") from None


def apply_saved(identity: BrokerIdentity, config_dir: Path) -> tuple[BrokerIdentity, str]:
    """``identity`` with the saved role over broker.conf's, and the saved master HA address."""
    saved = load(config_dir)
    if saved is None:
        return identity, ""
    if (saved.role, saved.broker_id) != (identity.broker_role, identity.broker_id):
        log.warning("%s overrides broker.conf: brokerRole=%s brokerId=%d (broker.conf says %s, %d)",
                    role_path(config_dir), saved.role.value, saved.broker_id,
                    identity.broker_role.value, identity.broker_id)
    return dataclasses.replace(identity, broker_role=saved.role, broker_id=saved.broker_id), saved.master_address


def handlers(change_role: Callable[[RoleChange], Awaitable[None]]) -> dict[int, Handler]:
    """NOTIFY_BROKER_ROLE_CHANGED: answered once the switch is done (or why it was refused)."""

    async def notify_role_changed(_conn: Connection, request: RemotingCommand) -> RemotingCommand:
        ext = request.ext_fields
        try:
            change = RoleChange.of(ext.get("brokerRole", ""), ext.get("brokerId"), ext.get("masterAddress", ""),
                                   ext.get("masterEpochAbove"))
            await change_role(change)
        except RoleChangeError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        return request.response(ResponseCode.SUCCESS)

    return {RequestCode.NOTIFY_BROKER_ROLE_CHANGED: notify_role_changed}
