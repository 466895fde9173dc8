# mk/xla.mk -- the second Python environment, for the torch_xla backends.
#
# Include it from the top-level Makefile:   include mk/xla.mk
# (or use it alone:                         make -f mk/xla.mk xla-env)
#
#   make xla-env     create .venv-xla and install requirements-xla.txt (idempotent;
#                    first time ~3 min and ~7 GB: torch 2.9.1 on PyPI is the CUDA build)
#   make xla-check   print the torch / torch_xla versions on the PJRT CPU device
#   make test-xla    run tests/xla_peers with the main environment's pytest
#   make xla-clean   remove .venv-xla
#
# Knobs: XLA_PYTHON_BASE (interpreter that creates the venv: CPython 3.10-3.13),
# XLA_VENV (where the venv lives; when it is not .venv-xla, point the harness at
# it with DYNSHAPE_XLA_PYTHON=$(XLA_VENV)/bin/python -- test-xla does so),
# XLA_PIP_FLAGS (extra pip flags), XLA_TRIES (download tries, default 5).
#
# The ~3.5 GB of wheels are downloaded first into $(XLA_WHEELS), up to XLA_TRIES
# times (mk/retry): pip skips the files already there, so a cut connection costs
# one file, not the whole set. The install then reads only that folder, which is
# removed once the install succeeds.
# The stamp $(XLA_VENV)/.installed is written only after the install and an
# `import torch, torch_xla` succeed, and is redone when requirements-xla.txt
# changes. A failed run leaves no stamp; running again retries the install.

XLA_PYTHON_BASE ?= python3
XLA_VENV        ?= .venv-xla
XLA_PY          := $(XLA_VENV)/bin/python
XLA_REQS        ?= requirements-xla.txt
XLA_PIP_FLAGS   ?=
XLA_MAIN_PY     ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
XLA_TRIES       ?= 5
XLA_WHEELS      ?= $(XLA_VENV)/.wheels
# uv (installed into the main venv by `make setup`) keeps one cache of unpacked
# wheels and hard-links them into the venv: a second clone's xla-env takes
# seconds instead of copying ~7 GB again. Where it is not executable (mk/xla.mk
# used alone, or XLA_UV= ), pip downloads into $(XLA_WHEELS) and installs from there.
XLA_UV          ?= .venv/bin/uv
# torch_xla 2.9.0's wheel carries a torchax of its own (an older one: it imports flax, which
# is not installed), in the same site-packages folder as PyPI's torchax: which one's files
# land last depends on the installer's unpacking order. PyPI's (the pin in $(XLA_REQS)) is
# installed again over it, and the stamp requires `import torchax`.
XLA_TORCHAX     = $(shell grep -E '^torchax==' $(XLA_REQS))

.PHONY: xla-env xla-check xla-clean test-xla

xla-env: $(XLA_VENV)/.installed

$(XLA_VENV)/.installed: $(XLA_REQS)
	@set -e; \
	ver=$$($(XLA_PYTHON_BASE) -c 'import sys; print("%d.%d" % sys.version_info[:2])') || { \
	  echo "xla-env: '$(XLA_PYTHON_BASE)' is not a working Python; set XLA_PYTHON_BASE=/path/to/python3.11" >&2; exit 1; }; \
	case "$$ver" in 3.10|3.11|3.12|3.13) ;; *) \
	  echo "xla-env: torch_xla 2.9.0 has wheels for CPython 3.10-3.13 only; '$(XLA_PYTHON_BASE)' is $$ver (set XLA_PYTHON_BASE)" >&2; exit 1;; esac; \
	if [ ! -x $(XLA_PY) ]; then \
	  echo "xla-env: creating $(XLA_VENV) with $(XLA_PYTHON_BASE) (Python $$ver)"; \
	  $(XLA_PYTHON_BASE) -m venv $(XLA_VENV) || { echo "xla-env: '$(XLA_PYTHON_BASE) -m venv $(XLA_VENV)' failed" >&2; exit 1; }; \
	fi; \
	echo "xla-env: installing $(XLA_REQS) into $(XLA_VENV) (first time: ~3 min, ~7 GB)"; \
	if [ -x "$(XLA_UV)" ]; then \
	  mk/retry $(XLA_TRIES) xla-env mk/uv $(XLA_UV) pip install --quiet --python $(XLA_PY) $(XLA_PIP_FLAGS) -r $(XLA_REQS) || { \
	    echo "xla-env: 'uv pip install -r $(XLA_REQS)' into $(XLA_VENV) FAILED $(XLA_TRIES) times (see above); what did arrive stays in uv's cache; no stamp written" >&2; exit 1; }; \
	  mk/uv $(XLA_UV) pip install --quiet --python $(XLA_PY) $(XLA_PIP_FLAGS) --no-deps --reinstall $(XLA_TORCHAX) || { \
	    echo "xla-env: reinstalling $(XLA_TORCHAX) over torch_xla's copy FAILED; no stamp written" >&2; exit 1; }; \
	else \
	mk/retry 2 xla-env $(XLA_PY) -m pip install --quiet --upgrade pip $(XLA_PIP_FLAGS) || true; \
	resume=; $(XLA_PY) -m pip download --help | grep -q -- --resume-retries && resume=--resume-retries=10; \
	mk/retry $(XLA_TRIES) xla-env $(XLA_PY) -m pip download --quiet $$resume $(XLA_PIP_FLAGS) -d $(XLA_WHEELS) -r $(XLA_REQS) || { \
	  echo "xla-env: downloading $(XLA_REQS) into $(XLA_WHEELS) FAILED $(XLA_TRIES) times (see above); what did arrive stays there for the next run; no stamp written" >&2; exit 1; }; \
	$(XLA_PY) -m pip install --no-index --find-links $(XLA_WHEELS) $(XLA_PIP_FLAGS) -r $(XLA_REQS) || { \
	  echo "xla-env: 'pip install -r $(XLA_REQS)' from $(XLA_WHEELS) into $(XLA_VENV) FAILED (see above); no stamp written" >&2; exit 1; }; \
	$(XLA_PY) -m pip install --quiet --no-index --find-links $(XLA_WHEELS) --no-deps --force-reinstall $(XLA_TORCHAX) || { \
	  echo "xla-env: reinstalling $(XLA_TORCHAX) over torch_xla's copy FAILED; no stamp written" >&2; exit 1; }; \
	rm -rf $(XLA_WHEELS); \
	fi; \
	PJRT_DEVICE=CPU $(XLA_PY) -c "import torch, torch_xla, torchax; print('xla-env: torch', torch.__version__, '+ torch_xla', torch_xla.__version__, '+ torchax', torchax.__version__)" || { \
	  echo "xla-env: installed, but 'import torch, torch_xla, torchax' fails in $(XLA_VENV); no stamp written" >&2; exit 1; }; \
	touch $@

xla-check: $(XLA_VENV)/.installed
	PJRT_DEVICE=CPU $(XLA_PY) -c "import torch, torch_xla; print(torch.__version__, torch_xla.__version__)"

test-xla: $(XLA_VENV)/.installed
	DYNSHAPE_XLA_PYTHON=$(abspath $(XLA_PY)) $(XLA_MAIN_PY) -m pytest -q tests/xla_peers

xla-clean:
	rm -rf $(XLA_VENV)
