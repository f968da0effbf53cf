"""The scripts that measure the decision rule: aa_check.py on real classic trials (its quick mode) and
aa_pool.py's decisions on pools of seeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from autorl.record.ledger import Ledger, eval_rows_hash

REPO = Path(__file__).resolve().parent.parent


def test_aa_check_quick_runs_one_real_pair_of_each_kind(tmp_path):
    """`scripts/aa_check.py --quick`: one A/A and one A/B pair of real classic trials through run.py (2 seeds
    x 2 s), each counted as improved / worse with its exact interval, and logged for a resumed run."""
    log = tmp_path / "aa.jsonl"
    cmd = [sys.executable, str(REPO / "scripts" / "aa_check.py"), "--quick", "--log", str(log)]
    env = {k: v for k, v in os.environ.items() if k != "AUTORL_ROOT"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["kind"] for r in rows] == ["A/A", "A/B (baseline lr / 10)"]
    for r in rows:
        assert r["verdict"] in ("improved", "worse", "inconclusive") and 1 <= r["seeds_run"] <= 2
        verdict_counts = f"improved {int(r['verdict'] == 'improved')}/1"
        assert f"{r['kind']}: {verdict_counts}" in proc.stdout and "(95% CI " in proc.stdout
    again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert "1 repetitions taken from" in again.stdout and len(log.read_text().splitlines()) == 2


def pool_trial(ledger: Ledger, root: Path, description: str, seed_means: list[float], k: int) -> None:
    """A trial of the pool: its seeds' eval rows (50 examples of 0/1 scores) and its ledger row."""
    rng = np.random.default_rng(k)
    rows = [
        {
            "seed": 1000 * k + s,
            "env": "a",
            "example_id": str(i),
            "sample": 0,
            "score": float(rng.random() < m),
        }
        for s, m in enumerate(seed_means)
        for i in range(50)
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    run_id = f"run-{k}"
    (root / "runs" / run_id).mkdir(parents=True)
    (root / "runs" / run_id / "eval.jsonl").write_text(text)
    common = {"track": "llm", "eval_hash": "e", "harness_hash": "h", "budget": 90.0, "status": "ok"}
    ledger.append(
        {
            **common,
            "run_id": run_id,
            "description": description,
            "eval_score": float(np.mean(seed_means)),
            "config_hash": description,
            "eval_rows_hash": eval_rows_hash(text),
        }
    )


def test_aa_pool_decides_pairs_of_pool_seeds_as_the_runner_does(tmp_path):
    """A pool of 16 seeds of A and 8 of a much better B (+0.3): A/A pairs are rarely `improved`, A/B pairs
    almost always, and every pair's seeds are counted as the early stops left them."""
    ledger = Ledger(tmp_path / "results.tsv")
    rng = np.random.default_rng(0)
    for k in range(8):
        pool_trial(ledger, tmp_path, "pool A", list(0.4 + rng.normal(0, 0.03, 2)), k)
        pool_trial(ledger, tmp_path, "pool B", [0.7 + rng.normal(0, 0.03)], 100 + k)
    out_json = tmp_path / "rates.json"
    cmd = [sys.executable, str(REPO / "scripts" / "aa_pool.py"), "analyze", "--track", "llm", "--pairs", "60"]
    cmd += ["--parallel", "1", "--seeds", "4", "--json", str(out_json)]
    proc = subprocess.run(
        cmd, cwd=REPO, env={**os.environ, "AUTORL_ROOT": str(tmp_path)}, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pool A 16 seeds, pool B 8 seeds; 4 seeds a side, 1 at a time (4 looks)" in proc.stdout
    rates = json.loads(out_json.read_text())["kinds"]
    aa, ab = rates["A/A"]["verdict"], rates["A/B"]["verdict"]
    assert aa["improved"] + aa["worse"] + aa["inconclusive"] == 60 and aa["improved"] <= 9
    assert ab["improved"] >= 55 and 1 <= ab["mean_seeds"] < 4  # the efficacy stop ends most of them early
    assert "A/A, the rule: improved" in proc.stdout and "A/A, the rule before 2026-11-25" in proc.stdout
    # exported to one file, the pools decide the same pairs the same way (a study commits its file)
    pool_file, again = tmp_path / "pool.jsonl.gz", tmp_path / "again.json"
    script = [sys.executable, str(REPO / "scripts" / "aa_pool.py")]
    env = {**os.environ, "AUTORL_ROOT": str(tmp_path)}
    subprocess.run([*script, "export", "--track", "llm", "--out", str(pool_file)], env=env, check=True)
    from_file = [*cmd[:-1], str(again), "--pool-file", str(pool_file)]
    subprocess.run(from_file, cwd=REPO, env={**os.environ, "AUTORL_ROOT": str(tmp_path / "none")}, check=True)
    assert json.loads(again.read_text()) == json.loads(out_json.read_text())
