# rocketq's front door. `make run` and `make test` work on a brand-new machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: venv run test test-fast lint bench chaos clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,operator,analytics,console]'
	touch $(STAMP)

## run: a local cluster (1 name server + 2 broker groups), a 100 000-message workload, its results
run: venv
	$(VENV)/bin/rocketq --log-level WARNING local demo --messages 100000

## test: static checks (ruff, mypy), then the whole suite, slow scenarios included
test: lint
	$(PY) -m pytest -q -p no:cacheprovider

test-fast: venv
	$(PY) -m pytest -q -m "not slow"

# mypy keeps its own cache: a partial run (e.g. only operator/) caches rocketq_spark as seen from there,
# and a later full run read from that cache reports names that are in fact present.
lint: venv
	$(VENV)/bin/ruff check rocketq operator tests e2e bench spark-apps conftest.py
	$(VENV)/bin/mypy --cache-dir .mypy_cache/lint rocketq operator/rocketq_operator spark-apps/rocketq_spark

## bench: the benchmark matrix of docs/benchmarks.md (throughput and latency, both flush modes)
bench: venv
	$(PY) bench/run_matrix.py

## chaos: the long chaos run of docs/reliability.md (kill -9, SIGSTOP, promotion; 0 acked lost)
CHAOS_FAULTS ?= 100
CHAOS_DURATION ?= 3600
CHAOS_SEED ?= 1
chaos: venv
	$(PY) -m e2e.chaos.runner --faults $(CHAOS_FAULTS) --duration $(CHAOS_DURATION) --seed $(CHAOS_SEED)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
