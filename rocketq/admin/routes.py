"""Where things are: a topic's route and the cluster's broker table, as the name server tells.

* ``TopicRoute`` (GET_ROUTEINFO_BY_TOPIC, ``TopicRouteData``): for one topic, the queues each
  broker group holds (``queueDatas``) and every group's member addresses by brokerId
  (``brokerDatas``).
* ``ClusterInfo`` (GET_BROKER_CLUSTER_INFO): every broker group with its cluster and member
  addresses, and each cluster's group names.

Both are ``rocketq.protocol.routedata``'s values, the ones the name server writes; admin reads
them with its fastjson-aware ``adminbodies.load`` (a Java name server writes ``brokerAddrs`` with
bare numeric keys) and adds only the topic a route was asked for. Admin operations pick their
targets from these: a group's master (brokerId 0) receives writes and admin changes; any member
can answer reads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rocketq.admin import adminbodies
from rocketq.protocol import routedata
from rocketq.protocol.routedata import BrokerData as BrokerData
from rocketq.protocol.routedata import ClusterInfo as ClusterInfo
from rocketq.protocol.routedata import QueueData as QueueData


@dataclass(frozen=True, slots=True)
class TopicRoute(routedata.TopicRouteData):
    """A topic's TopicRouteData, with the topic it was asked for (the answer does not name it)."""

    topic: str = ""


def parse_topic_route(topic: str, body: bytes) -> TopicRoute:
    return dataclasses.replace(TopicRoute.from_json(adminbodies.load(body, "topic route")), topic=topic)


def parse_cluster_info(body: bytes) -> ClusterInfo:
    return ClusterInfo.from_json(adminbodies.load(body, "cluster info"))
