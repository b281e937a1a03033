"""The module ``kopf run`` loads: ``kopf run -m rocketq_operator.main --all-namespaces``.

Importing it registers every rocketq handler on kopf's default registry (that is how ``kopf
run -m`` finds handlers), with the settings read from ``ROCKETQ_OPERATOR_*`` environment
variables (see ``runtime.OperatorConfig``; a bad value stops the operator at start with a
message naming the variable) and the BrokerAdmin that speaks RocketMQ's remoting protocol.

Operational defaults: standalone (no kopf peering; the chart runs one replica with
``strategy: Recreate``), JSON logs, /metrics on port 9090 (kopf's ``--liveness`` takes 8080 in
the image and the chart). Finalizers are used only where deletion needs work: topics and
consumer groups must be removed from the brokers. Clusters carry none (see ``ticking``), so
they can be deleted while the operator is stopped.
"""

from __future__ import annotations

import logging

import kopf

from rocketq_operator import handlers, remoteadmin
from rocketq_operator.runtime import OperatorConfig

CONFIG = OperatorConfig.from_env()


def configure_logging(config: OperatorConfig) -> None:
    """Structured logs: one JSON object per line, keeping the verbosity ``kopf run`` was given.

    ``kopf run`` sets up logging before it imports this module, so this runs at import, before
    the first handler logs anything."""
    if config.json_logs:
        kopf.configure(debug=logging.getLogger().level <= logging.DEBUG, log_format=kopf.LogFormat.JSON)


configure_logging(CONFIG)
handlers.register(kopf.get_default_registry(), CONFIG, remoteadmin.RemotingBrokerAdmin.from_config)
