#!/usr/bin/env bash
# The pipeline image's Python environment, built from the project's own package metadata. infra/Dockerfile runs
# this; tests/test_install_check.py runs it outside Docker (there is no Docker engine in CI) and checks the result
# with `python -m pipeline.tasks.install_check`, as the image build does.
#
#   infra/build_env.sh deps    SRC VENV   the locked dependencies (uv.lock, its overrides, third_party/) without the
#                                         project: the image's cached layer, rebuilt only when the lock changes
#   infra/build_env.sh project SRC VENV   the project itself, non-editable: uv builds its wheel from SRC's
#                                         pyproject.toml, so every package the metadata declares is installed and
#                                         nothing else is (no hand-kept list of folders to copy)
#
# SRC: a source tree (the Docker build context); VENV: the virtualenv to create or fill. UV names the uv to use.
set -euo pipefail
phase=${1:?deps|project} src=${2:?SRC} venv=${3:?VENV}
export UV_PROJECT_ENVIRONMENT="$venv" UV_PYTHON_DOWNLOADS=never
cd "$src"
case "$phase" in
  deps)    "${UV:-uv}" sync --frozen --no-dev --no-install-project --no-editable ;;
  project) "${UV:-uv}" sync --frozen --no-dev --no-editable ;;
  *)       echo "infra/build_env.sh: unknown phase $phase (deps|project)" >&2; exit 2 ;;
esac
