"""rocketq side by side with NATS JetStream and Redis Streams (issue #11): one run, one table.

``bench/compare.py`` is the command; this package is what it is made of, one concept a module:

- ``installing``: finds ``nats-server`` and ``redis-server``, or installs Debian's packages;
- ``servers``: starts each system on loopback (rocketq's local cluster, nats-server with
  JetStream, redis-server with the AOF), the default and the durable (fsync) variant;
- ``clients``: one client per system behind one interface (``clients.api.StreamClient``);
- ``workloads``: the timed loops, identical for every system (sync, pipelined, batched,
  consume, paced end-to-end), and the ``Measurement`` each returns;
- ``agent``: the client processes that run the workloads, driven over stdin/stdout;
- ``procstats``: servers' CPU time and peak memory from /proc;
- ``plans``: the list of workloads and their message counts (full or quick);
- ``runner``: one run, the workloads interleaved across systems and repeated;
- ``report``: medians, ranges, the ratio table, the detail table, the JSON file.

Nothing here asserts a speed; tests/bench only checks that a quick run produces every row.
"""
