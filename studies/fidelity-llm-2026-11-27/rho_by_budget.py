"""Rho per budget and the configs that trained no longer, computed again from this study's recorded seeds with
the code of a later commit (the study ran at the session's commit bc02282, whose rho per budget dropped every
budget at which a config had already stopped itself, and which predates `no_longer`).

    AUTORL_ROOT=<the session's clone> uv run --no-sync python rho_by_budget.py fidelity-20261127-053150-llm

Reads runs/<fidelity_id>/plan.json, each finished long seed (outcome.json, eval.jsonl, along.jsonl,
eval-at-<s>s.jsonl) and results.tsv; trains nothing and writes nothing."""

import sys

from autorl.commands import fidelity
from autorl.engine.track import get_track
from autorl.record import stats
from autorl.record.ledger import Ledger
from autorl.record.row import as_float, row_seed_scores

plan = fidelity.Plan.load(sys.argv[1])
rows = {r["run_id"]: r for r in Ledger().rows()}
track = get_track(plan.context.track)
scored = []
for role, run_id in plan.configs:
    c = fidelity.Config(role, rows[run_id], None, [], [])
    for k in range(len(plan.seeds)):
        if (done := fidelity.finished_rows(plan.seed_dir(run_id, k))) is not None:
            c.long_rows.append(done)
            c.long_dirs.append(plan.seed_dir(run_id, k))
    scored.append(c)
short = [as_float(c.row, "eval_score") or 0.0 for c in scored]
short_seeds = [row_seed_scores(c.row) or [s] for c, s in zip(scored, short, strict=True)]
table = fidelity.rho_by_budget(track, scored, short, short_seeds, plan.factor)
long = [stats.eval_score(c.rows) for c in scored]
low, high = fidelity.rho_interval(short_seeds, [list(stats.seed_scores(c.rows).values()) for c in scored])
table.append(
    {"budget_x": round(plan.factor, 2), "rho": fidelity.rank_stats(short, long)["rho"], "rho_ci": [low, high]}
)
print("budget_x  rho    90% interval")
for p in table:
    print(f"{p['budget_x']:>8g}  {p['rho']:+.2f}  {p['rho_ci'][0]:+.2f} {p['rho_ci'][1]:+.2f}")
for c in scored:
    at = [
        stats.eval_score(
            [r for d, seed in zip(c.long_dirs, c.long_rows, strict=True) for r in track.rows_at(d, seed, f)]
        )
        for f in fidelity.budget_fractions(plan.factor)
    ]
    why = fidelity.trained_no_longer(c)
    print(
        f"{c.row['run_id']} {c.role:9s} short {as_float(c.row, 'eval_score'):.4f} along "
        + " ".join(f"{x:.4f}" for x in at)
        + (f"  no_longer: {why}" if why else "")
    )
