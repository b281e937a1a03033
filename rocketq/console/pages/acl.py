"""ACL accounts: each broker's ACL file versions, and creating, updating or deleting an account
on every broker of a cluster (UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG, masters and slaves
alike, as ``rocketq admin updateAclConfig -c``).

RocketMQ 4.9's protocol has no request that lists accounts (secret keys must not travel), so
the page shows what the brokers do report: which ACL files they hold and each file's version,
which tells whether every broker has the same accounts. A broker without ACL answers with an
error, shown as "ACL off".
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import aiohttp_jinja2
from aiohttp import web

from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError
from rocketq.console import forms, keys
from rocketq.console.pages.common import audited, done
from rocketq.protocol import aclheaders

routes = web.RouteTableDef()

PERMS: Final = ("", "DENY", "PUB", "SUB", "PUB|SUB")
"""What an account's default topic/group permission may be (empty: leave unchanged)."""


async def acl_state(admin: AdminClient, addr: str) -> aclheaders.GetBrokerAclConfigResponseHeader | str:
    try:
        return await admin.acl_version(addr)
    except AdminError as exc:
        return f"ACL off ({exc.name})"


@routes.get("/acl")
@aiohttp_jinja2.template("acl.html")
async def acl_page(request: web.Request) -> dict[str, Any]:
    admin = request.app[keys.ADMIN]
    info = await admin.cluster_info()
    addrs = info.all_addrs()
    states = await asyncio.gather(*(acl_state(admin, addr) for addr in addrs))
    return {"brokers": list(zip(addrs, states, strict=True)), "clusters": info.cluster_names(), "perms": PERMS}


def perm(form: forms.Form, name: str) -> str | None:
    value = forms.text(form, name, required=False)
    if value not in PERMS:
        raise forms.InvalidInput(f"{name}: {value!r} is not one of {', '.join(p for p in PERMS if p)}")
    return value or None


@routes.post("/acl")
async def update_account(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    access_key = forms.text(form, "access_key", max_length=128)
    header = aclheaders.CreateAccessConfigRequestHeader(
        access_key=access_key, secret_key=forms.text(form, "secret_key", required=False, max_length=128) or None,
        white_remote_address=forms.text(form, "white_remote_address", required=False, max_length=256) or None,
        admin=forms.flag(form, "admin"), default_topic_perm=perm(form, "default_topic_perm"),
        default_group_perm=perm(form, "default_group_perm"))
    admin = request.app[keys.ADMIN]
    addrs = await cluster_ops.targets(admin, None, forms.text(form, "cluster"), with_slaves=True)
    await audited(request, "update ACL account", access_key,
                  asyncio.gather(*(admin.update_acl_account(addr, header) for addr in addrs)))
    return done(request, f"Account {access_key} written to {len(addrs)} broker(s).", "/acl")


@routes.post("/acl/delete")
async def delete_account(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    access_key = forms.text(form, "access_key", max_length=128)
    admin = request.app[keys.ADMIN]
    addrs = await cluster_ops.targets(admin, None, forms.text(form, "cluster"), with_slaves=True)
    await audited(request, "delete ACL account", access_key,
                  asyncio.gather(*(admin.delete_acl_account(addr, access_key) for addr in addrs)))
    return done(request, f"Account {access_key} deleted from {len(addrs)} broker(s).", "/acl")
