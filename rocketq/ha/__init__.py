"""Master/slave replication (RocketMQ's HA service): a slave keeps a byte-identical CommitLog.

- ``protocol``: the two frames on the HA port (slave offset report, master transfer).
- ``master``: the HA server a master runs; one streaming connection per slave.
- ``slave``: the client a slave runs; reports its offset, appends what the master sends.
- ``syncwait``: SYNC_MASTER's waiting sends, released by slave acknowledgements.
- ``metasync``: a slave's periodic copy of the master's topics, groups and offsets.
- ``service``: the one object the broker owns, and the replication state it reports.

See docs/ha.md for how it fits together and what each role guarantees.

Timeouts here use ``asyncio.timeout``, never ``asyncio.wait_for``: on Python 3.11, a
``wait_for`` whose inner read completes in the same loop turn as a cancel returns the result
and drops the cancel, and a replication loop that drops its cancel makes the broker's shutdown
wait forever (tests/ha/test_ha_inprocess.py shows it).
"""
