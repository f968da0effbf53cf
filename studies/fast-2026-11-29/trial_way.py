"""One real LLM trial (the shipped train.toml, `run.py`'s own code) with the embedded trainer's 2-core way
chosen by name, then one line per seed read from what the seed wrote:

    .venv/bin/python studies/fast-2026-11-29/trial_way.py WAY [run.py arguments...]

WAY `default` is what run.py runs: on 2 cores hf-process until 2026-11-29 09:00 UTC, then both steps compiled;
on one core hf-static, its training step eager. `compiled` is hf-static-process with compile_train, `process`
hf-process with both steps eager, `static-compiled` hf-static with compile_train
(RunSpec fields a train.toml cannot set: the runner's build_spec is wrapped here, so each seed's
resolved.json carries them). Run from the project directory (its ledger records the trial).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import time
from pathlib import Path

WAYS: dict[str, dict[str, object]] = {
    "default": {},
    "compiled": {"sampler": "hf-static-process", "compile_train": True},
    "process": {"sampler": "hf-process", "compile_train": False},
    # one core (trial-1core.sh pins the trial to it): against `default` there
    "static-compiled": {"sampler": "hf-static", "compile_train": True},
}


def main() -> int:
    way, argv, root = sys.argv[1], sys.argv[2:], Path.cwd()
    from autorl.commands import trial
    from autorl.commands.tune import parse_summary
    from autorl.llm.embedded import backend

    built = backend.build_spec
    backend.build_spec = lambda cfg: built(cfg).model_copy(update=WAYS[way])
    start = time.monotonic()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = trial.main(argv)
    wall = time.monotonic() - start
    text = out.getvalue()
    summary = parse_summary(text)
    print(
        f"trial {way}: rc {code} wall {wall:.1f} s eval_score {summary.get('eval_score')} "
        f"verdict {summary.get('verdict')} status {summary.get('status')}"
    )
    if "run_dir" not in summary:
        print(text)
        return code
    for seed_dir in sorted((root / summary["run_dir"]).glob("seed-*")):
        rows = [json.loads(line) for line in (seed_dir / "metrics.jsonl").read_text().splitlines()]
        log = (seed_dir / "run.log").read_text()
        header = next((ln for ln in log.splitlines() if ln.startswith("embedded trainer:")), "")
        compiles = [float(s) for s in re.findall(r"compiled in ([\d.]+) s", header)]
        trained = sum(r["seconds"] for r in rows)
        samples = sum(r["rl_samples"] for r in rows if "rl_samples" in r) or None
        rates = sorted(r["samples_per_s"] for r in rows)
        wait = json.loads((seed_dir / "outcome.json").read_text()).get("cpu_wait_share")
        print(
            f"  {seed_dir.name} {way}: steps {len(rows)} elapsed_s {rows[-1]['elapsed_s'] if rows else 0} "
            f"step seconds {trained:.1f} median samples/s {rates[len(rates) // 2] if rates else 0:.1f} "
            f"rl_samples {samples} compile s {sum(compiles):.1f} "
            f"last reward {rows[-1]['reward'] if rows else None} cpu_wait_share {wait}"
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
