"""The admin client behind ``rocketq admin``: mqadmin's operations over RocketMQ's admin requests.

Layers, each importing only the ones above it:

* ``errors``: AdminError (a server's error code, by RocketMQ name), BodyError, ArgumentError.
* ``fastjson``: reads the JSON dialect Java's fastjson writes (objects and numbers as map keys).
* ``adminbodies``, ``routes``, ``stats``: admin bodies as frozen values (topic and group configs,
  routes and cluster info, offset tables keyed by MessageQueue).
* ``client``: ``AdminClient``, one typed async method per request to a name server or broker.
* ``cluster`` and ``messages``: operations that pick brokers (every master of a cluster, every
  group of a route) and combine answers (lag across brokers, messages by key across brokers).
* ``timestamps``, ``tables``, ``views``: mqadmin's time formats, aligned columns, and each
  value's mqadmin-style text and ``--json`` form (``rocketq.cli.admin`` prints these).

It never imports the broker or the SDK: it speaks the wire protocol, so it works against Apache
RocketMQ servers as well as rocketq's.
"""
