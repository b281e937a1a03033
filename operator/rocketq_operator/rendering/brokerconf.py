"""broker.conf for one broker group, in Java properties form with RocketMQ's key names.

Every pod of a group reads the same file; what differs per pod (brokerId, SLAVE role,
dLegerSelfId) the broker derives from its ordinal, so one ConfigMap serves the whole
StatefulSet. The operator writes the identity keys (brokerClusterName, brokerName, brokerRole)
and the keys its rendered pods depend on (ports, store path, DLedger group and peers); then
``spec.brokers.config`` adds or overrides anything else, e.g. ``fileReservedTime`` or even
``flushDiskType``. The spec parser has already refused overrides of operator-owned keys.

With ``spec.acl`` the pods mount the ACL Secret at ``ACL_DIR``: ``plain_acl.yml`` is the accounts
file, and ``tools.yml`` (the same file the proxy signs with, ``rendering.proxy``) is the account a
broker signs its own calls with (``innerClientCredentialsFile``): a slave's or DLedger follower's
metadata sync is checked by its master like any client's. A Secret without ``tools.yml`` leaves
those calls unsigned (the broker warns at start), which a cluster without slaves does not need.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketq.acl import innerclient
from rocketq_operator import names
from rocketq_operator.spec import BrokerMode, Cluster

STORE_PATH: Final = "/home/rocketq/store"
ACL_DIR: Final = "/etc/rocketq-acl"
"""Where the pods mount ``spec.acl.secretName``; the Secret's key ``plain_acl.yml`` is the file."""
ACL_FILE: Final = f"{ACL_DIR}/plain_acl.yml"
ACL_FILE_KEY: Final = "rocketmq.acl.plain.file"
"""RocketMQ's property for the account file, a broker.conf key in rocketq (rocketq/acl/settings.py)."""
TOOLS_FILE: Final = f"{ACL_DIR}/tools.yml"
"""The account the servers sign their own calls with: key ``tools.yml`` of the ACL Secret
(RocketMQ's ``conf/tools.yml`` form: ``accessKey``, ``secretKey``)."""
INNER_CLIENT_FILE_KEY: Final = innerclient.FILE_KEY
"""rocketq's key (broker.conf and rmq-proxy.json) naming that file."""
HEADER: Final = "# Rendered by rocketq-operator from the RocketMQCluster spec; edits here are overwritten.\n"


def broker_settings(cluster: Cluster, index: int) -> dict[str, str]:
    """The key/value pairs of a group's broker.conf, operator keys first, overrides after."""
    spec = cluster.spec
    brokers = spec.brokers
    group = names.broker_group(cluster.meta.name, index)
    values: dict[str, str] = {
        "brokerClusterName": cluster.meta.name,
        "brokerName": group,
    }
    if brokers.mode is BrokerMode.MASTER_SLAVE:
        values["brokerRole"] = brokers.broker_role.value
    values.update({
        "flushDiskType": brokers.flush_disk_type.value,
        "storePathRootDir": STORE_PATH,
        "listenPort": str(names.BROKER_PORT),
        "haListenPort": str(names.HA_PORT),
        # rocketq's own default is any free port; the pods' probes and Service need this one
        "metricsPort": str(names.METRICS_PORT),
    })
    if brokers.mode is BrokerMode.DLEDGER:
        values.update({
            "enableDLegerCommitLog": "true",
            "dLegerGroup": group,
            "dLegerPeers": names.dledger_peers(cluster.meta.name, cluster.meta.namespace, index,
                                               brokers.replicas_per_group),
        })
    if spec.acl_secret_name is not None:
        values["aclEnable"] = "true"
        values[ACL_FILE_KEY] = ACL_FILE
        values[INNER_CLIENT_FILE_KEY] = TOOLS_FILE
    for key in sorted(brokers.config):
        values[key] = brokers.config[key]
    return values


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for position, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "=: #!" and (is_key or (char == " " and position == 0)):
            out.append("\\" + char)
        elif char == "\t":
            out.append("\\t")
        else:
            out.append(char)
    return "".join(out)


def format_properties(values: Mapping[str, str]) -> str:
    """Java properties text, one ``key=value`` line each, in the given order."""
    lines = [f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}\n" for k, v in values.items()]
    return HEADER + "".join(lines)


def render_broker_conf(cluster: Cluster, index: int) -> str:
    return format_properties(broker_settings(cluster, index))
