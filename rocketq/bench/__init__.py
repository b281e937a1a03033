"""Measurement tools; the numbers they print belong in docs/benchmarks.md, never in tests.

* ``loadgen``: the producer/consumer load generator behind ``rocketq bench`` (rates, processes,
  end-to-end latency from a stamp in each body).
* ``storeappend``: ``python -m rocketq.bench.storeappend``, store append throughput without
  the network.

The drivers that run these in a fixed matrix, and the CPU-per-message hot-path measurements,
are scripts in the repository's ``bench/`` folder (``run_matrix.py``, ``run_ha.py``,
``hotpath.py``).
"""
