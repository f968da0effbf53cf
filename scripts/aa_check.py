"""Measure the keep rule on the real system: A/A and A/B trials through run.py on the classic track.

    uv run scripts/aa_check.py --k 60 --only aa --log aa.jsonl  # 60 A/A pairs at the default 5 seeds
    uv run scripts/aa_check.py --k 40                            # 40 A/A pairs, then 40 A/B pairs
    uv run scripts/aa_check.py --quick                           # one pair of each, 2 seeds x 2 s (CI)

The log is resumable: done repetitions are kept and skipped.

Each repetition runs in a fresh temporary root (AUTORL_ROOT, as the tests do): a baseline trial (the
reference), then a candidate trial compared with it by the runner's own verdict, early stops included.
  * A/A: the candidate is the same config (only the harness's seeds differ): `improved` is a false keep,
    `worse` a false alarm; the target for both is <= 5% (ALPHA).
  * A/B: the baseline is the config with its learning rate divided by --slower (it learns slower), the
    candidate the config itself: `improved` is a detection.
Shares come with their exact binomial 95% interval (Clopper-Pearson). What is measured is the decision rule
on real training noise. The default --budget (60 s) lets CartPole reach the score's 50k env steps, so the
scores do not depend on the machine's load; a shorter budget cuts training by the wall clock (faster, but
then a busy machine scores lower: keep A and B on equally loaded cores).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy.stats import binomtest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autorl.commands.tune import parse_summary  # noqa: E402
from autorl.io.harness import commit_short  # noqa: E402


def run_trial(root: Path, config: Path, args: argparse.Namespace) -> dict[str, str]:
    argv = [sys.executable, str(REPO / "run.py"), "--track", "classic", "--config", str(config)]
    argv += ["--budget", str(args.budget), "--allow-dirty-harness"]
    argv += ["--seeds", str(args.seeds)] if args.seeds else []
    proc = subprocess.run(
        argv, cwd=REPO, env={**os.environ, "AUTORL_ROOT": str(root)}, capture_output=True, text=True
    )
    lines = parse_summary(proc.stdout)
    if proc.returncode != 0 or lines.get("status") != "ok":
        raise RuntimeError(f"trial failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return lines


def slower(text: str, factor: float) -> str:
    """The config with its learning rate divided by `factor`."""
    match = re.search(r"^learning_rate\s*=\s*([0-9.eE+-_]+)", text, flags=re.M)
    if match is None:
        raise SystemExit("the config sets no learning_rate")
    lr = float(match.group(1).replace("_", "")) / factor
    return text[: match.start(1)] + f"{lr:.3g}" + text[match.end(1) :]


def done_repetitions(log: Path | None, name: str, args: argparse.Namespace) -> list[dict]:
    """Repetitions of this kind and setting already in the log (a stopped run goes on where it was)."""
    if log is None or not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    key = {"kind": name, "config": str(args.config), "seeds": args.seeds, "budget": args.budget}
    key["commit"] = commit_short(REPO)  # repetitions of other code are not resumed into this one
    return [r for r in rows if all(r.get(k) == v for k, v in key.items())]


def repetitions(name: str, base_text: str, cand_text: str, args: argparse.Namespace) -> None:
    rows = done_repetitions(args.log, name, args)[: args.k]
    if rows:
        print(f"{name}: {len(rows)} repetitions taken from {args.log}", flush=True)
    t0 = time.monotonic()
    for k in range(len(rows), args.k):
        with tempfile.TemporaryDirectory(prefix="aa-check-") as tmp:
            root = Path(tmp)
            base, cand = root / "base.toml", root / "candidate.toml"
            base.write_text(base_text)
            cand.write_text(cand_text)
            reference = run_trial(root, base, args)
            lines = run_trial(root, cand, args)
        row = {
            "kind": name,
            "commit": commit_short(REPO),
            "config": str(args.config),
            "seeds": args.seeds,
            "budget": args.budget,
            "verdict": lines["verdict"],
            "delta": lines["delta"],
            "p_value": lines["p_value"],
            "seeds_run": len(lines["seeds"].split(",")),
            "stopped_early": lines.get("stopped_early", ""),
            "reference_score": reference["eval_score"],
            "candidate_score": lines["eval_score"],
        }
        rows.append(row)
        if args.log is not None:
            with args.log.open("a") as f:
                f.write(json.dumps(row) + "\n")
        print(
            f"{name} {k + 1}/{args.k}: verdict {row['verdict']}, delta {row['delta']}, "
            f"p {row['p_value']}, seeds {row['seeds_run']} ({time.monotonic() - t0:.0f} s)",
            flush=True,
        )
    seeds_run = sum(r["seeds_run"] for r in rows)
    shares = []
    for verdict in ("improved", "worse"):
        k = sum(r["verdict"] == verdict for r in rows)
        ci = binomtest(k, len(rows)).proportion_ci(0.95, method="exact")
        shares.append(f"{verdict} {k}/{len(rows)} = {k / len(rows):.3f} (95% CI {ci.low:.3f}..{ci.high:.3f})")
    print(f"{name}: {'; '.join(shares)}; mean seeds run {seeds_run / len(rows):.2f}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--k", type=int, default=40, help="repetitions of each kind (A/A, then A/B)")
    p.add_argument("--config", type=Path, default=REPO / "classic.toml")
    p.add_argument("--seeds", type=int, default=None, help="seeds per trial (default: the track's, 5)")
    p.add_argument("--budget", type=float, default=60.0, help="training seconds per seed")
    p.add_argument("--slower", type=float, default=10.0, help="A/B: the baseline's learning rate divisor")
    p.add_argument("--only", choices=["aa", "ab"], help="one kind only")
    p.add_argument(
        "--log",
        type=Path,
        help="JSONL of finished repetitions: appended to, and read to resume (rows match on kind, commit, "
        "config, seeds and budget: commit your changes before measuring them)",
    )
    p.add_argument(
        "--quick", action="store_true", help="one repetition of each, 2 seeds x 2 s (a smoke test)"
    )
    args = p.parse_args()
    if args.quick:
        args.k, args.seeds, args.budget = 1, 2, 2.0
    text = args.config.read_text()
    seeds = args.seeds or "default"
    print(
        f"config {args.config}; {args.k} repetitions; {seeds} seeds x {args.budget:g} s per trial", flush=True
    )
    if args.only != "ab":
        repetitions("A/A", text, text, args)
    if args.only != "aa":
        repetitions(f"A/B (baseline lr / {args.slower:g})", slower(text, args.slower), text, args)


if __name__ == "__main__":
    main()
