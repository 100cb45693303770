# casstor: `make demo` runs the main job on the local node, `make test` the suite.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-all s3-compat bench experiments stop clean

setup: $(STAMP)
	@$(PY) -m casstor_ops.cluster.install
	@# casstor's own bytecode, as a non-editable install has it: where PYTHONDONTWRITEBYTECODE is set (containers,
	@# this project's machines) every command compiled ~130 modules from source, 0.13-0.15 s of each run.
	@$(PY) -m compileall -q casstor_ops
	@# rclone (Debian's package) for the S3 client tests (tests/test_s3_clients.py).
	@command -v rclone >/dev/null || apt-get install -y -q rclone >/dev/null || echo "setup: install rclone for the S3 tests"

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "setup: $(PYTHON) not found: install Python 3.11"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e '.[test]'
	@# The aws CLI pins its own botocore (s3fs needs another): a venv of its own, for the S3 tests.
	@test -x $(VENV)/tools/bin/aws || { $(PYTHON) -m venv $(VENV)/tools && $(VENV)/tools/bin/pip install -q awscli==1.45.11; }
	@$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)

demo: setup
	@$(VENV)/bin/casstor demo

# Unit tests first: they need no node and no Spark, and fail in seconds. The integration run prints its 25
# slowest tests: make test is meant to stay under 30 minutes on 2 cores, and a CI log tells which ones to look at.
test: setup
	@$(PY) -m pytest tests/unit
	@$(PY) -m pytest -m "not cluster and not slow" --ignore=tests/unit --durations=25

test-all: setup
	@$(PY) -m pytest tests/unit
	@$(PY) -m pytest --ignore=tests/unit

# The S3 compatibility suite's subset (docs/s3.md) on a node and server of its own; its venv is .venv/s3tests.
s3-compat: setup
	@$(PY) -m bench.s3_compat

bench: setup
	@$(PY) -m bench.store_restore
	@$(PY) -m bench.spark_ingest
	@$(PY) -m bench.jobs_scaling
	@$(PY) -m bench.key_format
	@$(PY) -m bench.serve
	@$(PY) -m bench.compression
	@$(PY) -m bench.small_files
	@$(PY) -m bench.codec_levels
	@$(PY) -m bench.chunk_sizes
	@$(PY) -m bench.cluster_scaling
	@$(PY) -m bench.row_costs
	@$(PY) -m bench.pack_rows
	@$(PY) -m bench.listing
	@$(PY) -m bench.forget
	@$(PY) -m bench.seams
	@$(PY) -m bench.spark_tasks

experiments: setup
	@$(PY) -m casstor_ops.cli.experiments

stop:
	@test -x $(VENV)/bin/casstor && $(VENV)/bin/casstor cluster stop || true

clean: stop
	rm -rf $(VENV) .pytest_cache
