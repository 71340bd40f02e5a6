# Two commands on a fresh machine (each installs what it needs):
#   make sample   - the whole pipeline on the bundled sample data, locally; prints where the report is
#   make test     - the test suite
export UV_PYTHON_DOWNLOADS := never
export TF_USE_LEGACY_KERAS := 1
export TF_CPP_MIN_LOG_LEVEL := 2
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")

# Test-only: PyTorch + transformers for the Hugging Face parity tests and benchmarks. The CPU wheel of
# torch comes from a local wheel folder (PyPI's default torch pulls GBs of CUDA packages); without that
# folder the parity tests skip themselves.
TORCH_WHEELS ?= /opt/wheels
HF_TEST_PACKAGES := "torch==2.13.0+cpu" "transformers==5.18.0"

.PHONY: install install-test sample test compile clean

install:
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet "uv>=0.5"
	$(UV) sync --frozen --extra test --inexact

install-test: install
	@if ls $(TORCH_WHEELS)/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then \
	  $(UV) pip install --quiet --python .venv/bin/python --find-links $(TORCH_WHEELS) $(HF_TEST_PACKAGES); \
	else echo "no torch CPU wheel in $(TORCH_WHEELS): Hugging Face parity tests will be skipped"; fi

sample: install
	.venv/bin/albert-pipeline run --preset sample --output-dir outputs/sample

test: install-test
	.venv/bin/python -m pytest tests -q

compile: install
	.venv/bin/albert-pipeline compile --preset sample --output outputs/albert_pipeline.json

clean:
	rm -rf outputs .pytest_cache
