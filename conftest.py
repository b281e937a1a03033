"""Settings every test directory shares.

Hypothesis's per-example deadline (200 ms) is a timed assertion: on a loaded 2-core CI machine a
correct parser can miss it and fail a run for nothing. The suite checks behaviour, never speed
(benchmarks do that), so property tests run without a deadline.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("rocketq", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("rocketq")
