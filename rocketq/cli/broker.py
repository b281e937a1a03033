"""``rocketq broker -c broker.conf``: run a broker from a RocketMQ-style config file.

The file uses Apache RocketMQ's key names, so a broker.conf written for RocketMQ works as it
is. Keys rocketq does not implement are reported once and ignored. Environment variables
NAMESRV_ADDR and BROKER_IP1 override the file (containers), and command-line flags override
both (tests, laptops). Every value, the store's included, is checked here, before anything
binds or opens; a bad one is one line on stderr and exit code 2 (``serving`` lists the codes).
``--ordinal-from-hostname`` lets a StatefulSet pod derive its brokerId
from its ordinal (``name-N``), with the master's ordinal read from ``masterOrdinal`` beside the config file;
with ``enableDLegerCommitLog=true`` it derives ``dLegerSelfId`` (``nN``) instead, and Raft decides the role.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

import click

from rocketq import settings
from rocketq.acl.plainacl import AclFileError
from rocketq.acl.settings import AclSettings
from rocketq.broker.settings import BrokerBehaviour, BrokerIdentity, BrokerRole
from rocketq.cli import serving
from rocketq.dledger import brokerservice, peers
from rocketq.dledger.settings import DLedgerSettings
from rocketq.ha.settings import HASettings
from rocketq.proxy.settings import ProxySettings
from rocketq.settings import SettingsError
from rocketq.store.configfiles import ConfigFileError
from rocketq.store.mappedfile import StoreFileError
from rocketq.store.settings import StoreSettings

log = logging.getLogger("rocketq.broker")

SETTINGS_GROUPS = (BrokerIdentity, BrokerBehaviour, StoreSettings, HASettings, AclSettings, DLedgerSettings,
                   ProxySettings)
ORDINAL = re.compile(r"-(\d+)$")
MASTER_ORDINAL_FILE_NAME = "masterOrdinal"


def ordinal_identity(hostname: str, master_ordinal: int, *, dledger: bool = False) -> dict[str, str]:
    """brokerId and brokerRole for a StatefulSet pod: the master gets 0, the others unique ids;
    a DLedger member's dLegerSelfId instead (pod N is nN; Raft decides the role)."""
    match = ORDINAL.search(hostname)
    if match is None:
        raise SettingsError(f"hostname {hostname!r} does not end in -<ordinal>")
    ordinal = int(match.group(1))
    if dledger:
        return {"dLegerSelfId": f"n{ordinal}"}
    if ordinal == master_ordinal:
        return {"brokerId": "0"}
    broker_id = ordinal + 1 if ordinal < master_ordinal else ordinal
    return {"brokerId": str(broker_id), "brokerRole": BrokerRole.SLAVE.value}


NOT_YET_IMPLEMENTED = {
    "enableControllerMode": "controller mode is not implemented yet: brokerRole decides the role",
}


def ignored_key_warnings(unknown: list[str]) -> list[str]:
    """One line for all ignored keys, plus a line per ignored key that changes how a broker behaves."""
    if not unknown:
        return []
    lines = [f"ignoring broker.conf keys rocketq does not implement: {', '.join(unknown)}"]
    lines += [f"{key}: {why}" for key, why in NOT_YET_IMPLEMENTED.items() if key in unknown]
    return lines


def load(
    config: str | None, overrides: dict[str, str]
) -> tuple[BrokerIdentity, BrokerBehaviour, StoreSettings, list[str]]:
    values = settings.read_properties(config) if config else {}
    unknown = settings.unknown_keys({**values, **overrides}, SETTINGS_GROUPS)
    identity = settings.build(BrokerIdentity, values, overrides=overrides)
    behaviour = settings.build(BrokerBehaviour, values, overrides=overrides)
    store = settings.build(StoreSettings, values, overrides=overrides)
    store.validate()
    return identity, behaviour, store, unknown


CONFIG_ERRORS = (StoreFileError, ConfigFileError, AclFileError)
"""Start-up failures that retrying cannot fix: the store's files do not fit the settings (a
changed mappedFileSizeCommitLog, segments missing from the middle), its metadata is damaged, or
plain_acl.yml (aclEnable=true) is missing or broken."""


def load_ha(config: str | None, overrides: dict[str, str]) -> HASettings:
    """The master/slave replication settings (enableDLegerCommitLog among them)."""
    values = settings.read_properties(config) if config else {}
    return settings.build(HASettings, values, overrides=overrides)


def load_dledger(config: str | None, overrides: dict[str, str]) -> DLedgerSettings:
    """A DLedger member's group and timing settings, the membership checked (dLegerPeers must
    name dLegerSelfId, whose number gives the member's brokerId as a follower)."""
    values = settings.read_properties(config) if config else {}
    dledger = settings.build(DLedgerSettings, values, overrides=overrides)
    try:
        dledger.group()
        brokerservice.slave_broker_id(dledger.dleger_self_id)
    except (peers.PeersError, ValueError) as exc:
        raise SettingsError(str(exc)) from None
    return dledger


def _dledger_enabled(config: str | None, overrides: dict[str, str]) -> bool:
    return load_ha(config, overrides).enable_dleger_commit_log


@click.command("broker")
@click.option("-c", "--config", "config", type=click.Path(dir_okay=False), help="broker.conf (RocketMQ keys)")
@click.option("-n", "--namesrv-addr", help="name servers host:port;host:port (overrides the file)")
@click.option("-p", "--listen-port", type=int, help="remoting port (overrides listenPort; 0 = any free port)")
@click.option("--store-dir", type=click.Path(file_okay=False), help="storePathRootDir override")
@click.option("--metrics-port", type=int,
              help="HTTP /metrics and /health port (overrides metricsPort; 0 = any free port, -1 = off)")
@click.option("--ordinal-from-hostname", is_flag=True, help="derive brokerId from the pod's ordinal (StatefulSet)")
@click.option(
    "--master-ordinal-file",
    help="file holding the master's ordinal (with --ordinal-from-hostname); "
    "default: masterOrdinal beside the -c file, where the operator's ConfigMap puts it",
)
@click.option("--set", "extra", multiple=True, metavar="KEY=VALUE", help="any broker.conf key (repeatable)")
def command(
    config: str | None,
    namesrv_addr: str | None,
    listen_port: int | None,
    store_dir: str | None,
    metrics_port: int | None,
    ordinal_from_hostname: bool,
    master_ordinal_file: str | None,
    extra: tuple[str, ...],
) -> None:
    """Run a broker."""
    from rocketq.broker.server import BrokerServer
    from rocketq.proxy import local  # grpc loads only for a broker that serves gRPC

    overrides: dict[str, str] = {}
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        overrides[key.strip()] = value.strip()
    flags: tuple[tuple[str, object], ...] = (
        ("namesrvAddr", namesrv_addr),
        ("listenPort", listen_port),
        ("storePathRootDir", store_dir),
        ("metricsPort", metrics_port),
    )
    for flag_key, flag_value in flags:
        if flag_value is not None:
            overrides[flag_key] = str(flag_value)
    try:
        if ordinal_from_hostname:
            ordinal_file = master_ordinal_file or _beside(config, MASTER_ORDINAL_FILE_NAME)
            overrides.update(ordinal_identity(os.environ.get("HOSTNAME", ""), _master_ordinal(ordinal_file),
                                              dledger=_dledger_enabled(config, overrides)))
        identity, behaviour, store, unknown = load(config, overrides)
        ha = load_ha(config, overrides)
        dledger = load_dledger(config, overrides) if ha.enable_dleger_commit_log else None
        acl = settings.build(AclSettings, settings.read_properties(config) if config else {}, overrides=overrides)
        endpoint = local.local_settings(settings.read_properties(config) if config else {}, overrides)
    except SettingsError as exc:
        sys.exit(serving.fail(f"invalid configuration: {exc}", serving.EXIT_BAD_CONFIG))
    for line in ignored_key_warnings(unknown):
        log.warning(line)
    def make() -> BrokerServer | local.BrokerWithEndpoint:
        broker = BrokerServer(identity, behaviour, store, ha, acl, dledger)
        return broker if endpoint is None else local.BrokerWithEndpoint(broker, endpoint)

    code = serving.run(
        make,
        lambda b: f"rocketq broker {identity.broker_name} listening on {b.address}",
        CONFIG_ERRORS,
    )
    sys.exit(code)


def _beside(config: str | None, name: str) -> str:
    return str(Path(config).parent / name) if config else name


def _master_ordinal(path: str) -> int:
    file = Path(path)
    if not file.exists():
        return 0
    try:
        text = file.read_text().strip() or "0"
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read the master ordinal from {path}: {exc}") from None
    if not text.isdigit():
        raise SettingsError(f"{path} holds {text!r}, expected a master ordinal (0, 1, ...)")
    return int(text)
