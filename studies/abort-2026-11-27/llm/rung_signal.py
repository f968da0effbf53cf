"""Does a rung rank the configs as the end does, at --budget 360? The rung signal of issue 49's item 2, on
every LLM config with curves recorded at 360 s: each config's mean score at 25% and 50% of the run and at its
end, as a difference from its own study's baseline (so machine speed, which moves between sessions, cancels
within each study), and the Spearman rank correlation of the rung's differences with the end's over the
configs, with a 90% bootstrap interval over configs.

Studies (seeds that shared the machine, cpu_wait_share above 0.05, left out):
  pools    collect.sh / collect-e.sh at d873b21 (seeds.tsv): A (the shipped train.toml, the baseline), B-E
  night    the recorded 360 s night at 4ce5007 (../../sessions/llm360-2026-11-27/seeds.tsv): its baseline and
           repeat (the baseline) and its 9 candidates, 1-6 seeds each (the futility stop ended most early)
  fidelity the 2026-11-27 fidelity study's 360 s runs (../../fidelity-llm-2026-11-27: 3 seeds a config, the
           rungs from its snapshots at 90 s and 180 s, the end its long score); the configs whose seeds
           stopped themselves (max_steps: the rung is the end) are left out

    uv run python studies/abort-2026-11-27/llm/rung_signal.py > studies/abort-2026-11-27/llm/rung-signal.log
"""

from __future__ import annotations

import csv
import json
import random
import statistics
from pathlib import Path

from scipy.stats import spearmanr

HERE = Path(__file__).resolve().parent
STUDIES = HERE.parents[1]
BUSY = 0.05  # as seeds.py
BOOT = 2000


def tsv_configs(path: Path, study: str, baseline: str) -> list[dict]:
    """Per config hash of a seeds.tsv: its quiet seeds' mean at the rungs and the end."""
    seeds: dict[str, list[dict]] = {}
    labels: dict[str, str] = {}
    with path.open() as f:
        for row in csv.DictReader(f, delimiter="\t"):
            wait = float(row["cpu_wait_share"] or 0)
            if row["status"] != "ok" or wait > BUSY or not row["eval_score"] or not row["rung_25"]:
                continue
            seeds.setdefault(row["config_hash"], []).append(row)
            labels.setdefault(row["config_hash"], row["description"][:48])
    return [
        {
            "study": study,
            "config": labels[h],
            "baseline": h == baseline,
            "seeds": len(rows),
            "at": [statistics.fmean(float(r[k]) for r in rows) for k in ("rung_25", "rung_50", "eval_score")],
        }
        for h, rows in seeds.items()
    ]


def fidelity_configs(folder: Path) -> list[dict]:
    out = []
    with (folder / "fidelity.tsv").open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for row in rows:
        run_id = row["run_id"]
        along = sorted((folder / "seeds").glob(f"{run_id}-seed-*.along.jsonl"))
        outcomes = [
            json.loads(Path(str(p).replace(".along.jsonl", ".outcome.json")).read_text()) for p in along
        ]
        if all(o.get("stop_reason") == "exited" for o in outcomes):
            continue  # its own step limit: the rung is its end
        at: dict[float, list[float]] = {0.25: [], 0.5: []}
        for p in along:
            for line in p.read_text().splitlines():
                point = json.loads(line)
                if point["fraction"] in at:
                    at[point["fraction"]].append(point["eval_score"])
        out.append(
            {
                "study": "fidelity",
                "config": f"{row['role']} {run_id}",
                "baseline": row["role"] == "baseline",
                "seeds": len(along),
                "at": [statistics.fmean(at[0.25]), statistics.fmean(at[0.5]), float(row["long_score"])],
            }
        )
    return out


def main() -> None:
    shipped = "ce9c97ce04b7"  # the shipped train.toml (pool A; the night's baseline and repeat)
    configs = tsv_configs(HERE / "seeds.tsv", "pools", shipped)
    configs += tsv_configs(STUDIES / "sessions" / "llm360-2026-11-27" / "seeds.tsv", "night", shipped)
    configs += fidelity_configs(STUDIES / "fidelity-llm-2026-11-27")
    base = {c["study"]: c["at"] for c in configs if c["baseline"]}
    ideas = [c for c in configs if not c["baseline"]]
    print(
        f"{len(ideas)} configs against their study's baseline ({', '.join(sorted(base))}); seeds quiet only"
    )
    print(f"{'study':<9} {'config':<50} {'seeds':>5} {'d@25%':>7} {'d@50%':>7} {'d@end':>7}")
    for c in configs:
        d = [x - b for x, b in zip(c["at"], base[c["study"]], strict=True)]
        c["d"] = d
        label = ("baseline: " if c["baseline"] else "") + c["config"]
        print(f"{c['study']:<9} {label:<50} {c['seeds']:>5} " + " ".join(f"{x:+7.3f}" for x in d))
    rng = random.Random(0)
    for k, name in ((0, "25%"), (1, "50%")):
        x, y = [c["d"][k] for c in ideas], [c["d"][2] for c in ideas]
        rho = spearmanr(x, y).statistic
        boot = []
        for _ in range(BOOT):
            pick = [rng.randrange(len(ideas)) for _ in ideas]
            r = spearmanr([x[i] for i in pick], [y[i] for i in pick]).statistic
            if r == r:  # nan when a resample has one distinct value
                boot.append(r)
        boot.sort()
        lo, hi = boot[int(0.05 * len(boot))], boot[int(0.95 * len(boot)) - 1]
        agree = sum((a > 0) == (b > 0) for a, b in zip(x, y, strict=True))
        behind = [(a, b) for a, b in zip(x, y, strict=True) if a < 0]
        print(
            f"rung at {name}: Spearman rho with the end {rho:+.2f} (90% {lo:+.2f}..{hi:+.2f}, {len(boot)} "
            f"resamples of the configs); the sign agrees in {agree}/{len(x)}; of the {len(behind)} behind "
            f"their baseline there, {sum(b >= 0 for _, b in behind)} end level or ahead"
        )


if __name__ == "__main__":
    main()
