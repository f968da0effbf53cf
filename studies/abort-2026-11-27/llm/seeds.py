"""seeds.tsv of the LLM pools: one line per seed of collect.sh's trials in a clone (its results.tsv, each
seed's outcome.json, rungs.jsonl and eval.jsonl), a seed whose CPU wait says it shared the machine marked.
PREFIX (default "pool "): the trials whose description starts so ("" for every trial of a ledger).

    uv run python studies/abort-2026-11-27/llm/seeds.py CLONE > studies/abort-2026-11-27/llm/seeds.tsv
    uv run python studies/abort-2026-11-27/llm/seeds.py NIGHT_CLONE "" > .../llm360-2026-11-27/seeds.tsv
"""

from __future__ import annotations

import sys
from pathlib import Path

from autorl.io.jsonl import read_jsonl
from autorl.record import rungs, stats
from autorl.record.ledger import Ledger
from autorl.record.outcome import SeedOutcome

# cpu_wait_share above this: the seed shared the machine (quiet seeds 0.019-0.033; one at 0.082 trained
# 9% fewer steps than its quiet twin in the same trial; the first attempt's, beside tests, 0.17-0.73 and
# half the steps)
BUSY = 0.05
COLUMNS = (
    "run_id description seed_dir status steps training_seconds cpu_wait_share rung_25 rung_50 eval_score"
)
COLUMNS += " busy config_hash"


def main(clone: Path, prefix: str = "pool ") -> None:
    print("\t".join(COLUMNS.split()))
    for row in Ledger(clone / "results.tsv").rows():
        if not row.description.startswith(prefix) or row.status != "ok":
            continue
        for seed_dir in sorted((clone / "runs" / row.run_id).glob("seed-*")):
            o = SeedOutcome.read(seed_dir)
            at = {r.fraction: r.eval_score for r in rungs.read(seed_dir)}
            rows = read_jsonl(seed_dir / "eval.jsonl")
            end = round(stats.eval_score(rows), 6) if rows else ""
            wait = o.cpu_wait_share
            cells = [row.run_id, row.description, seed_dir.name, o.status, o.steps, o.training_seconds, wait]
            busy = "busy" if wait is not None and wait > BUSY else ""
            cells += [at.get(0.25, ""), at.get(0.5, ""), end, busy, row.config_hash]
            print("\t".join("" if c is None else str(c) for c in cells))


if __name__ == "__main__":
    main(Path(sys.argv[1]), *sys.argv[2:3])
