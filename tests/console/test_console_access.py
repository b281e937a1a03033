"""Login, roles, CSRF, the audit log and error pages of the console, over a real cluster."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from aiohttp.test_utils import TestClient
from consolekit import (
    ADMIN_NAME,
    ADMIN_PASSWORD,
    READER_NAME,
    READER_PASSWORD,
    client_for,
    login,
    page_token,
    post,
    users,
)

from rocketq.console import guards, throttle
from rocketq.console import users as users_module
from rocketq.console.app import SECURITY_HEADERS
from rocketq.console.pages.auth import safe_next
from rocketq.console.throttle import LoginThrottle
from rocketq.local.cluster import ClusterState
from rocketq.local.ports import free_port

Client = TestClient  # type: ignore[type-arg]


async def test_pages_need_a_login(console: Client) -> None:
    response = await console.get("/cluster", allow_redirects=False)
    assert response.status == 303
    assert response.headers["Location"] == "/login?next=/cluster"


async def test_wrong_password_is_refused_on_the_page(console: Client) -> None:
    csrf = await page_token(console)
    response = await console.post("/login", data={"username": ADMIN_NAME, "password": "wrong-password",
                                                  "csrf_token": csrf})
    assert response.status == 401
    assert "Wrong user name or password" in await response.text()
    assert (await console.get("/cluster", allow_redirects=False)).status == 303


async def test_unknown_user_is_refused(console: Client) -> None:
    csrf = await page_token(console)
    response = await console.post("/login", data={"username": "mallory", "password": ADMIN_PASSWORD,
                                                  "csrf_token": csrf})
    assert response.status == 401


async def test_login_gives_a_new_session_and_logout_ends_it(console: Client) -> None:
    await console.get("/login")
    before = console.session.cookie_jar.filter_cookies(console.make_url("/"))[guards.COOKIE_NAME].value
    await login(console, ADMIN_NAME, ADMIN_PASSWORD)
    after = console.session.cookie_jar.filter_cookies(console.make_url("/"))[guards.COOKIE_NAME].value
    assert before != after  # a session id known before login is worthless after it
    assert (await console.get("/cluster")).status == 200
    response = await post(console, "/logout", {})
    assert response.status == 303
    assert (await console.get("/cluster", allow_redirects=False)).status == 303


async def test_login_without_csrf_token_is_refused(console: Client) -> None:
    await console.get("/login")
    response = await console.post("/login", data={"username": ADMIN_NAME, "password": ADMIN_PASSWORD})
    assert response.status == 403
    assert "CSRF" in await response.text()


async def test_post_with_a_wrong_csrf_token_is_refused(admin_console: Client) -> None:
    response = await admin_console.post("/logout", data={"csrf_token": "forged"})
    assert response.status == 403
    assert (await admin_console.get("/cluster")).status == 200  # still logged in


async def test_csrf_token_of_another_session_is_refused(cluster, admin_console: Client) -> None:  # type: ignore[no-untyped-def]
    other = await client_for(cluster.namesrv)
    try:
        foreign = await page_token(other)
    finally:
        await other.close()
    response = await admin_console.post("/logout", data={"csrf_token": foreign})
    assert response.status == 403


def change_routes(client: Client) -> list[str]:
    paths = {r.resource.canonical for r in client.app.router.routes() if r.method == "POST" and r.resource}
    return sorted(paths - guards.ANY_ROLE_POSTS)


async def test_read_only_role_is_refused_every_change(reader_console: Client) -> None:
    paths = change_routes(reader_console)
    assert "/topics" in paths and "/topics/delete" in paths
    for path in paths:
        response = await post(reader_console, path, {"topic": "console-refused", "group": "g"})
        assert response.status == 403, path
        assert "read-only" in await response.text()
    refused = [e for e in reader_console.app[guards.keys.AUDIT].recent if e.outcome == "refused"]
    assert [e.action for e in refused] == [f"POST {p}" for p in paths]
    assert all(e.user == READER_NAME for e in refused)


async def test_every_change_needs_the_csrf_token(admin_console: Client) -> None:
    for path in change_routes(admin_console):
        for data in ({"topic": "console-csrf"}, {"topic": "console-csrf", "csrf_token": "forged"}):
            response = await admin_console.post(path, data=data)
            assert response.status == 403, path
            assert "CSRF" in await response.text()
    assert [e.action for e in admin_console.app[guards.keys.AUDIT].recent] == ["login"]  # nothing attempted


async def test_changes_need_a_login(console: Client) -> None:
    for path in change_routes(console):
        response = await post(console, path, {}, from_page="/login")
        assert response.status == 403, path


async def test_audit_file_records_logins(admin_console: Client) -> None:
    path = admin_console.app[guards.keys.CONFIG].audit_file
    lines = [orjson.loads(line) for line in path.read_text().splitlines()]
    assert lines[-1]["user"] == ADMIN_NAME and lines[-1]["action"] == "login" and lines[-1]["outcome"] == "ok"
    page = await (await admin_console.get("/audit")).text()
    assert "login" in page and ADMIN_NAME in page


async def test_unknown_page_is_a_404_page(admin_console: Client) -> None:
    response = await admin_console.get("/no/such/page")
    assert response.status == 404
    text = await response.text()
    assert "Not Found" in text and "Traceback" not in text


async def test_unreachable_name_server_is_a_503_page() -> None:
    client = await client_for(f"127.0.0.1:{free_port()}")
    try:
        await login(client, ADMIN_NAME, ADMIN_PASSWORD)
        response = await client.get("/cluster")
        assert response.status == 503
        text = await response.text()
        assert "Cannot reach the cluster" in text and "Traceback" not in text
    finally:
        await client.close()


async def test_security_headers_and_static_assets(console: Client) -> None:
    response = await console.get("/static/console.css")
    assert response.status == 200
    assert "header.top" in await response.text()
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value
    assert (await console.get("/static/console.js")).status == 200


def test_next_only_leads_to_this_site() -> None:
    assert safe_next("/topics?x=1") == "/topics?x=1"
    for hostile in ("//evil.example/", "https://evil.example/", "/\\evil.example", "", None):
        assert safe_next(hostile) == "/"


async def test_repeated_failed_logins_are_throttled(cluster, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(throttle, "MAX_FAILURES", 3)
    console = await client_for(cluster.namesrv)
    try:
        await guess_then_login(console)
    finally:
        await console.close()


async def guess_then_login(console: Client) -> None:
    for _ in range(3):
        csrf = await page_token(console)
        response = await console.post("/login", data={"username": ADMIN_NAME, "password": "guess-guess",
                                                      "csrf_token": csrf})
        assert response.status == 401
    csrf = await page_token(console)
    response = await console.post("/login", data={"username": ADMIN_NAME, "password": ADMIN_PASSWORD,
                                                  "csrf_token": csrf})
    assert response.status == 429  # even the right password waits out the window
    assert "Too many failed logins" in await response.text()


def test_throttle_window_passes() -> None:
    now = [0.0]
    throttle = LoginThrottle(max_failures=2, window=60, clock=lambda: now[0])
    throttle.failed("a")
    throttle.failed("a")
    assert throttle.blocked_for("a") == 60 and throttle.blocked_for("b") == 0
    now[0] = 61
    assert throttle.blocked_for("a") == 0
    throttle.failed("a")
    throttle.succeeded("a")
    assert throttle.blocked_for("a") == 0


async def test_a_changed_users_file_takes_effect_without_a_restart(cluster: ClusterState, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(users_module, "RELOAD_CHECK_S", 0.0)
    path = tmp_path / "users"
    path.write_text("".join(f"{u.name}:{u.role.value}:{u.password_hash}\n" for u in users().values()))
    reader_client = await client_for(cluster.namesrv, users_file=path)
    admin_client = await client_for(cluster.namesrv, users_file=path)
    try:
        await login(reader_client, READER_NAME, READER_PASSWORD)
        await login(admin_client, ADMIN_NAME, ADMIN_PASSWORD)
        refused = await post(reader_client, "/topics", {"topic": ""})
        assert refused.status == 403
        reader = users()[READER_NAME]
        path.write_text(f"{reader.name}:admin:{reader.password_hash}\n")
        assert (await admin_client.get("/cluster", allow_redirects=False)).status == 303, "alice was removed"
        allowed = await post(reader_client, "/topics", {"topic": ""})
        assert allowed.status == 400, "bob is an admin now: past the role check, his empty form is refused"
    finally:
        await reader_client.close()
        await admin_client.close()
