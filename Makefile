# The two commands of the README: `make demo` (the main job) and `make test`. Each sets itself up first.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export MUJOCO_GL ?= egl
export HF_HUB_OFFLINE ?= 1

.PHONY: setup demo test bench lint

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/cosmos-robot demo --out demo_out

test: setup
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile

bench: setup
	$(PY) benchmarks/bench_collect.py --quick --json out/bench_collect.json
	$(PY) benchmarks/bench_experts.py --quick --json out/bench_experts.json
	$(PY) benchmarks/bench_sampling.py --quick --json out/bench_sampling.json
	$(PY) benchmarks/bench_train_step.py --quick --json out/bench_train_step.json
	$(PY) benchmarks/bench_training.py --quick --json out/bench_training.json
	$(PY) benchmarks/bench_fd_env.py --quick --json out/bench_fd_env.json
	$(PY) benchmarks/bench_label.py --quick --json out/bench_label.json
	$(PY) benchmarks/bench_policy.py --quick --json out/bench_policy.json

lint: setup
	$(VENV)/bin/ruff check cosmos_robot tests benchmarks
