"""The ACL admin requests (codes 50-54) against a real `rocketq broker` with aclEnable=true,
driven by `rocketq admin` as an operator would: accounts made, changed and deleted while the
broker runs, each change in force when the command returns."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import yaml
from clusterprocs import Processes
from test_acl import ADMIN, APP, TOPIC, AclCluster, call, refused, send_v2
from test_acl import cluster as cluster  # the module-scoped ACL cluster fixture

from rocketq.acl import signing
from rocketq.admin.client import AdminClient
from rocketq.client import BrokerError, Message, Producer
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.remoting.client import RemotingClient

NEW = ("teamAccess", "teamSecret1")


def admin(cluster: AclCluster, *args: str, signer: tuple[str, str] = ADMIN) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocketq", "admin", *args, "-n", cluster.namesrv,
                           "-b", cluster.broker, "--accessKey", signer[0], "--secretKey", signer[1]],
                          capture_output=True, text=True, timeout=60)


async def send_as(cluster: AclCluster, account: tuple[str, str]) -> None:
    async with Producer("aclAdminPG", namesrv_addr=cluster.namesrv, access_key=account[0], secret_key=account[1],
                        retry_times_when_send_failed=0) as producer:
        await producer.send(Message(TOPIC, b"hello"))


def file_counter(path: Path) -> int:
    return int(yaml.safe_load(path.read_text())["dataVersion"][0]["counter"])


async def test_an_account_made_changed_and_deleted_through_rocketq_admin(cluster: AclCluster) -> None:
    with pytest.raises(BrokerError, match=f"No acl config for {NEW[0]}"):
        await send_as(cluster, NEW)
    made = admin(cluster, "updateAclConfig", "-a", NEW[0], "-s", NEW[1], "-t", f"{TOPIC}=PUB", "-u", "SUB")
    assert made.returncode == 0, made.stderr
    assert "success" in made.stdout
    await send_as(cluster, NEW)  # in force as soon as the command returned

    denied = admin(cluster, "updateAclConfig", "-a", NEW[0], "-t", f"{TOPIC}=DENY")
    assert denied.returncode == 0, denied.stderr
    with pytest.raises(BrokerError, match=f"No default permission for topic:{TOPIC}"):
        await send_as(cluster, NEW)
    account = next(a for a in yaml.safe_load(cluster.acl_file.read_text())["accounts"] if a["accessKey"] == NEW[0])
    assert account["secretKey"] == NEW[1]  # fields not given stay as they were

    gone = admin(cluster, "deleteAclConfig", "-a", NEW[0])
    assert gone.returncode == 0, gone.stderr
    with pytest.raises(BrokerError, match=f"No acl config for {NEW[0]}"):
        await send_as(cluster, NEW)
    again = admin(cluster, "deleteAclConfig", "-a", NEW[0])
    assert again.returncode == 1 and "no such account" in again.stderr


def test_only_admin_accounts_may_change_or_read_the_acl(cluster: AclCluster) -> None:
    for args in (["updateAclConfig", "-a", "sneakyOne", "-s", "sneakySecret", "-m", "true"],
                 ["deleteAclConfig", "-a", ADMIN[0]], ["updateGlobalWhiteAddr", "-g", "*"],
                 ["clusterAclConfigVersion"]):
        answer = admin(cluster, *args, signer=APP)
        assert answer.returncode == 1 and "Need admin permission" in answer.stderr, (args, answer.stderr)
    assert "sneakyOne" not in cluster.acl_file.read_text()


def test_versions_count_each_change(cluster: AclCluster) -> None:
    before = admin(cluster, "clusterAclConfigVersion", "--json")
    assert before.returncode == 0, before.stderr
    rows = orjson.loads(before.stdout)
    assert [r["aclFilePath"] for r in rows] == [str(cluster.acl_file)]
    changed = admin(cluster, "updateAclConfig", "-a", APP[0], "-i", "DENY")
    assert changed.returncode == 0, changed.stderr
    after = orjson.loads(admin(cluster, "clusterAclConfigVersion", "--json").stdout)
    assert after[0]["counter"] == rows[0]["counter"] + 1 == file_counter(cluster.acl_file)
    assert after[0]["brokerAddr"] == cluster.broker


async def test_global_white_addresses_let_unsigned_peers_in(cluster: AclCluster) -> None:
    unsigned = RemotingClient(name="acl-admin-unsigned")
    try:
        ext = send_v2(TOPIC)
        assert refused(await call(unsigned, cluster.broker, RequestCode.SEND_MESSAGE_V2, ext, b"x"),
                       "No accessKey is configured")
        opened = admin(cluster, "updateGlobalWhiteAddr", "-g", "127.0.0.1")
        assert opened.returncode == 0, opened.stderr
        answer = await call(unsigned, cluster.broker, RequestCode.SEND_MESSAGE_V2, ext, b"x")
        assert answer.code == ResponseCode.SUCCESS, answer
        closed = admin(cluster, "updateGlobalWhiteAddr", "-g", "")
        assert closed.returncode == 0, closed.stderr
        assert refused(await call(unsigned, cluster.broker, RequestCode.SEND_MESSAGE_V2, ext, b"x"),
                       "No accessKey is configured")
        outside = admin(cluster, "updateGlobalWhiteAddr", "-g", "*", "-f", "/etc/passwd")
        assert outside.returncode == 1 and "is not one of this broker's ACL files" in outside.stderr
    finally:
        await unsigned.close()


async def test_a_broker_without_acl_says_so(tmp_path: Path) -> None:
    procs = Processes(tmp_path)
    try:
        ns = procs.namesrv()
        broker = procs.broker(ns.address)
        client = RemotingClient(name="acl-off", rpc_hook=signing.Signer(*ADMIN))
        try:
            answer = await call(client, broker.address, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                                {"accessKey": NEW[0], "secretKey": NEW[1]}, b"")
            listing = await call(client, broker.address, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, b"")
        finally:
            await client.close()
        for each in (answer, listing):
            assert each.code == ResponseCode.SYSTEM_ERROR and "aclEnable=false" in (each.remark or ""), each
    finally:
        procs.stop_all()


TEAM_FILE = f"""
globalWhiteRemoteAddresses: [10.9.*.*]
accounts:
- accessKey: teamOnlyKey
  secretKey: teamOnlySecret
  whiteRemoteAddress: 192.168.1.*
  defaultGroupPerm: PUB|SUB
  groupPerms: [teamGroup=SUB]
- accessKey: {APP[0]}
  secretKey: shadowedSecret
  admin: true
"""


async def test_get_acl_config_lists_the_merged_table_to_admins_only(cluster: AclCluster) -> None:
    team = cluster.acl_file.parent / "acl" / "team.yml"
    team.parent.mkdir(exist_ok=True)
    team.write_text(TEAM_FILE)
    try:
        async with AdminClient(cluster.namesrv, access_key=ADMIN[0], secret_key=ADMIN[1]) as client:
            deadline = time.monotonic() + 30
            while not any(a.access_key == "teamOnlyKey" for a in (await client.acl_config(cluster.broker)).accounts):
                assert time.monotonic() < deadline, "the broker never loaded conf/acl/team.yml"
                await asyncio.sleep(0.2)
            config = await client.acl_config(cluster.broker)
        by_key = {a.access_key: a for a in config.accounts}
        assert sorted(by_key) == sorted([APP[0], ADMIN[0], "teamOnlyKey"])
        assert config.global_white_addrs == ("10.9.*.*",)
        app = by_key[APP[0]]  # plain_acl.yml defines it first: team.yml's copy is ignored
        assert (app.secret_key, app.admin) == (APP[1], False)
        assert (app.default_group_perm, app.group_perms) == ("SUB", ("deniedGroup=DENY",))
        assert f"{TOPIC}=PUB|SUB" in app.topic_perms
        teamed = by_key["teamOnlyKey"]
        assert (teamed.white_remote_address, teamed.default_topic_perm, teamed.default_group_perm,
                teamed.group_perms) == ("192.168.1.*", "DENY", "PUB|SUB", ("teamGroup=SUB",))

        listed = admin(cluster, "getAclConfig", "--json")
        assert listed.returncode == 0, listed.stderr
        [row] = orjson.loads(listed.stdout)
        assert {a["accessKey"] for a in row["plainAccessConfigs"]} == set(by_key)
        assert APP[1] not in listed.stdout and "teamOnlySecret" not in listed.stdout  # masked
        text = admin(cluster, "getAclConfig")
        assert text.returncode == 0 and "teamOnlyKey" in text.stdout and APP[1] not in text.stdout

        refused_list = admin(cluster, "getAclConfig", signer=APP)
        assert refused_list.returncode == 1 and "Need admin permission" in refused_list.stderr
    finally:
        team.unlink()
