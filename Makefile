# dynshape: `make run` sets up and runs the default profile; `make test` sets up
# and runs the tests. Both are idempotent: the venv is rebuilt only when
# pyproject.toml changes. Installs from the registries are retried (mk/retry):
# a connection cut mid-download once failed CI.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_FLAGS ?= -n 2 --durations=15
# imports write their .pyc files, into our own environments and tree: where
# PYTHONDONTWRITEBYTECODE=1 (this machine) none would, and every one of the
# hundreds of interpreters make test starts compiled torch and jax from source
# (import torch, jax: 7.4 s against 3.8 s). Compiling every file at install
# instead (uv's --compile-bytecode) took ~75 s of a fresh clone's set-up for the
# ~28,000 files of both environments, most never imported.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup hooks run test test-extended check lint opinfo gate gate-left-out asv-quick asv-publish browser-check chromium docs clean

setup: $(STAMP)

EXTRAS := main,models,test,bench,distributed,docs,peers
# uv installs from pip's own sources (mk/uv) and hard-links from one cache, so
# a fresh clone's set-up takes seconds once a clone on this machine has filled
# it (pip copies ~9 GB per clone). Where uv cannot be had, pip installs.
UV_VERSION ?= 0.13.9
UV := $(VENV)/bin/uv

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@mk/retry 3 setup $(PY) -m pip install --quiet 'uv==$(UV_VERSION)' || echo "setup: no uv; pip installs instead" >&2
	if [ -x $(UV) ]; then mk/retry 5 setup mk/uv $(UV) pip install --quiet --python $(PY) -e '.[$(EXTRAS)]'; \
	else mk/retry 3 setup $(PY) -m pip install --quiet --upgrade pip setuptools wheel && \
	  mk/retry 5 setup $(PY) -m pip install --quiet -e '.[$(EXTRAS)]'; fi
	@touch $@

# two workers at a time keep the default profile under 10 minutes on 2 cores;
# for careful timings run `python -m harness run --jobs 1`. `*` is every backend but
# the opt-in ones; naming onnxruntime adds the peer whose job costs seconds, on the
# reports' cases (its quick_leaves_out: 8 jobs, 4-17 s each on the loaded machine)
RUN_FLAGS ?= --quick --jobs 2 --backends '*,onnxruntime'

run: $(STAMP) xla-env
	$(PY) -m harness run $(RUN_FLAGS)

# the tests and the gate but the extended tier (tests/conftest.py's EXTENDED: asv, a
# Dask cluster, a wheel install, whole-model sweeps), within 15 minutes of a fresh
# clone on the idle 2-core machine; CI (.ci/run) runs `make test-extended` after it
test: $(STAMP) xla-env lint docs chromium
	$(PY) -m pytest tests/ cases/ -m "not extended" --ignore=$(GRAMMAR) $(PYTEST_FLAGS)

# the einx grammar suite compares with einx 0.4.3, whose process-wide caches other
# tests patch (backends.einx's build counter): it runs in processes of its own
GRAMMAR := tests/einx_symbolic/test_grammar.py
test-extended: $(STAMP) xla-env chromium
	$(PY) -m pytest tests/ cases/ -m extended --ignore=$(GRAMMAR) $(PYTEST_FLAGS)
	$(PY) -m pytest $(GRAMMAR) $(PYTEST_FLAGS)

# the edit loop's tier (<= 2 min on the idle 2-core machine): lint, the tests not
# marked slow (tests/conftest.py's SLOW: workers, subprocesses, compilers) with
# Hypothesis at its dev profile, and the gate on a handful of jobs (CHECK_GATE,
# a -k expression; its records are not kept). `make test` is the check, `make test-extended` the rest.
CHECK_GATE ?= test_backend_loads or (gnn_edge_divide and unbounded and (torch_eager or jax_jit or einx_symbolic))
check: $(STAMP) lint
	HYPOTHESIS_PROFILE=dev $(PY) -m pytest tests/ -m "not slow" $(PYTEST_FLAGS)
	$(PY) -m pytest cases/ -m "not xla" -k "$(CHECK_GATE)" --dynshape-out none $(PYTEST_FLAGS)

# ruff's rules (pyproject.toml: E W I B UP SIM RUF F, each ignore with its reason),
# the formatter, and mypy over the harness, the backend interface, the environments
# and the size algebra (pyproject.toml's [tool.mypy]: the files and each setting's reason)
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# PyTorch's OpInfo through both reference paths (conformance/opinfo): three samples an
# entry, the StableHLO interpreter too, then the tables by family (docs/opinfo.md);
# `make test` runs the pinned table (tests/opinfo/pinned.tsv) on one sample an entry
opinfo: $(STAMP)
	$(PY) -m conformance.opinfo run --limit 3 --stablehlo-modes bounded,unbounded,interpreter --jobs 2

# the conformance gate alone (the quick profile's jobs)
gate: $(STAMP)
	$(PY) -m pytest cases/ $(PYTEST_FLAGS)

# the jobs the quick profile leaves out (harness/profiles.py), which `make test`'s
# gate lists in one item (test_jobs_the_gate_leaves_out) instead of running
gate-left-out: $(STAMP) xla-env
	DYNSHAPE_GATE_WHOLE=left-out $(PY) -m pytest cases/ $(PYTEST_FLAGS)

# the report's case: compiles and compile time of its jobs (run once, two at a
# time) and one sample of its novel sweep; what it costs: docs/asv.md.
# ASV_QUICK=gnn_edge_divide adds the cached call, ASV_QUICK=. is the whole grid
ASV_QUICK ?= (Catalogue|Compiles)\.\w+\(.gnn_edge_divide.
asv-quick: $(STAMP)
	$(VENV)/bin/asv machine --yes >/dev/null
	$(VENV)/bin/asv run --python=same --quick --show-stderr --set-commit-hash $$(git rev-parse HEAD) -b "$(ASV_QUICK)"

# asv's site from results/asv (asv run), its CDN scripts replaced by copies
# from the npm registry (harness/asv_site.py) so it works offline
asv-publish: $(STAMP)
	$(VENV)/bin/asv publish
	$(PY) -m harness.asv_site --fetch results/asv-html

# Debian's Chromium for the browser tests (they skip, naming this, without it);
# an install that fails (no registry) leaves them skipped rather than failing make
chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium could not be installed: the browser tests will skip"

# the HTML report in headless Chromium (Debian's chromium, installed with apt if
# missing): every image decodes, nothing fails to load; also the latest run's report
browser-check: $(STAMP)
	@command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; }
	@if ls results/*.jsonl >/dev/null 2>&1; then \
	  $(PY) -m harness report --html results/latest.html >/dev/null && \
	  DYNSHAPE_HTML=$(abspath results/latest.html) $(PY) -m pytest tests/test_html.py -q; \
	else $(PY) -m pytest tests/test_html.py -q; fi

# the documentation site (mkdocs.yml, docs/) into results/site; --strict fails on
# a broken link or anchor. mkdocs comes with the `docs` extra of pyproject.toml
docs: $(STAMP)
	$(PY) -m harness.docs_sync --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -q -d results/site

# the commit-msg hook (mk/hooks/): a subject over 72 characters is refused at commit time
hooks:
	cp mk/hooks/commit-msg "$$(git rev-parse --git-path hooks)/commit-msg"

clean:
	rm -rf $(VENV) .pytest_cache results/.cache

include mk/xla.mk
include mk/versions.mk
