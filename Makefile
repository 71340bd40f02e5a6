# Two commands on a fresh machine (each installs what it needs):
#   make sample      - the whole pipeline on the bundled sample data, locally; prints where the report is
#   make test        - the whole test suite, one worker per core (the 25 slowest tests listed at the end)
#   make test-quick  - unit tests only (-m "not slow"): a few minutes
# Recipes are silent (@) and installers write to stderr, so stdout holds only what the command itself prints:
# `make sample > run.json` is the run's JSON (tests/test_cli_run.py checks it).
export UV_PYTHON_DOWNLOADS := never
export TF_USE_LEGACY_KERAS := 1
export TF_CPP_MIN_LOG_LEVEL := 2
# Python's default: cache compiled modules (__pycache__, git-ignored). CI images and sandboxes often set
# PYTHONDONTWRITEBYTECODE; then every process that imports TensorFlow, Beam or TFX (CLI runs, Beam workers,
# component launches: hundreds in `make test`) compiles thousands of modules from source again (importing
# tensorflow, tfx.v1 and apache_beam: 27 s with it set, 11.5 s from the cache on a 2-core AMD EPYC). With the
# cache, the first import of a module compiles it and every later process reads it.
unexport PYTHONDONTWRITEBYTECODE
PYTHON ?= python3

# uv: the one on PATH, else a private copy in $(UV_BOOTSTRAP) (a venv of its own). Nothing is ever installed
# into $(PYTHON) itself, so this works where its pip is externally managed (PEP 668) or absent.
UV_BOOTSTRAP ?= .uv-bootstrap
UV ?= $(shell command -v uv 2>/dev/null)
ifeq ($(strip $(UV)),)
override UV := $(UV_BOOTSTRAP)/bin/uv
UV_DEP := $(UV)
endif

# Test-only: PyTorch + transformers for the Hugging Face parity tests and benchmarks. The CPU wheel of torch
# comes from a folder you name (PyPI's default torch pulls GBs of CUDA packages), e.g.
#   TORCH_WHEELS=../wheels make test
# There is no default: without it those tests skip, saying how to enable them. They go into a folder of their own
# in the venv (benchmarks/hf_packages.py says where and why: with torch in site-packages, every process that
# imports TFX components would import torch too), resolved against the venv's own versions (the constraints file).
TORCH_WHEELS ?=
HF_TEST_PACKAGES := "torch==2.13.0+cpu" "transformers==5.18.0"

.PHONY: install install-test sample test test-quick compile clean uv

# The .venv's modules are compiled when installed, as pip does by default and the image's build does
# (infra/Dockerfile): uv does not by default, and then a fresh .venv's first processes each compile what they import
# (two processes importing the CLI's DAG runner, the Trainer and the GLUE runner at once: 44 s of CPU against 18 s
# compiled; compiling the whole .venv: 27 s on 2 cores, once; a later install finds it compiled in 1 s). Only for
# this sync: the image environment the tests build links these .pyc files instead (tests/image_env.py).
install: $(UV_DEP)
	@UV_COMPILE_BYTECODE=1 $(UV) sync --frozen --extra test --inexact >&2

# Print the uv that install uses (bootstrapping it first if needed); tests/test_install.py runs this.
uv: $(UV_DEP)
	@echo $(UV)

# A venv of its own holds uv. `python -m venv` seeds pip with ensurepip; where ensurepip is missing (Debian
# without python3-venv) a pip-less venv is filled by the interpreter's own pip through `pip --python`.
$(UV_BOOTSTRAP)/bin/uv:
	@echo "uv not found on PATH: installing it into $(UV_BOOTSTRAP)/ (not into $(PYTHON))" >&2
	@rm -rf $(UV_BOOTSTRAP)
	@if $(PYTHON) -m venv $(UV_BOOTSTRAP) >/dev/null 2>&1 && $(UV_BOOTSTRAP)/bin/python -m pip --version >/dev/null 2>&1; then \
	  $(UV_BOOTSTRAP)/bin/python -m pip install --quiet "uv>=0.5" >&2; \
	elif rm -rf $(UV_BOOTSTRAP) && $(PYTHON) -m venv --without-pip $(UV_BOOTSTRAP) && $(PYTHON) -m pip --version >/dev/null 2>&1; then \
	  $(PYTHON) -m pip --python $(UV_BOOTSTRAP)/bin/python install --quiet "uv>=0.5" >&2; \
	else \
	  echo "error: $(PYTHON) can create neither a venv with pip (ensurepip) nor has pip of its own;" \
	       "install uv (https://docs.astral.sh/uv/) or your distribution's python3-venv, then rerun" >&2; \
	  rm -rf $(UV_BOOTSTRAP); exit 1; \
	fi
	@test -x $@

# The first recipe line takes out the torch and transformers an older install-test put into site-packages.
install-test: install
	@if .venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)"; then \
	  $(UV) pip uninstall --quiet --python .venv/bin/python torch transformers >&2; fi
	@if [ -n "$(TORCH_WHEELS)" ] && ls "$(TORCH_WHEELS)"/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then \
	  $(UV) pip freeze --quiet --python .venv/bin/python --exclude-editable > .venv/hf-constraints.txt && \
	  $(UV) pip install --quiet --python .venv/bin/python --target "$$(.venv/bin/python -m benchmarks.hf_packages)" \
	    --constraint .venv/hf-constraints.txt --find-links "$(TORCH_WHEELS)" $(HF_TEST_PACKAGES) >&2; \
	elif [ -n "$(TORCH_WHEELS)" ]; then \
	  echo "no torch-2.13.0+cpu wheel in TORCH_WHEELS=$(TORCH_WHEELS): Hugging Face parity tests will be skipped" >&2; \
	else echo "TORCH_WHEELS not set: Hugging Face parity tests will be skipped (TORCH_WHEELS=DIR make test," \
	          "DIR holding torch-2.13.0+cpu-*.whl, runs them)" >&2; fi

# SAMPLE_OUTPUT: where the run goes (tests point it at their own folder).
SAMPLE_OUTPUT ?= outputs/sample
sample: install
	@.venv/bin/albert-pipeline run --preset sample --output-dir $(SAMPLE_OUTPUT)

# TEST_WORKERS: pytest-xdist processes (auto: one per core, at most 4). Whole test files go to one worker
# (--dist loadfile): a module's expensive fixtures (a killed-and-rerun pipeline, trained examples) are built once.
TEST_WORKERS ?= auto
test: install-test
	@.venv/bin/python -m pytest tests -q -n $(TEST_WORKERS) --maxprocesses=4 --dist loadfile --no-loadscope-reorder --durations=25

test-quick: install
	@.venv/bin/python -m pytest tests -q -m "not slow"

compile: install
	@.venv/bin/albert-pipeline compile --preset sample --output outputs/albert_pipeline.json

clean:
	rm -rf outputs .pytest_cache $(UV_BOOTSTRAP)
