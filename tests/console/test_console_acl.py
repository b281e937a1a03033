"""The ACL page over a real broker with ACL on: accounts listed from plain_acl.yml and conf/acl/,
secret keys never on the page, changes only for admins with a CSRF token."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient
from consolekit import ADMIN_NAME, ADMIN_PASSWORD, READER_NAME, READER_PASSWORD, client_for, login, post

from rocketq.local.cluster import ClusterLayout, LocalCluster
from rocketq.protocol.aclbodies import SECRET_MASK

Client = TestClient  # type: ignore[type-arg]

ADMIN = ("consoleAdmin", "consoleAdminSecret")
APP = ("consoleApp", "consoleAppSecret")
TEAM = ("teamFileKey", "teamFileSecret")
SECRETS = (ADMIN[1], APP[1], TEAM[1])
PLAIN_ACL = f"""
globalWhiteRemoteAddresses: [10.20.*.*]
accounts:
- accessKey: {ADMIN[0]}
  secretKey: {ADMIN[1]}
  admin: true
- accessKey: {APP[0]}
  secretKey: {APP[1]}
  defaultTopicPerm: PUB
  topicPerms: [orders=PUB|SUB]
"""
TEAM_ACL = f"""
accounts:
- accessKey: {TEAM[0]}
  secretKey: {TEAM[1]}
  whiteRemoteAddress: 192.168.7.*
  groupPerms: [billing=SUB]
"""


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("console-acl")
    plain = base / "plain_acl.yml"
    plain.write_text(PLAIN_ACL)
    (base / "acl").mkdir()
    (base / "acl" / "team.yml").write_text(TEAM_ACL)
    local = LocalCluster(ClusterLayout.with_free_ports(
        base / "cluster", broker_groups=1,
        extra_broker_config=(("aclEnable", "true"), ("rocketmq.acl.plain.file", str(plain)))))
    state = local.up()
    try:
        yield state.namesrv
    finally:
        local.down()


Opener = Callable[..., Awaitable[Client]]


@pytest.fixture
async def open_console(namesrv: str, tmp_path: Path) -> AsyncIterator[Opener]:
    """Logged-in consoles over the ACL cluster, signing with ``signer``; all closed at the end."""
    opened: list[Client] = []

    async def open_one(name: str, password: str, signer: tuple[str, str] = ADMIN) -> Client:
        client = await client_for(namesrv, tmp_path / "audit.jsonl", signer)
        opened.append(client)
        await login(client, name, password)
        return client
    try:
        yield open_one
    finally:
        for client in opened:
            await client.close()


@pytest.fixture
async def admin_console(open_console: Opener) -> Client:
    return await open_console(ADMIN_NAME, ADMIN_PASSWORD)


@pytest.fixture
async def reader_console(open_console: Opener) -> Client:
    return await open_console(READER_NAME, READER_PASSWORD)


def listed(text: str, access_key: str) -> bool:
    """The account is a row of an accounts table (not just named in a flash message)."""
    return f"<tr><td><code>{access_key}</code></td>" in text


async def acl_page(client: Client) -> str:
    response = await client.get("/acl")
    assert response.status == 200
    return await response.text()


async def test_a_reader_sees_every_account_but_no_secret_and_no_forms(reader_console: Client) -> None:
    text = await acl_page(reader_console)
    for key in (ADMIN[0], APP[0], TEAM[0]):
        assert listed(text, key)
    assert "orders=PUB|SUB" in text and "billing=SUB" in text and "192.168.7.*" in text and "10.20.*.*" in text
    assert SECRET_MASK in text
    assert not any(secret in text for secret in SECRETS)
    assert 'id="acl-update"' not in text and 'action="/acl/delete"' not in text


async def test_a_reader_cannot_change_an_account(reader_console: Client) -> None:
    response = await post(reader_console, "/acl", {"cluster": "DefaultCluster", "access_key": "readerMade1",
                                                   "secret_key": "readerSecret1"}, from_page="/acl")
    assert response.status == 403
    response = await post(reader_console, "/acl/delete", {"cluster": "DefaultCluster", "access_key": APP[0]},
                          from_page="/acl")
    assert response.status == 403
    text = await acl_page(reader_console)
    assert listed(text, APP[0]) and "readerMade1" not in text


async def test_an_admin_creates_and_deletes_an_account(admin_console: Client) -> None:
    made = ("consoleMade1", "consoleMadeSecret")
    form = {"cluster": "DefaultCluster", "access_key": made[0], "secret_key": made[1],
            "default_group_perm": "SUB", "white_remote_address": "10.30.0.*"}
    without_token = await admin_console.post("/acl", data=form, allow_redirects=False)
    assert without_token.status == 403
    assert not listed(await acl_page(admin_console), made[0])

    response = await post(admin_console, "/acl", form, from_page="/acl")
    assert response.status == 303, await response.text()
    text = await acl_page(admin_console)  # in force when the broker answered
    assert listed(text, made[0]) and "10.30.0.*" in text and made[1] not in text

    response = await post(admin_console, "/acl/delete", {"cluster": "DefaultCluster", "access_key": made[0]},
                          from_page="/acl")
    assert response.status == 303, await response.text()
    assert not listed(await acl_page(admin_console), made[0])


async def test_a_console_signing_as_a_non_admin_says_why_nothing_is_listed(open_console: Opener) -> None:
    text = await acl_page(await open_console(READER_NAME, READER_PASSWORD, APP))
    assert "Need admin permission" in text and "ACL off" not in text
    assert not listed(text, TEAM[0])
