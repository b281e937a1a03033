# rocketq's front door. `make run` and `make test` work on a brand-new machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: venv run test test-pure test-fast lint bench bench-matrix chaos chaos-dledger clean proto console-screenshots

venv: $(STAMP)

# the C codecs (native/) are compiled by this install too: a changed source reinstalls
$(STAMP): pyproject.toml setup.py $(wildcard native/*.c native/*.h)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,operator,analytics,bench,console]'
	touch $(STAMP)

## run: a local cluster (1 name server + 2 broker groups), a 100 000-message workload, its results
run: venv
	$(VENV)/bin/rocketq --log-level WARNING local demo --messages 100000

## test: static checks (ruff, mypy), the whole suite (native codecs, slow scenarios included), then test-pure
test: lint
	$(PY) -m pytest -q -p no:cacheprovider
	$(MAKE) test-pure

## test-pure: the codec-facing tests again with the pure-Python codecs (ROCKETQ_NATIVE=0, docs/operations.md)
PURE_TESTS ?= tests/protocol tests/store tests/client tests/broker
test-pure: venv
	ROCKETQ_NATIVE=0 $(PY) -m pytest -q -p no:cacheprovider -m "not slow" $(PURE_TESTS)

test-fast: venv
	$(PY) -m pytest -q -m "not slow"

# mypy keeps its own cache: a partial run (e.g. only operator/) caches rocketq_spark as seen from there,
# and a later full run read from that cache reports names that are in fact present.
lint: venv
	$(VENV)/bin/ruff check rocketq operator tests e2e bench spark-apps conftest.py
	$(VENV)/bin/mypy --cache-dir .mypy_cache/lint rocketq operator/rocketq_operator spark-apps/rocketq_spark

## bench: rocketq side by side with NATS JetStream and Redis Streams, issue #11's ratio table
## (docs/benchmarks.md; 5-10 minutes). `make bench BENCH_ARGS=--quick` is a smoke run.
BENCH_ARGS ?=
bench: venv
	$(PY) bench/compare.py $(BENCH_ARGS)

## bench-matrix: rocketq's own benchmark matrix (throughput and latency, both flush modes)
bench-matrix: venv
	$(PY) bench/run_matrix.py

## chaos: the long chaos run of docs/reliability.md (kill -9, SIGSTOP, promotion; 0 acked lost)
CHAOS_FAULTS ?= 100
CHAOS_DURATION ?= 3600
CHAOS_SEED ?= 1
chaos: venv
	$(PY) -m e2e.chaos.runner --faults $(CHAOS_FAULTS) --duration $(CHAOS_DURATION) --seed $(CHAOS_SEED)
	$(MAKE) chaos-dledger

## chaos-dledger: the long DLedger chaos run (kill -9 / SIGSTOP of leader, member, majority; 0 acked lost)
chaos-dledger: venv
	$(PY) -m e2e.chaos.dledger --faults $(CHAOS_FAULTS) --duration $(CHAOS_DURATION) --seed $(CHAOS_SEED)

## proto: regenerate rocketq/proxy/v2 (the apache.rocketmq.v2 gRPC stubs) from rocketq/proxy/proto
proto: venv
	$(PY) -m rocketq.proxy.protogen

## console-screenshots: the console's browser test, saving its screenshots into docs/console/
console-screenshots: venv
	ROCKETQ_CONSOLE_SCREENSHOTS=docs/console $(PY) -m pytest -q -p no:cacheprovider tests/console/test_console_browser.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache rocketq/_native*.so
