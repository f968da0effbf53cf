"""Trial 4 of the 360 s night (batch 128) against the baseline alone and against the baseline + its repeat
(what run.py's reference side holds since the reference pooling), with the ledger's noise floor as run.py
had it. Run with the night's clone's venv: cd /tmp/night360 && .venv/bin/python pooled_trial4.py"""

import sys
from pathlib import Path

sys.path.insert(0, "/work/main")
from autorl.llm.track import LLMTrack
from autorl.record import stats
from autorl.record.context import ResearchContext
from autorl.record.ledger import Ledger, reference_evidence, reference_rows

root = Path("/tmp/night360")
rows = Ledger(root / "results.tsv").rows()
by = {r.run_id: r for r in rows}
base, t4 = by["20261127-182934-4ce5007"], by["20261127-215022-f2b03ef"]
ctx = ResearchContext.of(base)
before = rows[: rows.index(t4)]  # the ledger as trial 4 read it
noise = stats.noise_floor(before, ctx, prior_sd=LLMTrack.seed_sd_prior)
cand = reference_rows(t4, root / "runs")
for name, ref in (
    ("baseline alone", reference_rows(base, root / "runs")),
    ("baseline + repeat", reference_evidence(base, before, ctx, root / "runs").rows),
):
    c = stats.compare(cand, ref, noise=noise)
    need = stats.seeds_needed(c)
    print(
        f"{name}: seeds {len({r['seed'] for r in ref})}, delta {c.delta:+.4f}, p {c.p_value:.4f}, "
        f"verdict at look 6/6: {stats.sequential_verdict(c, 6, 6)}; seeds_needed {need}; {c.note}"
    )
