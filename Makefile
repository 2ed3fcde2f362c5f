# ctxlab developer tasks. The README and CI (.ci/run) both go through these targets, so that
# "works on my machine" and "works in CI" are the same set-up. `make help` lists the targets from
# the `## ` comment after each one.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
SHARED ?= ../shared
# Re-install when pyproject.toml or a plugin's pyproject.toml changes, or when the stamp is missing.
STAMP := $(VENV)/.ctxlab-setup.stamp
PLUGIN_PYPROJECTS := $(sort $(wildcard plugins/*/pyproject.toml))
PLUGIN_DIRS := $(patsubst %/pyproject.toml,%,$(PLUGIN_PYPROJECTS))

export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help setup check-shared browser test demo lint bench lab

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  make %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(STAMP) ## create .venv (if missing) and install ctxlab[dev] + plugins/*/ editable (idempotent)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml $(PLUGIN_PYPROJECTS) | $(PY)
	$(PY) -m pip install --progress-bar off -e '.[dev]' $(foreach d,$(PLUGIN_DIRS),-e ./$(d))
	@touch $(STAMP)

check-shared: ## fail early when ../shared (transcripts/, cases/) is missing
	@for d in transcripts cases; do \
	  if [ ! -d "$(SHARED)/$$d" ]; then \
	    echo "ERROR: $(SHARED)/$$d is missing. ctxlab's tests need the shared data folder beside the repository (../shared, with transcripts/ and cases/)." >&2; \
	    exit 1; \
	  fi; \
	done

# tests/test_browser.py drives Debian's chromium through Debian's chromedriver. On a machine
# without them, install them when we can (root with apt-get); otherwise say how.
browser: ## install Debian's chromium + chromium-driver for the browser test when missing (as root)
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "chromium or chromedriver not found: installing them from Debian's packages"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	  else \
	    echo "WARNING: chromium/chromedriver missing: run 'apt-get install chromium chromium-driver' as root, or the browser test skips (fails under CI=true)" >&2; \
	  fi; \
	fi

# pytest runs its testpaths (pyproject.toml): tests/ and every plugins/*/tests.
# pytest exit code 5 means "no tests collected": that is a failure here, not a pass.
# Every runner always runs, so that one failing does not hide another's result. The regression
# cases are three folders: cases/ (passing since they were added), cases/new and cases/next (the newer ones).
test: setup check-shared browser ## the whole suite: pytest over tests/ and plugins/*/tests, ../shared/cases, cases/new and cases/next
	@export MPLBACKEND=Agg; status=0; \
	$(PY) -m pytest || { rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests (exit 5): failing" >&2; \
	  else echo "make test: pytest failed (exit $$rc)" >&2; fi; status=1; }; \
	$(PY) $(SHARED)/cases/run_cases.py || { echo "make test: regression cases failed (exit $$?)" >&2; status=1; }; \
	$(PY) $(SHARED)/cases/run_cases.py --cases $(SHARED)/cases/new || { echo "make test: new regression cases failed (exit $$?)" >&2; status=1; }; \
	$(PY) $(SHARED)/cases/run_cases.py --cases $(SHARED)/cases/next || { echo "make test: next regression cases failed (exit $$?)" >&2; status=1; }; \
	exit $$status

demo: setup ## replay the bundled sample transcript into out/demo (no API key, no network)
	$(VENV)/bin/ctxlab replay --out out/demo

lint: setup ## ruff check, ruff format --check, the import contracts (lint-imports), mypy --strict ctxlab and tools/
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy --strict ctxlab
	$(VENV)/bin/mypy --strict tools

bench: setup ## the estimator/strategy benchmarks, a full run -> docs/benchmarks.md
	$(VENV)/bin/ctxlab bench --out docs

# As root (containers) JupyterLab refuses to start without --allow-root. The URL to open, with its
# token, is printed by JupyterLab ("http://localhost:8888/lab?token=...").
lab: setup ## JupyterLab on notebooks/ (--allow-root as root); open the URL it prints
	@flags=""; if [ "$$(id -u)" = 0 ]; then flags="--allow-root"; fi; \
	echo "make lab: starting JupyterLab on notebooks/ $$flags; open the http://localhost:...?token=... URL it prints"; \
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $$flags
