"""Running a long-lived server process: the event loop, signals, the ready line, exit codes.

Shared by ``rocketq namesrv`` and ``rocketq broker``: start the server, print one line saying
where it listens (tests and ``rocketq local`` wait for it), run until SIGTERM or SIGINT, then close
it cleanly so a broker flushes and unregisters before the process exits.

A process that cannot start says why in one line on stderr (no traceback) and exits with a
code a supervisor can act on:

- ``EXIT_BAD_CONFIG`` (2): starting again unchanged will fail again. A setting is invalid, the
  config file cannot be read, or the files the settings point at do not fit them (a CommitLog
  written with another ``mappedFileSizeCommitLog``, a damaged ``topics.json``).
- ``EXIT_CANNOT_START`` (1): the configuration is fine but the machine is not ready, and a
  later attempt may succeed: a port is taken, the store is locked by another running broker.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Final, Protocol, TypeVar

from rocketq import eventloop
from rocketq.settings import SettingsError

log = logging.getLogger(__name__)

EXIT_OK: Final = 0
EXIT_CANNOT_START: Final = 1
EXIT_BAD_CONFIG: Final = 2


class Server(Protocol):
    async def start(self) -> None: ...
    async def close(self) -> None: ...


S = TypeVar("S", bound=Server)

ConfigErrors = tuple[type[BaseException], ...]
"""Exception types that mean "fix the configuration or its files" for a given server."""


def fail(message: str, code: int) -> int:
    """Report a start-up failure as one line on stderr; returns ``code`` for ``sys.exit``."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    return code


def exit_code(exc: BaseException, config_errors: ConfigErrors = ()) -> int:
    if isinstance(exc, (SettingsError, *config_errors)):
        return EXIT_BAD_CONFIG
    return EXIT_CANNOT_START


def run(
    make_server: Callable[[], S], ready_line: Callable[[S], str], config_errors: ConfigErrors = ()
) -> int:
    """Run a server until a termination signal (on uvloop and with the collector set as
    ``rocketq.eventloop`` says); returns the process exit code."""
    return eventloop.run(_serve(make_server, ready_line, config_errors))


async def _serve(make_server: Callable[[], S], ready_line: Callable[[S], str], config_errors: ConfigErrors) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server: S | None = None
    try:
        server = make_server()
        await server.start()
    except Exception as exc:
        log.debug("start-up failed", exc_info=True)  # the traceback, for --log-level DEBUG only
        if server is not None:
            await _quietly(server.close())
        return fail(f"cannot start: {_describe(exc)}", exit_code(exc, config_errors))
    print(ready_line(server), flush=True)
    await stop.wait()
    await server.close()
    return EXIT_OK


def _describe(exc: BaseException) -> str:
    """The exception's own message; its type too when that message alone would not say much."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename is None:
        return f"{exc.strerror} (errno {exc.errno})"
    text = str(exc)
    known = isinstance(exc, SettingsError | OSError) or type(exc).__module__.startswith("rocketq.")
    return text if known and text else f"{type(exc).__name__}: {text}"


async def _quietly(closing: Awaitable[None]) -> None:
    try:
        await closing
    except Exception as exc:  # the start already failed; report that, not the cleanup
        print(f"warning: cleanup after failed start: {exc}", file=sys.stderr)
