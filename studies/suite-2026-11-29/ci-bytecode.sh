#!/usr/bin/env bash
# CI's whole command (.ci/run: uv sync, then uv run pytest) on fresh clones of two commits, one after the
# other, the machine otherwise idle: COMMIT_A compiles the environment's bytecode in `uv sync
# --compile-bytecode` first; COMMIT_B does not, and its suite writes the bytecode of what it imports.
#   bash studies/suite-2026-11-29/ci-bytecode.sh COMMIT_A COMMIT_B [REPO] > log
set -euo pipefail
repo=${3:-$(git rev-parse --show-toplevel)}
for commit in "$1" "$2"; do
  dir=$(mktemp -d /tmp/ci-XXXX)
  git clone -q "$repo" "$dir" && git -C "$dir" checkout -q "$commit"
  echo "== $commit in $dir, $(date -u +%H:%M:%S) UTC, PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE-unset}"
  start=$(date +%s)
  (cd "$dir" && ./.ci/run 2>&1 | grep -E "^(Resolved|Prepared|Installed|Bytecode|uv )|passed|failed|error" | grep -v "^E ")
  echo "== $commit: .ci/run took $(( $(date +%s) - start )) s"
  rm -rf "$dir"
done
