"""A/A candidates against lucky references (the top 5% of reference draws), with `worse` spending TOTAL over
the looks instead of stats.WORSE_ALPHA: the figures docs/statistics.md ("A lucky reference") gives for 0.05
(the rule until 2026-11-27) and 0.01.

    python3 -m uv run --no-sync python studies/abort-2026-11-27/worse-level/lucky.py TOTAL   # classic
    python3 -m uv run --no-sync python studies/abort-2026-11-27/worse-level/lucky.py TOTAL llm  # 90 s pool

The LLM track's pool is 2026-11-25's (studies/validity-2026-11-25/llm-pool, 60 seeds of train.toml at
--budget 90) in abort_replay's format, without rungs (llm90-pools.jsonl.gz, written by to_replay.py).
"""

import runpy
import sys

from autorl.record import stats

total = float(sys.argv[1])
llm = sys.argv[2:] == ["llm"]
here = "studies/abort-2026-11-27"
pool = f"{here}/worse-level/llm90-pools.jsonl.gz" if llm else f"{here}/classic/classic-pools.jsonl.gz"
stats.worse_alpha = lambda looks: total / max(1, looks)
stats.WORSE_ALPHA = total
sys.argv = [
    "abort_replay.py",
    "analyze",
    "--pool-file",
    pool,
    "--track",
    "llm" if llm else "classic",
    "--reference",
    "A",
    "--parallel",
    "1" if llm else "2",
    "--pairs",
    "2000",
    "--lucky-pairs",
    "2000",
    "--margins",
    "3",
    "--rng",
    "0",
]
runpy.run_path("scripts/abort_replay.py", run_name="__main__")
