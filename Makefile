# casstor: `make demo` runs the main job on the local node, `make test` the suite.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-all bench experiments stop clean

setup: $(STAMP)
	@$(PY) -m casstor_ops.install

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "setup: $(PYTHON) not found: install Python 3.11"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e '.[test]'
	@$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)

demo: setup
	@$(VENV)/bin/casstor demo

test: setup
	@$(PY) -m pytest -m "not cluster and not slow"

test-all: setup
	@$(PY) -m pytest

bench: setup
	@$(PY) bench/store_restore.py
	@$(PY) bench/spark_ingest.py
	@$(PY) bench/jobs_scaling.py
	@$(PY) bench/key_format.py

experiments: setup
	@$(PY) -m casstor_ops.experiments

stop:
	@test -x $(VENV)/bin/casstor && $(VENV)/bin/casstor cluster stop || true

clean: stop
	rm -rf $(VENV) .pytest_cache
