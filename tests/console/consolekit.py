"""Helpers for the console tests: a real cluster, users, a logged-in aiohttp test client.

The cluster is ``rocketq.local.LocalCluster`` (real name server and broker processes on free
ports in a temporary directory), stopped by PID when the tests are done.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from aiohttp.test_utils import TestClient, TestServer

from rocketq.console.app import ConsoleConfig, make_app
from rocketq.console.users import Role, User, parse_users, user_line

ADMIN_NAME: Final = "alice"
ADMIN_PASSWORD: Final = "alice-password"
READER_NAME: Final = "bob"
READER_PASSWORD: Final = "bob-password"
TOKEN: Final = re.compile(r'name="csrf_token" value="([^"]+)"')

_users: dict[str, User] = {}


def users() -> dict[str, User]:
    """Two accounts, hashed once per test run (argon2 is slow on purpose)."""
    if not _users:
        text = "\n".join([user_line(ADMIN_NAME, Role.ADMIN, ADMIN_PASSWORD),
                          user_line(READER_NAME, Role.READ_ONLY, READER_PASSWORD)])
        _users.update(parse_users(text))
    return _users


async def client_for(namesrv: str, audit_file: Path | None = None,  # type: ignore[type-arg]
                     signer: tuple[str, str] = ("", ""), users_file: Path | None = None) -> TestClient:
    """A console over ``namesrv``; ``signer`` is the ACL account it signs admin requests with;
    with ``users_file`` (which holds ``users()``) the console follows that file."""
    app = make_app(ConsoleConfig(namesrv, users(), users_file, audit_file, timeout=3.0, sample_interval=0,
                                 access_key=signer[0], secret_key=signer[1]))
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


def token(html: str) -> str:
    found = TOKEN.search(html)
    assert found, f"no CSRF token in the page:\n{html[:2000]}"
    return found.group(1)


async def page_token(client: TestClient, path: str = "/login") -> str:  # type: ignore[type-arg]
    response = await client.get(path)
    return token(await response.text())


async def login(client: TestClient, name: str, password: str) -> None:  # type: ignore[type-arg]
    csrf = await page_token(client, "/login")
    response = await client.post("/login", data={"username": name, "password": password, "csrf_token": csrf,
                                                 "next": "/cluster"}, allow_redirects=False)
    assert response.status == 303, await response.text()


async def post(client: TestClient, path: str, data: dict[str, str], *, from_page: str = "/cluster",  # type: ignore[type-arg]
               allow_redirects: bool = False):  # type: ignore[no-untyped-def]
    """POST a form with the session's CSRF token, read from ``from_page`` as a browser would."""
    csrf = await page_token(client, from_page)
    return await client.post(path, data={**data, "csrf_token": csrf}, allow_redirects=allow_redirects)


async def wait_for(check, what: str, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Poll an async ``check`` until it is true; generous, since the machine may be loaded."""
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)
