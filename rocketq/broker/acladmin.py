"""The ACL admin requests of RocketMQ 4.9 (codes 50-54): ``mqadmin updateAclConfig``,
``deleteAclConfig``, ``updateGlobalWhiteAddr``, ``clusterAclConfigVersion`` and ``getAclConfig``.

Each change rewrites the ACL file that holds the account (rocketq/acl/editing.py) and reloads
the table at once, so the answer comes after the change is in force. A failure is SYSTEM_ERROR
with the reason in the remark, as RocketMQ answers; a broker with ``aclEnable=false`` has no
table and says so. Unlike RocketMQ 4.9, which lets any signed account use these codes, rocketq
counts them among the admin codes (rocketq/acl/validator.py): only an admin account may
change who may do what, or read the accounts (code 54 answers with their secret keys).

Code 54 lists the merged table as it is in force (rocketq/acl/reload.py): every file's global
white addresses, and each accessKey once, from the first file that defines it. Values are what
the table holds, not the file's text: a missing or invalid permission shows as the DENY it means.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Final

import orjson

from rocketq.acl import editing
from rocketq.acl.editing import AccountChange, AclEditError
from rocketq.acl.permissions import name as perm_name
from rocketq.acl.plainacl import RETRY_GROUP_PREFIX, Account
from rocketq.acl.reload import AclTable
from rocketq.protocol.aclbodies import ClusterAclConfig, PlainAccessConfig
from rocketq.protocol.aclheaders import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
    split_list,
)
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frames import RemotingCommand
from rocketq.remoting.connection import Connection, Handler

ACL_OFF: Final = "ACL is not enabled on this broker (aclEnable=false)"


class AclAdminHandlers:
    def __init__(self, table: AclTable | None, broker_name: str, cluster: str, address: Callable[[], str]) -> None:
        self.table = table
        self.broker_name = broker_name
        self.cluster = cluster
        self.address = address
        self._editing = asyncio.Lock()
        """One edit at a time: each reads, changes and rewrites a whole file."""

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_account,
            RequestCode.DELETE_ACL_CONFIG: self.delete_account,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.version_info,
            RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: self.acl_config,
        }

    async def update_account(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = CreateAccessConfigRequestHeader.from_ext(request.ext_fields)
        change = AccountChange(
            access_key=header.access_key, secret_key=header.secret_key or None,
            white_remote_address=header.white_remote_address, admin=header.admin,
            default_topic_perm=header.default_topic_perm or None, default_group_perm=header.default_group_perm or None,
            topic_perms=split_list(header.topic_perms), group_perms=split_list(header.group_perms))
        return await self._edit(request, lambda table: editing.upsert_account(
            table.owners.get(change.access_key, table.path), change))

    async def delete_account(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        access_key = DeleteAccessConfigRequestHeader.from_ext(request.ext_fields).access_key

        def delete(table: AclTable) -> None:
            owner = table.owners.get(access_key)
            if owner is None or not editing.delete_account(owner, access_key):
                raise AclEditError(f"The accesskey[{access_key}] is failed to delete: no such account")
        return await self._edit(request, delete)

    async def update_global_white(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = UpdateGlobalWhiteAddrsConfigRequestHeader.from_ext(request.ext_fields)
        patterns = split_list(header.global_white_addrs) or []

        def update(table: AclTable) -> None:
            editing.set_global_white_addresses(self._named_file(table, header.acl_file_full_path), patterns)
        return await self._edit(request, update)

    async def version_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        table = self.table
        if table is None:
            return request.response(ResponseCode.SYSTEM_ERROR, ACL_OFF)
        versions = {str(path): loaded.config.data_version.to_json() for path, loaded in table.files.items()}
        header = GetBrokerAclConfigResponseHeader(
            version=orjson.dumps(table.config.data_version.to_json()).decode(),
            all_acl_file_version=orjson.dumps(versions).decode(),
            broker_name=self.broker_name, broker_addr=self.address(), cluster_name=self.cluster)
        response = request.response(ResponseCode.SUCCESS)
        response.ext_fields.update(header.to_ext())
        return response

    async def acl_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        table = self.table
        if table is None:
            return request.response(ResponseCode.SYSTEM_ERROR, ACL_OFF)
        config = table.config  # one read: the table is swapped whole, never changed in place
        body = ClusterAclConfig(tuple(p.text for p in config.global_white_addresses),
                                tuple(access_config(a) for a in config.accounts.values()))
        response = request.response(ResponseCode.SUCCESS)
        response.body = body.encode()
        return response

    async def _edit(self, request: RemotingCommand, change: Callable[[AclTable], None]) -> RemotingCommand:
        table = self.table
        if table is None:
            return request.response(ResponseCode.SYSTEM_ERROR, ACL_OFF)
        async with self._editing:
            try:
                await asyncio.to_thread(change, table)
            except AclEditError as exc:
                return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
            await table.reload_now()
        return request.response(ResponseCode.SUCCESS)

    @staticmethod
    def _named_file(table: AclTable, named: str | None) -> Path:
        """The request's file, which must be one of the loaded ACL files (never any path a
        client names); none named means plain_acl.yml."""
        if not named:
            return table.path
        path = Path(named)
        if path not in table.files:
            raise AclEditError(f"{named} is not one of this broker's ACL files")
        return path


def access_config(account: Account) -> PlainAccessConfig:
    """An account as code 54 carries it; groups are kept under ``%RETRY%<group>`` in the table."""
    topics = [f"{res}={perm_name(p)}" for res, p in account.resource_perms.items()
              if not res.startswith(RETRY_GROUP_PREFIX)]
    groups = [f"{res.removeprefix(RETRY_GROUP_PREFIX)}={perm_name(p)}" for res, p in account.resource_perms.items()
              if res.startswith(RETRY_GROUP_PREFIX)]
    return PlainAccessConfig(
        access_key=account.access_key, secret_key=account.secret_key,
        white_remote_address=account.white_remote_address.text, admin=account.admin,
        default_topic_perm=perm_name(account.default_topic_perm),
        default_group_perm=perm_name(account.default_group_perm),
        topic_perms=tuple(topics), group_perms=tuple(groups))
