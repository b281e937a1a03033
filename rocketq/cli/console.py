"""``rocketq console``: serve the web console (``rocketq.console``) for one cluster's name servers.

Users come from ``--users FILE`` (``name:role:argon2-hash`` lines; a Kubernetes Secret mounted as
a file works as is). ``--add-user NAME:ROLE --users FILE`` asks for a password and appends the
line, then exits. Without ``--users`` the console makes one ``admin`` account with a random
password and prints it once on stderr: enough for a laptop, never silently open.

It listens on 127.0.0.1 unless told otherwise (``--host 0.0.0.0`` in a container) and prints
``rocketq console listening on http://HOST:PORT`` once it serves; SIGTERM or SIGINT stop it.
The web parts are the ``console`` extra (``pip install rocketq[console]``), imported only here.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

import click

from rocketq.admin.client import DEFAULT_TIMEOUT
from rocketq.admin.errors import ArgumentError
from rocketq.cli import serving

if TYPE_CHECKING:
    from aiohttp import web

DEFAULT_PORT: Final = 8080
GENERATED_USER: Final = "admin"


@click.command("console")
@click.option("-n", "--namesrvAddr", "namesrv_addr", envvar="NAMESRV_ADDR", help="name servers host:port[;host:port]")
@click.option("-p", "--port", type=int, default=DEFAULT_PORT, show_default=True, envvar="ROCKETQ_CONSOLE_PORT",
              help="HTTP port (0 = any free port; or ROCKETQ_CONSOLE_PORT)")
@click.option("--host", default="127.0.0.1", show_default=True, envvar="ROCKETQ_CONSOLE_HOST",
              help="address to listen on (or ROCKETQ_CONSOLE_HOST)")
@click.option("--users", "users_file", type=click.Path(dir_okay=False, path_type=Path), envvar="ROCKETQ_CONSOLE_USERS",
              help="users file: name:role:argon2-hash lines (or ROCKETQ_CONSOLE_USERS)")
@click.option("--add-user", metavar="NAME:ROLE", help="append a user (role admin or read-only) to --users and exit")
@click.option("--audit-log", type=click.Path(dir_okay=False, path_type=Path),
              help="append the audit log here (JSON lines)")
@click.option("--timeout", type=float, default=DEFAULT_TIMEOUT, show_default=True, help="seconds per admin request")
@click.option("--sample-interval", type=float, default=15.0, show_default=True,
              help="seconds between the charts' samples of the cluster (0: no charts)")
@click.option("--secure-cookies", is_flag=True, help="mark the session cookie Secure (behind HTTPS)")
@click.option("--accessKey", "access_key", envvar="ROCKETQ_ACCESS_KEY", default="",
              help="ACL access key for admin requests")
@click.option("--secretKey", "secret_key", envvar="ROCKETQ_SECRET_KEY", default="", help="ACL secret key")
def command(namesrv_addr: str | None, port: int, host: str, users_file: Path | None, add_user: str | None,
            audit_log: Path | None, timeout: float, sample_interval: float, secure_cookies: bool, access_key: str,
            secret_key: str) -> None:
    """Serve the web console: cluster, topics, groups and messages in a browser."""
    try:
        from rocketq.console import app as console_app
        from rocketq.console import users
    except ImportError as exc:
        sys.exit(serving.fail(f"the console needs the console extra (pip install 'rocketq[console]'): {exc}",
                              serving.EXIT_BAD_CONFIG))
    if add_user is not None:
        _add_user(users_file, add_user)
        return
    if not namesrv_addr:
        raise click.UsageError("give the name servers with -n host:port (or NAMESRV_ADDR)")
    if users_file is not None:
        try:
            accounts = users.load_users(users_file)
        except users.UsersFileError as exc:
            sys.exit(serving.fail(str(exc), serving.EXIT_BAD_CONFIG))
    else:
        password = secrets.token_urlsafe(12)
        accounts = users.parse_users(users.user_line(GENERATED_USER, users.Role.ADMIN, password))
        click.echo(f"no --users file: log in as {GENERATED_USER!r} with password {password!r} "
                   "(valid until this console stops)", err=True)
    try:
        config = console_app.ConsoleConfig(namesrv_addr, accounts, users_file=users_file, audit_file=audit_log,
                                           timeout=timeout, secure_cookies=secure_cookies,
                                           sample_interval=sample_interval, access_key=access_key,
                                           secret_key=secret_key)
        application = console_app.make_app(config)
    except ArgumentError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        asyncio.run(_serve(application, host, port))
    except OSError as exc:
        sys.exit(serving.fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", serving.EXIT_CANNOT_START))


def _add_user(users_file: Path | None, spec: str) -> None:
    from rocketq.console import users as users_module

    if users_file is None:
        raise click.UsageError("--add-user needs --users FILE to append to")
    name, _, role_text = spec.partition(":")
    try:
        role = users_module.Role(role_text or "read-only")
    except ValueError:
        raise click.UsageError(f"role {role_text!r} is not admin or read-only") from None
    password = click.prompt(f"password for {name}", hide_input=True, confirmation_prompt=True)
    try:
        line = users_module.user_line(name, role, password)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    existing = users_module.parse_users(users_file.read_text()) if users_file.exists() else {}
    if name in existing:
        raise click.UsageError(f"{users_file} already has a user {name!r}")
    with users_file.open("a", encoding="utf-8") as out:
        out.write(line + "\n")
    click.echo(f"added {name} ({role.value}) to {users_file}", err=True)


async def _serve(application: web.Application, host: str, port: int) -> None:
    from aiohttp import web

    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0][1] if runner.addresses else port
        print(f"rocketq console listening on http://{host}:{bound}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
