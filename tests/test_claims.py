"""Claims (autorl/record/claims.py): a trial's exact config is claimed in its research context while it
trains; a second trial of it in the same context is refused with the run id that has it (exit 2, nothing
recorded), `autorl status` lists the trials in flight, a claim whose process is gone is stale."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, replace

import pytest
from fakes.fake_backend import FakeBackend

from autorl.commands import cli, trial
from autorl.commands.tune import parse_summary
from autorl.llm.track import LLMTrack
from autorl.record import claims
from autorl.record.context import ResearchContext
from autorl.record.ledger import Ledger
from autorl.record.row import AGENT_VAR

CONTEXT = ResearchContext("llm", "e" * 16, "h" * 16, 30.0)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_claimed_config_is_refused_in_its_context_only_until_released(root):
    mine = claims.claim(CONTEXT, "run-a", "c0ffee", "lr 3e-5", "+lr = 3e-5\n")
    with pytest.raises(claims.ClaimError, match=r"already training in run-a \(pid \d+, since "):
        claims.claim(CONTEXT, "run-b", "c0ffee", "lr 3e-5 again", "")
    other = claims.claim(replace(CONTEXT, budget=60.0), "run-c", "c0ffee", "at 60 s", "")  # another context
    also = claims.claim(CONTEXT, "run-d", "beef", "another config", "")
    assert [c.run_id for c in claims.in_flight()] == ["run-a", "run-c", "run-d"]
    claims.release(mine, CONTEXT)
    assert claims.claim(CONTEXT, "run-b", "c0ffee", "lr 3e-5 again", "").run_id == "run-b"
    claims.release(mine, CONTEXT)  # no longer run-a's: left alone
    assert "run-b" in [c.run_id for c in claims.in_flight()]
    for c, ctx in ((other, replace(CONTEXT, budget=60.0)), (also, CONTEXT)):
        claims.release(c, ctx)


def test_a_claim_whose_process_is_gone_is_stale_and_taken_over(root):
    path = claims.claim_path(CONTEXT, "c0ffee")
    path.parent.mkdir(parents=True)
    stale = claims.Claim(
        "run-x", "c0ffee", "llm", 30.0, "", dead_pid(), claims.socket.gethostname(), "t", "", ""
    )
    path.write_text(json.dumps(asdict(stale)))
    assert claims.in_flight() == []
    assert claims.claim(CONTEXT, "run-y", "c0ffee", "", "").run_id == "run-y"
    path.write_text('{"run_id": "half-writ')  # a claim cut mid-write is no claim
    assert claims.in_flight() == [] and claims.claim(CONTEXT, "run-z", "c0ffee", "", "").run_id == "run-z"


def test_a_trial_of_a_config_in_flight_is_refused_and_status_shows_it(root, monkeypatch, capsys):
    """A trial through the real runner (the test-double backend, tests/fakes): while another trial of its
    exact config claims it, the trial is refused (exit 2, no row, no run directory) naming that trial, and
    `autorl status` shows the trial in flight with its changes and who runs it. In a swarm (AUTORL_AGENT) a
    config the context already ran is refused too, unless the trial says `--rerun` of it; the rows say who
    ran them; another agent's keep is shown with the command that builds on it."""
    backend = FakeBackend(scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    argv = ["--seeds", "1", "--budget", "0.5"]
    assert trial.main([*argv, "--description", "baseline"]) == 0
    (row,) = Ledger(root / "results.tsv").rows()
    capsys.readouterr()
    # --rerun says what the trial is: one naming no trial of this config is refused, in a swarm or not.
    assert trial.main([*argv, "--rerun", "run-nope"]) == 2
    assert (
        f"--rerun 'run-nope' names no trial of this context that ran this exact config (it ran in "
        f"{row.run_id}: say --rerun {row.run_id})"
    ) in capsys.readouterr().err
    shipped = (root / "train.toml").read_text()
    (root / "train.toml").write_text(shipped + "[trainer.optim]\nlr = 3e-5\n")
    assert trial.main([*argv, "--rerun", row.run_id]) == 2  # another config than the one it names
    assert "(it has not run in this context: its first trial needs no --rerun)" in capsys.readouterr().err
    assert len(Ledger(root / "results.tsv").rows()) == 1
    (root / "train.toml").write_text(shipped)
    monkeypatch.setenv(AGENT_VAR, "agent-2")
    diff = "--- baseline\n+++ this trial\n@@ -1 +1,3 @@\n [trainer.optim]\n+# faster\n+lr = 1  # x10\n"
    held = claims.claim(ResearchContext.of(row), "run-elsewhere", row.config_hash, "same idea", diff)
    runs_before = sorted(p.name for p in (root / "runs").iterdir())
    rerun = ["--rerun", row.run_id]  # a planned re-run (below: a swarm refuses a config that already ran)
    assert trial.main([*argv, "--description", "baseline repeat", *rerun]) == 2
    out = capsys.readouterr()
    assert "already training in run-elsewhere (agent-2, pid " in out.err
    assert parse_summary(out.out) == {"status": "invalid"}
    assert len(Ledger(root / "results.tsv").rows()) == 1
    assert sorted(p.name for p in (root / "runs").iterdir()) == runs_before
    assert cli.main(["status"]) == 0
    shown = capsys.readouterr().out.splitlines()
    at = shown.index("in flight (training now on this ledger; never start the same config):")
    assert shown[at + 1].startswith("  run-elsewhere (agent-2, pid ")
    assert "): trainer.optim.lr = 1  same idea" in shown[at + 1]  # the key it changes, not the diff's lines
    # its config in its run directory (written at its start): its changes against the reference, by the schema
    (root / "runs" / "run-elsewhere").mkdir()
    (root / "runs" / "run-elsewhere" / "config.toml").write_text(shipped + "[trainer.optim]\nlr = 1.0\n")
    assert cli.main(["status"]) == 0
    shown = capsys.readouterr().out.splitlines()
    at = shown.index("in flight (training now on this ledger; never start the same config):")
    assert f"): vs {row.run_id}: trainer.optim.lr = 1.0  same idea" in shown[at + 1]
    claims.release(held, ResearchContext.of(row))
    # Released; but in a swarm a config the context already ran is refused too, unless a planned re-run.
    assert trial.main([*argv, "--description", "baseline repeat"]) == 2
    assert f"this exact config already ran in {row.run_id} (no agent: baseline, pending)" in (
        capsys.readouterr().err
    )
    assert trial.main([*argv, "--description", "baseline repeat", *rerun]) == 0
    assert claims.in_flight() == []  # and its own claim went with its row
    first, repeat = Ledger(root / "results.tsv").rows()
    assert first.agent == "" and repeat.agent == "agent-2"  # who ran each (AUTORL_AGENT)
    # agent-2 keeps it; agent-1, whose train.toml has moved on, is told whose keep is the best and how to
    # bring its worktree onto it (`autorl mark` without --run marks this agent's own latest trial).
    Ledger(root / "results.tsv").mark("keep", lesson="agent-2's keep")
    monkeypatch.setenv(AGENT_VAR, "agent-1")
    (root / "train.toml").write_text((root / "train.toml").read_text() + "# agent-1's own idea\n")
    assert cli.main(["status"]) == 0
    out = capsys.readouterr().out
    kept = root / "runs" / repeat.run_id / "config.toml"
    whose = f"the best kept config is agent-2's {repeat.run_id} (baseline repeat), not your train.toml"
    assert whose in out
    assert f'cp {kept} train.toml && git commit -am "onto {repeat.run_id}"' in out
    # A keep no agent made (before the swarm, by hand) is the one to build on too, said as such.
    Ledger(root / "results.tsv").mark("discard", run_id=repeat.run_id, reason="the first is the reference")
    Ledger(root / "results.tsv").mark("keep", run_id=first.run_id, lesson="kept by hand")
    assert cli.main(["status"]) == 0
    out = capsys.readouterr().out
    kept = root / "runs" / first.run_id / "config.toml"
    assert f"the best kept config is {first.run_id} (" in out
    assert f"kept by no agent), not your train.toml: build on it: cp {kept} train.toml" in out
