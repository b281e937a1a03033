"""The cluster page (name servers, every broker with its role and load) and one broker's page.

Everything comes from the name servers' broker table (GET_BROKER_CLUSTER_INFO) and each
broker's GET_BROKER_RUNTIME_INFO, asked in parallel. A broker the name server lists but that does
not answer is shown as unreachable instead of failing the page. The broker page only accepts an
address the name servers list: the console must not be usable to probe arbitrary hosts.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp_jinja2
from aiohttp import web

from rocketq.admin import adminbodies, replication
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, BodyError, NotFoundError
from rocketq.console import keys, rates
from rocketq.remoting.errors import RemotingError

routes = web.RouteTableDef()


@dataclass(frozen=True, slots=True)
class BrokerRow:
    cluster: str
    group: str
    broker_id: int
    addr: str
    runtime: dict[str, str] | None
    """None: listed by the name server but not answering."""
    tps_in: float | None = None
    tps_out: float | None = None

    @property
    def role(self) -> str:
        return (self.runtime or {}).get("brokerRole", "MASTER" if self.broker_id == 0 else "SLAVE")

    @property
    def version(self) -> str:
        return (self.runtime or {}).get("brokerVersionDesc", "")

    @property
    def perm(self) -> str:
        perm = (self.runtime or {}).get("brokerPermission", "")
        return adminbodies.perm_name(int(perm)) if perm.isdigit() else perm

    @property
    def disk(self) -> str:
        ratio = (self.runtime or {}).get("commitLogDiskRatio", "")
        try:
            return f"{float(ratio) * 100:.1f}%"
        except ValueError:
            return ""

    @property
    def replication(self) -> str:
        return replication.replication_text(self.runtime or {})

    def today(self, key: str) -> str:
        return (self.runtime or {}).get(key, "")


async def runtime_or_none(admin: AdminClient, addr: str) -> dict[str, str] | None:
    try:
        return await admin.runtime_info(addr)
    except (RemotingError, AdminError, BodyError):
        return None


async def broker_rows(request: web.Request) -> list[BrokerRow]:
    admin = request.app[keys.ADMIN]
    info = await admin.cluster_info()
    members = [(data.cluster, data.broker_name, broker_id, addr)
               for cluster, groups in info.clusters for group in groups
               if (data := info.broker(group)) is not None for broker_id, addr in data.addrs]
    runtimes = await asyncio.gather(*(runtime_or_none(admin, m[3]) for m in members))
    meter = request.app[keys.RATES]
    rows = []
    for (cluster, group, broker_id, addr), runtime in zip(members, runtimes, strict=True):
        tps_in, tps_out = rates.broker_tps(meter, addr, runtime) if runtime else (None, None)
        rows.append(BrokerRow(cluster, group, broker_id, addr, runtime, tps_in, tps_out))
    return rows


@routes.get("/cluster")
@aiohttp_jinja2.template("cluster.html")
async def cluster_page(request: web.Request) -> dict[str, Any]:
    rows = await broker_rows(request)
    return {"namesrvs": request.app[keys.ADMIN].namesrv_addrs, "rows": rows}


@routes.get("/cluster/broker")
@aiohttp_jinja2.template("broker.html")
async def broker_page(request: web.Request) -> dict[str, Any]:
    admin = request.app[keys.ADMIN]
    addr = request.query.get("addr", "")
    info = await admin.cluster_info()
    broker = info.locate(addr) if addr else None
    if broker is None:
        raise NotFoundError(f"no broker at {addr!r} is registered with the name servers")
    runtime, config = await asyncio.gather(admin.runtime_info(addr), admin.broker_config(addr))
    return {"addr": addr, "broker": broker, "runtime": sorted(runtime.items()), "config": sorted(config.items())}
