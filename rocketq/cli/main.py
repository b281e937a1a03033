"""The ``rocketq`` command: one click group, one module per subcommand family.

Each module in ``SUBCOMMANDS`` exposes ``command`` (a click command or group); adding a family is
adding its module here.
"""

from __future__ import annotations

import importlib
import logging
import sys

import click

SUBCOMMANDS = (
    "rocketq.cli.namesrv",
    "rocketq.cli.broker",
    "rocketq.cli.local",
    "rocketq.cli.bench",
    "rocketq.cli.admin",
    "rocketq.cli.proxy",
    "rocketq.cli.console",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
@click.version_option(package_name="rocketq")
def cli(log_level: str) -> None:
    """rocketq: RocketMQ-compatible name servers, brokers, clients and tools."""
    logging.basicConfig(
        level=log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )


for _module in SUBCOMMANDS:
    cli.add_command(importlib.import_module(_module).command)


def main() -> None:
    cli(prog_name="rocketq")
