# Two commands on a fresh machine (each installs what it needs):
#   make sample   - the whole pipeline on the bundled sample data, locally; prints where the report is
#   make test     - the test suite
export UV_PYTHON_DOWNLOADS := never
export TF_USE_LEGACY_KERAS := 1
export TF_CPP_MIN_LOG_LEVEL := 2
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")

.PHONY: install sample test test-fast compile clean

install:
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet "uv>=0.5"
	$(UV) sync --frozen --extra test

sample: install
	.venv/bin/albert-pipeline run --preset sample --output-dir outputs/sample

test: install
	.venv/bin/python -m pytest tests -q

compile: install
	.venv/bin/albert-pipeline compile --preset sample --output outputs/albert_pipeline.json

clean:
	rm -rf outputs .pytest_cache
