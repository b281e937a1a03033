"""ACL accounts: each broker's accounts and ACL file versions, and creating, updating or
deleting an account on every broker of a cluster (UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG,
masters and slaves alike, as ``rocketq admin updateAclConfig -c``).

The accounts come from GET_BROKER_CLUSTER_ACL_CONFIG (code 54, ``mqadmin getAclConfig``): each
broker's merged table as it is in force. That answer carries every secret key; the page turns
each account into an ``AccountRow`` first, which has no secret-key field, so no template can show
one by mistake. Every broker is asked, since each keeps its own files: equal file versions mean
equal accounts. A broker without ACL answers with an error, shown as "ACL off".
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Final

import aiohttp_jinja2
from aiohttp import web

from rocketq.admin import cluster as cluster_ops
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, BodyError
from rocketq.console import forms, keys
from rocketq.console.pages.common import audited, done
from rocketq.protocol import aclbodies, aclheaders
from rocketq.remoting.errors import RemotingError

routes = web.RouteTableDef()

PERMS: Final = ("", "DENY", "PUB", "SUB", "PUB|SUB")
"""What an account's default topic/group permission may be (empty: leave unchanged)."""
ACL_OFF_MARK: Final = "aclEnable=false"
"""In the remark of a broker whose ACL is off (rocketq/broker/acladmin.py ACL_OFF)."""


@dataclass(frozen=True, slots=True)
class AccountRow:
    """An account as the page shows it: everything but the secret key."""

    access_key: str
    admin: bool
    white_remote_address: str
    default_topic_perm: str
    default_group_perm: str
    topic_perms: tuple[str, ...]
    group_perms: tuple[str, ...]

    @classmethod
    def of(cls, account: aclbodies.PlainAccessConfig) -> AccountRow:
        return cls(account.access_key, account.admin, account.white_remote_address, account.default_topic_perm,
                   account.default_group_perm, account.topic_perms, account.group_perms)


@dataclass(frozen=True, slots=True)
class BrokerAcl:
    addr: str
    versions: str = ""
    """The ACL files and their versions (JSON, as the broker reports them)."""
    global_white_addrs: tuple[str, ...] = ()
    accounts: tuple[AccountRow, ...] = ()
    problem: str = ""
    """Why nothing is shown: "ACL off (...)" or the error of an unreadable answer."""


async def broker_acl(admin: AdminClient, addr: str) -> BrokerAcl:
    try:
        version = await admin.acl_version(addr)
    except (AdminError, BodyError, RemotingError) as exc:
        return BrokerAcl(addr, problem=problem(exc))
    versions = version.all_acl_file_version or version.version
    try:
        config = await admin.acl_config(addr)
    except (AdminError, BodyError, RemotingError) as exc:  # e.g. a broker older than code 54
        return BrokerAcl(addr, versions, problem=f"accounts not listed: {problem(exc)}")
    return BrokerAcl(addr, versions, config.global_white_addrs, tuple(AccountRow.of(a) for a in config.accounts))


def problem(exc: Exception) -> str:
    if isinstance(exc, AdminError):
        return f"ACL off ({exc.name})" if ACL_OFF_MARK in exc.remark else f"{exc.name}: {exc.remark}"
    return f"no answer: {exc}" if isinstance(exc, RemotingError) else f"unreadable answer: {exc}"


@routes.get("/acl")
@aiohttp_jinja2.template("acl.html")
async def acl_page(request: web.Request) -> dict[str, Any]:
    admin = request.app[keys.ADMIN]
    info = await admin.cluster_info()
    brokers = await asyncio.gather(*(broker_acl(admin, addr) for addr in info.all_addrs()))
    return {"brokers": brokers, "clusters": info.cluster_names(), "perms": PERMS,
            "secret_mask": aclbodies.SECRET_MASK}


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
