"""What both jobs do with their command line before Spark starts: parse, validate, check the cluster.

A job fails early with one clear line (``JobError``, exit code 2) for a bad argument or an
unreachable name server, before paying for a JVM. Settings come from arguments, with the
environment as the default (``NAMESRV_ADDR`` as every RocketMQ tool reads it).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlparse

from rocketq.admin import cluster
from rocketq.admin.client import AdminClient
from rocketq.admin.errors import AdminError, UnavailableError
from rocketq.remoting.errors import RemotingError

EXIT_BAD_INPUT: Final = 2
CHECK_TIMEOUT: Final = 5.0
"""Seconds the pre-flight check gives the name server."""
_RELATIVE: Final = re.compile(r"^-(\d+)([smhd])$")
_UNIT_MS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class JobError(Exception):
    """Bad input or an unusable cluster: reported as one line, exit code 2."""


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--namesrv", default=os.environ.get("NAMESRV_ADDR"),
                   help="name servers host:port[;host:port] (default: $NAMESRV_ADDR)")
    p.add_argument("--output", required=True, help="results directory: a local path or a Hadoop URI")
    p.add_argument("--master", default=None, help="Spark master for a run outside spark-submit (default local[*])")
    return p


def need_namesrv(value: str | None) -> str:
    if not value or not value.strip():
        raise JobError("no name server: pass --namesrv host:port or set NAMESRV_ADDR")
    return value.strip()


def parse_time(text: str, now_ms: int) -> int:
    """``now``, ``-15m``/``-2h``/``-1d`` (before now), epoch milliseconds, or ISO-8601 (UTC if no zone)."""
    value = text.strip()
    if value == "now":
        return now_ms
    relative = _RELATIVE.match(value)
    if relative:
        return now_ms - int(relative.group(1)) * _UNIT_MS[relative.group(2)]
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise JobError(f"time {text!r}: expected now, -<n>[smhd], epoch ms or ISO-8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def local_dir(uri: str) -> Path | None:
    """The local directory a results URI names, or None for a remote file system (s3a://, hdfs://)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else uri)
    return None


async def _check(namesrv: str, topic: str | None, group: str | None) -> None:
    async with AdminClient(namesrv, timeout=CHECK_TIMEOUT) as admin:
        try:
            masters = await cluster.all_masters(admin)
            if topic is not None:
                await admin.topic_route(topic)
            if group is not None and group not in await cluster.known_groups(admin, masters):
                raise JobError(f"consumer group {group!r} is not known to the cluster at {namesrv}")
        except AdminError as exc:
            raise JobError(f"topic {topic!r}: {exc}" if topic else f"the cluster refused: {exc}") from None
        except (RemotingError, OSError) as exc:
            raise JobError(f"name server {namesrv} unreachable: {exc}") from None
        except UnavailableError as exc:
            raise JobError(f"{exc} (name server {namesrv})") from None


def check_cluster(namesrv: str, *, topic: str | None = None, group: str | None = None) -> None:
    """Fail with JobError unless the name server answers and knows the topic and group given."""
    asyncio.run(_check(namesrv, topic, group))


def fail(exc: JobError) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None, spark: Any, *, app_name: str, parse: Callable[[Sequence[str] | None], Any],
         check: Callable[[Any], None], run: Callable[[Any, Any], str]) -> int:
    """A job's whole life: parse and check (exit 2 on bad input), start Spark if not given, run, print."""
    try:
        args = parse(argv)
        check(args)
    except JobError as exc:
        return fail(exc)
    own = spark is None
    if own:
        from rocketq_spark.session import spark_session  # pyspark is needed only from here on

        spark = spark_session(app_name, args.master)
    try:
        print(run(args, spark), flush=True)
    finally:
        if own:
            spark.stop()
    return 0
