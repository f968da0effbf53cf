"""Test double for run.py (used by tests/test_protocol.py to test `autorl tune` quickly).

Not a trainer: it reads the config, turns it into a known score (peaked at lr = 1e-4, the other keys do
not matter), writes a run directory with config.toml and per-example eval rows, and concludes the trial
through the real autorl.engine.result (statistics against the reference, the ledger row, run.py's summary
block, result.json). `lr = 0` (or a config that does not parse) exits 2 like an invalid config;
FAKE_RUN_CRASH=1 crashes; FAKE_RUN_PRINT_BYTES=N prints N more bytes after its row is recorded;
FAKE_RUN_ABORT=1 stops a candidate's seed at its first rung as the early abort does (no eval rows, its
`stopped_early: aborted ...` line).
"""
# ruff: noqa: E402 (the start time is taken before the imports)

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time

STARTED = time.time()  # before the imports: a busy machine can spread two processes' imports by seconds

import tomllib
from pathlib import Path

from autorl.engine.process import ChildResult
from autorl.engine.result import TrialIdentity, conclude
from autorl.engine.seed import SeedResult
from autorl.engine.track import get_track
from autorl.engine.trial_types import Reference, Trained
from autorl.io import paths
from autorl.io.jsonl import read_jsonl
from autorl.record import stats
from autorl.record.context import ResearchContext
from autorl.record.ledger import Ledger
from autorl.record.rungs import RungScore, abort_text

N_EXAMPLES = 400


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--config", type=Path, default=paths.repo_root() / "train.toml")
    p.add_argument("--description", default="")
    p.add_argument("--budget", type=float, default=600.0)
    p.add_argument("--new-context", action="store_true")  # run.py's: tune passes it with its own --budget
    p.add_argument("--track", default="llm")
    args = p.parse_args()
    try:
        text = args.config.read_text()
        lr = float(tomllib.loads(text).get("trainer", {}).get("optim", {}).get("lr", 1e-6))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if lr <= 0:
        print("error: trainer.optim.lr must be > 0", file=sys.stderr)
        return 2

    ledger = Ledger(paths.results_file())
    rows = ledger.rows()
    n = len(rows)
    run_id = f"20250101-{n:06d}-{os.getpid()}-fake"  # unique when tune runs fakes side by side
    run_dir = paths.runs_dir() / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "config.toml").write_text(text)
    crashed = os.environ.get("FAKE_RUN_CRASH") == "1"
    time.sleep(float(os.environ.get("FAKE_RUN_SECONDS", "0")))  # "training"
    (run_dir / "interval.json").write_text(json.dumps([STARTED, time.time()]))  # the process's lifetime
    # A noise-free world: example i succeeds iff i / N < p, so eval_score == p (to 1/N).
    p_success = 0.2 + 0.7 * math.exp(-((math.log10(lr) + 4.0) ** 2) / 2)
    seed = SeedResult(index=0, seed=n, dir=run_dir / "seed-0", status="crash" if crashed else "ok")
    reference = ledger.best_kept(ResearchContext(args.track, "e", "h", None))
    aborted = os.environ.get("FAKE_RUN_ABORT") == "1" and reference is not None
    if aborted:  # stopped at its first rung: its rung is its record, its end is not scored
        seed.child = ChildResult("aborted", None, 0.1, 0.25, 0.0, 1, None, False, 0, 0.0)
        rung = RungScore(rung=1, fraction=0.25, at_s=0.25, eval_score=0.0, reference=0.5, margin=0.1)
        seed.rungs = [rung.model_copy(update={"decision": "abort", "reference_seeds": 2})]
    elif not crashed:
        seed.eval_rows = [
            {
                "seed": n,
                "env": "toy",
                "example_id": str(i),
                "sample": 0,
                "score": float(i / N_EXAMPLES < p_success),
            }
            for i in range(N_EXAMPLES)
        ]
    ctx = TrialIdentity(
        run_id=run_id,
        run_dir=run_dir,
        commit="fake",
        context=ResearchContext(args.track, "e", "h", None),
        backend="fake",
        config_hash=hashlib.sha256(text.encode()).hexdigest()[:12],
        description=args.description,
    )
    ref_rows = read_jsonl(paths.runs_dir() / reference.run_id / "eval.jsonl") if reference else []
    prior = get_track(args.track).seed_sd_prior
    stopped = abort_text("seed 1", n, seed.rungs[0], reference.run_id) if aborted else ""
    noise = stats.noise_floor(rows, ctx.context, prior_sd=prior)
    result = conclude(
        ctx, Trained(results=[seed], stopped_early=stopped), Reference(rows, reference, ref_rows, noise)
    )
    with open(run_dir / "eval.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in result.rows)
    row = result.ledger_row()
    (run_dir / "result.json").write_text(json.dumps(row, indent=2, default=str))  # as run.py saves it
    ledger.append(row)
    print("some training output")
    chatter = int(os.environ.get("FAKE_RUN_PRINT_BYTES", "0"))  # a talkative trial (progress lines)
    for _ in range(chatter // 100):
        print("x" * 99)
    print("---\n" + "\n".join(f"{k}: {v}" for k, v in result.summary_lines().items()))
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
