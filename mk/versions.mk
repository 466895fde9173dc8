# mk/versions.mk -- environments of other releases of the systems under test,
# for `harness run --versions SYSTEM=V1,V2` (backends/envs.py declares them,
# one ENVS entry per system version: torch-2.9.1 reuses .venv-xla, torch-2.13.0
# and jax-0.10.2 are the main environment; this file creates the one that is
# new, jax-0.12.0.1).
#
#   make versions-env     create .venv-jax012 from requirements-jax012.txt
#                         (idempotent; first time ~20 s and ~0.4 GB: jaxlib's
#                         wheel is small; seconds once uv's cache holds it)
#   make versions-check   print the jax/jaxlib versions of .venv-jax012
#   make versions-clean   remove .venv-jax012
#
# Knobs: JAX012_VENV (where the venv lives; elsewhere, point the harness at it
# with DYNSHAPE_JAX012_PYTHON=$(JAX012_VENV)/bin/python), JAX012_PYTHON_BASE
# (the interpreter that creates it: jax 0.12 has wheels for CPython >= 3.12
# only, and the main venv is 3.11; default pyenv's 3.12 or 3.13, as this machine's image
# has them, else python3.12 or python3.13 on PATH: pyenv's shims there fail
# unless pyenv selects that version).
# Nothing in `make test` or `make run` needs it: the tests plant records of
# several versions, and the real-environment tests skip, naming this target,
# without it.

JAX012_VENV        ?= .venv-jax012
JAX012_PY          := $(JAX012_VENV)/bin/python
JAX012_REQS        ?= requirements-jax012.txt
JAX012_PYTHON_BASE ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12 $(HOME)/.pyenv/versions/3.13*/bin/python3.13) \
                        $(shell command -v python3.12 python3.13 2>/dev/null) python3.12)
JAX012_UV          ?= .venv/bin/uv
JAX012_TRIES       ?= 5

.PHONY: versions-env versions-check versions-clean

versions-env: $(JAX012_VENV)/.installed

$(JAX012_VENV)/.installed: $(JAX012_REQS)
	@set -e; \
	ver=$$($(JAX012_PYTHON_BASE) -c 'import sys; print("%d.%d" % sys.version_info[:2])') || { \
	  echo "versions-env: '$(JAX012_PYTHON_BASE)' is not a working Python; set JAX012_PYTHON_BASE=/path/to/python3.12" >&2; exit 1; }; \
	case "$$ver" in 3.12|3.13) ;; *) \
	  echo "versions-env: jax 0.12.0.1 has wheels for CPython >= 3.12 only; '$(JAX012_PYTHON_BASE)' is $$ver (set JAX012_PYTHON_BASE)" >&2; exit 1;; esac; \
	if [ ! -x $(JAX012_PY) ]; then \
	  echo "versions-env: creating $(JAX012_VENV) with $(JAX012_PYTHON_BASE)"; \
	  $(JAX012_PYTHON_BASE) -m venv --without-pip $(JAX012_VENV) || { echo "versions-env: '$(JAX012_PYTHON_BASE) -m venv' failed" >&2; exit 1; }; \
	fi; \
	if [ -x "$(JAX012_UV)" ]; then \
	  mk/retry $(JAX012_TRIES) versions-env mk/uv $(JAX012_UV) pip install --quiet --python $(JAX012_PY) -r $(JAX012_REQS) || { \
	    echo "versions-env: 'uv pip install -r $(JAX012_REQS)' into $(JAX012_VENV) FAILED (see above); no stamp written" >&2; exit 1; }; \
	else \
	  $(JAX012_PY) -m ensurepip --upgrade >/dev/null; \
	  mk/retry $(JAX012_TRIES) versions-env $(JAX012_PY) -m pip install --quiet -r $(JAX012_REQS) || { \
	    echo "versions-env: 'pip install -r $(JAX012_REQS)' into $(JAX012_VENV) FAILED (see above); no stamp written" >&2; exit 1; }; \
	fi; \
	$(JAX012_PY) -c "import jax, jaxlib; print('versions-env: jax', jax.__version__, '+ jaxlib', jaxlib.__version__)" || { \
	  echo "versions-env: installed, but 'import jax' fails in $(JAX012_VENV); no stamp written" >&2; exit 1; }; \
	touch $@

versions-check: $(JAX012_VENV)/.installed
	$(JAX012_PY) -c "import jax, jaxlib; print(jax.__version__, jaxlib.__version__)"

versions-clean:
	rm -rf $(JAX012_VENV)
