# The two commands of the README: `make demo` (the main job) and `make test`. Each sets itself up first.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export MUJOCO_GL ?= egl
export HF_HUB_OFFLINE ?= 1

.PHONY: setup demo test test-all bench lint

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/cosmos-robot demo --out demo_out

test: setup
	$(PY) -m pytest -q -p no:cacheprovider

# Everything, the slow tests too (CI runs this).
test-all: setup
	$(PY) -m pytest -q -p no:cacheprovider -m "slow or not slow"

bench: setup
	$(PY) benchmarks/bench_collect.py --quick --json out/bench_collect.json

lint: setup
	$(VENV)/bin/ruff check cosmos_robot tests benchmarks
