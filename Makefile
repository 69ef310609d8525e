# memq: two commands on a fresh machine.
#   make demo   installs everything, starts the services, runs the sample conversation
#   make test   lints (ruff, mypy), runs the whole test suite (unit + real-service integration),
#               then the integration suite again with the mailbox on a 3-node Redis Cluster
# With REDIS_URL / DATABASE_URL unset, embedded servers run from .memq/ (git-ignored).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
MEMQ   := $(VENV)/bin/memq
STAMP  := $(VENV)/.installed-stamp
# The public evaluation data sets (make eval, make bench): not in the repository; set
# MEMQ_EVAL_DATA=<folder> here or in the environment (docs/evaluation.md: which sets, where).
MEMQ_EVAL_DATA ?=
export MEMQ_EVAL_DATA

.PHONY: api bench eval install demo lint test test-unit test-integration test-cluster soak check-deps services-up services-down migrate worker beat flower clean

# memq (the runtime package, with the dev extra) and the lab beside it (lab/: benchmarks,
# evaluation, soak, test helpers), both editable.
$(STAMP): pyproject.toml lab/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memq needs Python >= 3.11; set PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' -e ./lab
	@touch $(STAMP)

install: $(STAMP)

services-up: install
	$(MEMQ) services up

services-down:
	@if [ -x $(MEMQ) ]; then $(MEMQ) services down; else echo "nothing installed"; fi

migrate: services-up
	$(MEMQ) migrate

demo: migrate
	$(MEMQ) demo

# Lint: ruff's rules and formatting, mypy (strict on shared/, producer/, worker/); all
# configured in pyproject.toml.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: install lint
	$(PY) -m pytest
	MEMQ_TEST_REDIS_CLUSTER=1 $(PY) -m pytest tests/integration -q

test-unit: install
	$(PY) -m pytest tests/unit

test-integration: install
	$(PY) -m pytest tests/integration

# The integration suite with the mailbox on a 3-node Redis Cluster (loopback ports 7100-7102,
# MEMQ_TEST_REDIS_CLUSTER_PORT to move them); the Celery broker stays on the standalone Redis.
test-cluster: install
	MEMQ_TEST_REDIS_CLUSTER=1 $(PY) -m pytest tests/integration -q

# The benchmark (not a test): ingest, pipeline, scale-out, retrieval at 10k / 100k stored
# messages and resources, each figure next to its floor; JSON and charts in .memq/bench/.
# `memq bench --scale large` adds 1M messages; `memq bench --quick` is the smoke run. Real
# dialogue text from MEMQ_EVAL_DATA when set, else the shipped sample's.
bench: migrate
	$(MEMQ) bench $(if $(MEMQ_EVAL_DATA),--data $(MEMQ_EVAL_DATA))

# The fault-injection soak: >= 10,000 messages over 50 conversations through real workers,
# Redis, PostgreSQL and a scripted LLM while faults are injected; a table of lost /
# duplicated / time to recover per fault, the JSON report in .memq/soak-report.json.
soak: install
	$(MEMQ) soak --json .memq/soak-report.json

# Known vulnerabilities in the installed packages (PyPI advisories).
check-deps: install
	$(MEMQ) check-deps

# Quality (MEMQ_EVAL_DATA=<dir>, the public data sets; without it each command says which
# sets it needs and where to get them): segmentation of every detector profile next to
# baselines; chapters (the reader's level) at the joins of stitched dialogues and on the demo
# sample, next to events as entries;
# retrieval on LoCoMo through the real producer, workers and database (evidence
# recall at 250-2,000 tokens and the field's session measures, next to baselines; latency);
# one person's memory across conversations on LongMemEval (the field's session and turn
# measures and evidence recall at a budget, memq next to four baselines; ~25 min), and what
# the LLM path costs per 1,000 messages with a scripted LLM (5 questions). JSON and PNG in
# .memq/eval/.
eval: install
	$(MEMQ) eval $(MEMQ_EVAL_DATA)
	$(MEMQ) eval-chapters $(MEMQ_EVAL_DATA)
	$(MEMQ) eval-locomo $(MEMQ_EVAL_DATA) --ablations
	$(MEMQ) eval-longmemeval $(MEMQ_EVAL_DATA)
	$(MEMQ) eval-longmemeval $(MEMQ_EVAL_DATA) --scripted-llm --limit 5

worker: migrate
	$(MEMQ) worker

# The HTTP API (OpenAPI at /openapi.json, docs at /docs) with the MCP server at /mcp, on
# loopback; a key for MEMQ_TENANT is written to .memq/api-key on first start.
api: migrate
	$(MEMQ) api

beat: services-up
	$(MEMQ) beat

flower: services-up
	$(MEMQ) flower

clean: services-down
	rm -rf .memq $(VENV) *.egg-info lab/*.egg-info clients/typescript/node_modules clients/typescript/dist
