#!/usr/bin/env bash
# The warm starter's prewarm as a user's new clone meets it: inductor's shared cache directory (warm from
# other clones: their C++ kernels) but nothing of this clone's graphs. Each round clones this repo once for
# each way of prewarm_cold.py's code (`serial`: one compile after the other; `parallel`: the training
# step's compile in a forked helper at once; `sampler-helper`: the sampler's in the helper), times its
# first prewarm ("fresh clone") and a second one ("again": this clone's graphs cached), and removes it.
#   bash studies/fast-2026-12-01/fresh-clone-prewarm.sh [ROUNDS] [WAYS...] > .../fresh-clone-prewarm.log
# (fresh-clone-prewarm.log: 2 rounds, serial and parallel; fresh-clone-prewarm-3.log: 2 rounds of all three)
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
code=$(sed -n '/^ONE = """/,/^"""/p' "$repo/studies/fast-2026-12-01/prewarm_cold.py" | sed '1d;$d')
echo "# $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores, $(date -u '+%F %T') UTC"
rounds="${1:-2}"; shift || true
if [ $# -gt 0 ]; then ways=("$@"); else ways=(serial parallel); fi
for r in $(seq 1 "$rounds"); do
  for way in "${ways[@]}"; do
    d="$(mktemp -d)/clone"
    git clone -q "$repo" "$d" && cd "$d" || exit 1
    uv sync --compile-bytecode -q >/dev/null 2>&1 && uv run --no-sync prepare.py >/dev/null 2>&1
    first=$(.venv/bin/python -c "$code" "$way" 2>/dev/null | tail -1)
    again=$(.venv/bin/python -c "$code" "$way" 2>/dev/null | tail -1)
    echo "round $r $way: fresh clone $first s, again $again s"
    cd / && rm -rf "$(dirname "$d")"
  done
done
echo "end $(date -u +%T)"
