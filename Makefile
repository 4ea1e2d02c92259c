# Quick start: `make run` (the dashboard) and `make test` (the test suite).
# Both create .venv on first use: they need Python >= 3.10 (with python3-venv on Debian/Ubuntu),
# make, and network access to the package index for the dependencies.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP_RUN  := $(VENV)/.installed-run
STAMP_TEST := $(VENV)/.installed-test
STAMP_LINT := $(VENV)/.installed-lint

.PHONY: run test lint typecheck nvml-check python-matrix screenshots bench fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@ $(STAMP_RUN)

$(STAMP_LINT): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,lint]'
	touch $@ $(STAMP_TEST) $(STAMP_RUN)

run: $(STAMP_RUN)
	$(BIN)/gputui $(ARGS)

# Two workers (pytest-xdist) by default, one per core of the project's machines; each test
# module stays on one worker (loadscope), so a module's shared servers start once; the costliest
# modules are handed out first (tests/conftest.py), so no long one is left for the end.
# TEST_WORKERS=0 runs the suite in this process.
TEST_WORKERS ?= 2

test: $(STAMP_TEST)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

lint: $(STAMP_LINT)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

typecheck: $(STAMP_LINT)
	$(BIN)/mypy

# screenshots/*.svg (+ dashboard.png when rsvg-convert is installed) from the simulated GPUs.
screenshots: $(STAMP_RUN)
	$(BIN)/python scripts/export_screenshots.py

# The NVML source end to end against the simulated NVML library in ../shared/fakenvml (needs gcc).
nvml-check: $(STAMP_RUN)
	scripts/nvml-check.sh

# Fresh venvs on Python 3.10-3.13 with the lowest and the newest allowed dependencies.
python-matrix:
	scripts/python-matrix.sh

# A long fuzz campaign over scenario, models and catalog files (60 s per family by default);
# prints cases, tracebacks, hangs and wrong accepts per family. E.g. FUZZ_ARGS="--seconds 600".
fuzz: $(STAMP_TEST)
	$(BIN)/python benchmarks/fuzz.py $(FUZZ_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
