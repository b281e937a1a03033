"""rocketq_spark: PySpark analytics for rocketq (and any RocketMQ 4.x remoting cluster).

* ``source``: the ``rocketmq`` data source (batch and streaming) over a topic's messages;
* ``offsets_source``: the ``rocketmq_offsets`` data source, per-queue consumer offsets and lag;
* ``lag`` and ``tracejoin``: the jobs' pure DataFrame transforms;
* ``jobs.consumer_lag`` and ``jobs.trace_analysis``: the two scheduled jobs (read, transform, write).

The sources read through rocketq's own admin client (``rocketq.admin``): no second protocol
implementation lives here. ``session.spark_session`` builds a session with both sources registered.
"""
