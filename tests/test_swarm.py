"""`autorl swarm` end to end on the classic track: two scripted stand-in agents (autorl/agents/standin.py)
in their own git worktrees of a copy of this repository, one ledger: no idea runs twice, every row says its
agent, no two seeds ever train on the same core at once (leases), nothing is left behind (claims, STOP
files, processes), and the summary counts per agent and for the swarm."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autorl.commands.tune import parse_summary
from autorl.record.ledger import Ledger
from autorl.record.row import LedgerRow

REPO = Path(__file__).resolve().parent.parent
GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
RUN = ["--track", "classic", "--budget", "1", "--seeds", "1"]
CHANGES = """
[[change]]
key = "learning_rate"
value = 2e-3

[[change]]
key = "clip_obs"        # no effect: observations are not normalised (norm_obs = false), an A/A idea
value = 5.0
"""


@pytest.fixture
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository of this one's tracked files (as in the working tree) with a recorded, kept
    classic baseline."""
    repo = tmp_path_factory.mktemp("swarm") / "repo"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    for name in filter(None, tracked.stdout.split("\0")):
        if (REPO / name).is_file() and not name.startswith("docs/"):  # docs: not needed, 4 MB
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    for args in (["init", "-q", "-b", "research"], ["add", "-A"], ["commit", "-qm", "copy"]):
        subprocess.run([*GIT, *args], cwd=repo, check=True)
    base = run(repo, "run.py", *RUN, "--description", "baseline")
    assert parse_summary(base.stdout)["status"] == "ok", base.stdout + base.stderr
    run(repo, "-m", "autorl.commands.cli", "mark", "keep", "--lesson", "baseline")
    return repo


def run(repo: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AUTORL_ROOT", "AUTORL_RECORDS", "AUTORL_AGENT")}
    return subprocess.run(
        [sys.executable, *argv], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout
    )


def rows(repo: Path) -> list[LedgerRow]:
    return Ledger(repo / "results.tsv").rows()


def test_two_stand_in_agents_share_one_ledger_and_the_cores_honestly(repo):
    """Two stand-ins, two ideas, `--max-trials 2`: each idea runs once, both agents work, no two seeds
    train on one core at once, nothing is left in flight; then a swarm stopped mid-trial (stop_mid_trial)."""
    changes = repo / ".autorl" / "changes.toml"
    changes.write_text(CHANGES)
    agent = f"{sys.executable} -m autorl.agents.standin --changes {changes} --prompt {{prompt}} -- "
    agent += " ".join(RUN[2:])  # the budget and seeds (the stand-in adds --track)
    swarm = ["-m", "autorl.commands.cli", "swarm", "--agents", "2", "--agent", agent, "--max-trials", "2"]
    done = run(repo, *swarm)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    new = rows(repo)[1:]
    what = sorted(r.description for r in new if r.status == "ok")
    assert what == sorted(["learning_rate = 0.002", "clip_obs = 5.0"])  # each idea once
    assert {r.agent for r in new} == {"agent-1", "agent-2"}, new  # both worked, each row says who
    assert all(r.reference_run for r in new if r.status == "ok")  # every candidate was compared
    # the limit came with a trial's row, before its agent marked it: the loop let the agent mark it
    assert [r.run_id for r in new if r.status == "ok" and r.decision == "pending"] == []
    # Leases: seeds on the same cores held them one after the other (outcome.json's `slot`, `slot_held`),
    # their start-up, training and eval inside (resolved.json written, eval.jsonl written).
    windows: dict[tuple[int, ...], list[tuple[float, float]]] = {}
    ok_seeds = 0
    for r in new:
        for seed_dir in (repo / "runs" / r.run_id).glob("seed-*"):
            outcome = json.loads((seed_dir / "outcome.json").read_text())
            start, end = outcome["slot_held"]
            assert start - 0.05 <= (seed_dir / "resolved.json").stat().st_mtime <= end + 0.05  # coarse mtime
            windows.setdefault(tuple(outcome["slot"]), []).append((start, end))
            ok_seeds += r.status == "ok" and outcome["status"] == "ok"
    for spans in windows.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans
    summary = parse_summary(done.stdout)
    assert summary["agents"] == "2" and int(summary["trials"]) >= 2
    decided = sum(r.status == "ok" for r in new)  # the throughput lines, from the same files
    assert f"({decided} in " in summary["decisions_per_hour"]
    assert float(summary["seeds_per_decision"]) == pytest.approx(ok_seeds / decided, abs=0.01)
    assert 0 <= int(summary["cores_idle"].split("%")[0]) < 100
    assert summary["context"].startswith("comparisons: ")
    worktrees = [repo / ".autorl" / "swarm" / f"agent-{i}" for i in (1, 2)]
    assert all((w / ".git").exists() and not (w / "STOP").exists() for w in worktrees)
    branches = subprocess.run(["git", "branch"], cwd=repo, capture_output=True, text=True).stdout
    assert "research-agent-1" in branches and "research-agent-2" in branches
    assert list((repo / ".autorl" / "claims").glob("*.json")) == []  # nothing left in flight
    stop_mid_trial(repo)  # then a swarm stopped mid-trial, in the same repository
    kill_the_agent_mid_trial(repo)  # and an agent killed mid-trial


def stop_mid_trial(repo: Path) -> None:
    """SIGINT to the swarm while an agent's trial trains: the loop ends its agent's process group, the trial
    records an `interrupted` row, and no claim, STOP file or process of the swarm is left."""
    import signal
    import time

    import psutil

    changes = repo / ".autorl" / "changes-stop.toml"
    changes.write_text('[[change]]\nkey = "clip_reward"  # no effect: norm_reward is off\nvalue = 5.0\n')
    agent = f"{sys.executable} -m autorl.agents.standin --changes {changes} --prompt {{prompt}} -- "
    agent += "--budget 60 --seeds 1 --new-context"  # trains long enough to be stopped mid-way
    before = len(rows(repo))
    env = {k: v for k, v in os.environ.items() if k not in ("AUTORL_ROOT", "AUTORL_RECORDS", "AUTORL_AGENT")}
    argv = [sys.executable, "-m", "autorl.commands.cli", "swarm", "--agents", "1", "--agent", agent]
    proc = subprocess.Popen(
        argv, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    claims = repo / ".autorl" / "claims"
    deadline = time.monotonic() + 120

    def training() -> bool:  # its seed logged an update (a trial stopped before that records no row)
        held = [json.loads(c.read_text())["run_id"] for c in claims.glob("*.json")]
        return any((repo / "runs" / run_id / "seed-0" / "metrics.jsonl").exists() for run_id in held)

    while not training():
        assert time.monotonic() < deadline and proc.poll() is None, "no trial started training"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=180)[0]
    assert proc.returncode == 0, out
    (last,) = rows(repo)[before:]
    assert last.status == "interrupted" and last.agent == "agent-1", last
    summary = parse_summary(out)
    marks = "(autorl mark keep|discard --run <run_id>)"
    assert summary["agent-1"] == f"1 trials, 0 kept, not marked: {last.run_id} (interrupted) {marks}"
    assert summary["interrupted"] == "1 (stopped mid-trial: measured nothing, run again)"
    assert (
        list(claims.glob("*.json")) == [] and not (repo / ".autorl" / "swarm" / "agent-1" / "STOP").exists()
    )
    worktree = str(repo / ".autorl" / "swarm")
    left = [p for p in psutil.process_iter(["cwd"]) if (p.info["cwd"] or "").startswith(worktree)]
    assert left == []


def kill_the_agent_mid_trial(repo: Path) -> None:
    """SIGKILL to a stand-in agent while its trial trains: the trial goes on and records its row (pending,
    the agent never read its summary); the agent's next invocation waits for it, decides it by its row, and
    leaves nothing in flight."""
    import time

    changes = repo / ".autorl" / "changes-kill.toml"
    changes.write_text('[[change]]\nkey = "clip_reward"  # no effect: norm_reward is off\nvalue = 7.0\n')
    argv = [sys.executable, "-m", "autorl.agents.standin", "--changes", str(changes), "--"]
    argv += ["--budget", "3", "--seeds", "1", "--new-context"]
    env = {k: v for k, v in os.environ.items() if k not in ("AUTORL_ROOT", "AUTORL_RECORDS")}
    env["AUTORL_AGENT"] = "agent-9"
    before = len(rows(repo))
    first = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    claims = repo / ".autorl" / "claims"
    deadline = time.monotonic() + 120
    while not list(claims.glob("*.json")):
        assert time.monotonic() < deadline and first.poll() is None, "no trial started"
        time.sleep(0.2)
    first.kill()
    first.wait()
    second = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    (row,) = rows(repo)[before:]  # the killed agent's trial recorded its row, the second ran nothing new
    assert row.description == "clip_reward = 7.0" and row.agent == "agent-9" and row.status == "ok"
    assert row.decision == "keep"  # a new context's first trial: its baseline
    assert f"an earlier invocation's trial, {row.run_id} kept" in second.stdout
    assert "every change is tried" in second.stdout
    assert (
        list(claims.glob("*.json")) == [] and not (repo / ".autorl" / "standin" / "agent-9.current").exists()
    )


def test_throughput_counts_decisions_seeds_and_the_core_time_seeds_held(tmp_path, monkeypatch):
    """autorl.record.throughput on recorded outcome.json files: `ok` rows are decisions and their `ok` seeds
    count, each seed's held cores are clipped to the stretch, an unpinned seed holds every core."""
    from autorl.record import throughput

    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    seeds = {  # run id -> (status, [(seed status, cores, held from, until)])
        "a": ("ok", [("ok", [0], 100.0, 160.0), ("ok", [1], 100.0, 130.0)]),
        "b": ("ok", [("ok", [0], 170.0, 230.0), ("crash", [1], 170.0, 175.0)]),
        "c": ("interrupted", [("interrupted", [], 290.0, 320.0)]),  # unpinned; past the stretch's end
    }
    for run_id, (_, outcomes) in seeds.items():
        for k, (status, cores, t0, t1) in enumerate(outcomes):
            (d := tmp_path / "runs" / run_id / f"seed-{k}").mkdir(parents=True)
            (d / "outcome.json").write_text(
                json.dumps({"status": status, "slot": cores, "slot_held": [t0, t1]})
            )
    rows = [LedgerRow(run_id=r, status=status) for r, (status, _) in seeds.items()]
    t = throughput.measure(rows, since=100.0, until=300.0, cores=2)
    assert (t.decisions, t.seeds) == (2, 3)
    assert t.core_seconds_held == pytest.approx(60 + 30 + 60 + 5 + 10 * 2)
    assert t.cores_idle == pytest.approx(1 - 175 / 400)
    assert t.decisions_per_hour == pytest.approx(2 / (200 / 3600))
    lines = t.lines()
    assert lines["seeds_per_decision"] == "1.50" and lines["cores_idle"].startswith("56% of 2 cores")


def test_the_stand_in_discards_a_contended_trial_whatever_its_verdict(tmp_path, monkeypatch):
    """program.md: a `health/contended` trial measured nothing: discarded and its commit reset, even when
    its verdict reads `improved` (a replay of 2026-12-03 saw the stand-in keep one, which then set the bar);
    the same from its row when an earlier invocation was killed before it decided."""
    from autorl.agents import standin

    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    monkeypatch.setenv("AUTORL_AGENT", "agent-5")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "classic.toml").write_text("learning_rate = 5e-4\n")
    standin.git("add", "classic.toml")
    standin.git("commit", "-qm", "baseline")
    ledger = Ledger(tmp_path / "results.tsv")
    for run_id, what in (("r1", "num_steps = 16"), ("r2", "num_envs = 4")):
        (tmp_path / "classic.toml").write_text(f"learning_rate = 5e-4\n{what}\n")
        standin.git("commit", "-qam", what)
        row = {"run_id": run_id, "track": "classic", "status": "ok", "eval_score": 0.8, "verdict": "improved"}
        ledger.append(row | {"health": "contended", "description": what, "agent": "agent-5"})
        if run_id == "r1":  # decided at once, from its summary
            summary = {"status": "ok", "verdict": "improved", "run_dir": f"runs/{run_id}"}
            said = standin.decide(ledger, summary | {"health/contended": "2/5 seeds ..."}, what)
            assert said == "r1 marked discard (contended: not measured)"
        else:  # its invocation was killed before it decided: the next one decides it by its row
            standin.current_file().parent.mkdir(parents=True, exist_ok=True)
            standin.current_file().write_text(what + "\n")
            standin.finish_pending(ledger)
        assert ledger.find(run_id).decision == "discard" and "contended" in ledger.find(run_id).lesson
        assert standin.git("log", "-1", "--format=%s").strip() == "baseline"  # its commit reset
