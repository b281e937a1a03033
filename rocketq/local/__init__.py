"""rocketq on one machine: a whole cluster as local processes, and the demo that exercises it.

* ``cluster``: ``LocalCluster`` behind ``rocketq local up|down|status``, ``make run`` and the
  integration tests: starts a name server and broker groups as detached processes and records them.
* ``demo``: ``rocketq local demo``: a cluster, a topic, messages sent and consumed, lag reported.
* ``ports``: ``free_port``, for anything that starts a local process on a port of its choosing.
* ``processes``: one name server or broker process per handle, on free ports, stopped by its PID:
  what tests and bench drivers start and stop themselves.
"""
