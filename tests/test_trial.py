"""The trial runner end to end, with a test-double backend (tests/fakes/fake_backend.py): summary, ledger,
run dir, crash and timeout recording, invalid configs, the dirty-harness refusal and the verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from fakes.fake_backend import TRAIN_TOML, FakeBackend

from autorl.commands import trial
from autorl.commands.tune import parse_summary
from autorl.llm.track import LLMTrack
from autorl.record import stats
from autorl.record.ledger import Ledger
from autorl.record.row import LedgerRow

REPO = Path(__file__).resolve().parent.parent

SUMMARY_KEYS = [
    "eval_score",
    "eval_ci",
    "score_range",
    "base_score",
    "delta",
    "p_value",
    "verdict",
    "training_seconds",
    "startup_seconds",
    "eval_seconds",
    "total_seconds",
    "steps",
    "peak_memory_gb",
    "status",
    "run_dir",
]


def use_backend(monkeypatch, root: Path, mode: str = "ok", quality: float = 0.6) -> None:
    backend = FakeBackend(mode, quality, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)


summary = parse_summary  # run.py's `key: value` block after the last `---`


def test_ok_trial_prints_the_summary_and_appends_one_row(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    code = trial.main(["--budget", "1", "--seeds", "1", "--description", "first\tbaseline"])
    out = capsys.readouterr().out
    assert code == 0
    s = summary(out)
    for key in SUMMARY_KEYS:
        assert key in s, key
    assert s["status"] == "ok"
    assert float(s["eval_score"]) == pytest.approx(0.6, abs=0.01)
    assert float(s["base_score"]) == pytest.approx(0.3, abs=0.01)
    assert s["eval/toy"] == s["eval_score"]
    assert s["verdict"] == "baseline"
    lo, hi = map(float, s["eval_ci"].split())
    assert lo < float(s["eval_score"]) < hi
    assert 0.9 <= float(s["training_seconds"]) <= 1.0
    assert int(s["steps"]) > 5
    rows = Ledger(root / "results.tsv").rows()
    assert len(rows) == 1
    assert rows[0].status == "ok" and rows[0].decision == "pending"
    assert rows[0].description == "first baseline"  # tab sanitised
    run_dir = root / s["run_dir"]
    assert (run_dir / "config.toml").read_text() == TRAIN_TOML
    assert (run_dir / "summary.txt").exists()
    assert (run_dir / "seed-0" / "run.log").exists()
    eval_rows = [json.loads(x) for x in (run_dir / "eval.jsonl").read_text().splitlines()]
    assert len(eval_rows) == 400 and all("seed" in r for r in eval_rows)


def test_base_score_is_cached(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    trial.main(["--budget", "0.5", "--seeds", "1"])
    first = capsys.readouterr().out
    trial.main(["--budget", "0.5", "--seeds", "1"])
    second = capsys.readouterr().out
    assert "evaluating the untrained base model" in first
    assert "evaluating the untrained base model" not in second
    assert summary(first)["base_score"] == summary(second)["base_score"]
    # the base eval's seconds are the first trial's, named: its time lines add up to its wall time
    s = summary(first)
    parts = ("training_seconds", "startup_seconds", "eval_seconds", "base_eval_seconds")
    assert "base_eval_seconds" in s and "base_eval_seconds" not in summary(second)
    assert sum(float(s[k]) for k in parts) <= float(s["total_seconds"])


def test_second_trial_is_compared_with_the_reference(root, monkeypatch, capsys):
    use_backend(monkeypatch, root, quality=0.3)
    trial.main(["--budget", "0.5", "--seeds", "1"])
    capsys.readouterr()
    use_backend(monkeypatch, root, quality=0.9)
    trial.main(["--budget", "0.5", "--seeds", "1"])
    s = summary(capsys.readouterr().out)
    assert float(s["delta"]) == pytest.approx(0.6, abs=0.01)
    assert s["verdict"] == "improved"
    assert len(Ledger(root / "results.tsv").rows()) == 2


def test_crash_is_recorded_with_the_log_tail(root, monkeypatch, capsys):
    use_backend(monkeypatch, root, mode="crash")
    code = trial.main(["--budget", "5", "--seeds", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "CUDA out of memory (simulated)" in out
    assert summary(out)["status"] == "crash"
    rows = Ledger(root / "results.tsv").rows()
    assert len(rows) == 1 and rows[0].status == "crash"


def test_hang_is_recorded_as_timeout(root, monkeypatch, capsys):
    use_backend(monkeypatch, root, mode="hang")
    code = trial.main(["--budget", "30", "--seeds", "1", "--hang-timeout", "1"])
    s = summary(capsys.readouterr().out)
    assert code == 1
    assert s["status"] == "timeout"
    assert Ledger(root / "results.tsv").rows()[0].status == "timeout"


def test_sigterm_ignored_still_ends_within_grace_and_evaluates(root, monkeypatch, capsys):
    use_backend(monkeypatch, root, mode="ignore_term")
    started = time.monotonic()
    code = trial.main(["--budget", "0.5", "--seeds", "1", "--grace", "1"])
    s = summary(capsys.readouterr().out)
    assert code == 0 and s["status"] == "ok"
    assert time.monotonic() - started < 30
    assert float(s["eval_score"]) == pytest.approx(0.6, abs=0.01)


def test_invalid_config_exits_2_without_a_row(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    (root / "train.toml").write_text(TRAIN_TOML + "[trainer.optim]\nlearning_rate = 1e-5\n")
    code = trial.main([])
    captured = capsys.readouterr()
    assert code == 2
    assert "learning_rate" in captured.err and "lr" in captured.err
    assert summary(captured.out)["status"] == "invalid"
    assert not (root / "results.tsv").exists()
    assert not (root / "runs").exists()


def test_seeds_are_chosen_by_the_harness_and_pooled(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    trial.main(["--budget", "0.3", "--seeds", "2"])
    s = summary(capsys.readouterr().out)
    seeds = [int(x) for x in s["seeds"].split(",")]
    assert len(set(seeds)) == 2
    eval_rows = [json.loads(x) for x in (root / s["run_dir"] / "eval.jsonl").read_text().splitlines()]
    assert {r["seed"] for r in eval_rows} == set(seeds)


def test_candidate_behind_the_reference_stops_adding_seeds(root, monkeypatch, capsys):
    """Futility stop: behind the reference after its first seed, a 3-seed candidate runs no more seeds
    (and is not kept); --all-seeds runs them all; a candidate ahead runs all its seeds."""
    use_backend(monkeypatch, root, quality=0.6)
    trial.main(["--budget", "0.3", "--seeds", "1"])
    capsys.readouterr()

    use_backend(monkeypatch, root, quality=0.3)
    trial.main(["--budget", "0.3", "--seeds", "3"])
    s = summary(capsys.readouterr().out)
    assert len(s["seeds"].split(",")) == 1
    assert s["stopped_early"].startswith("after 1/3 seeds: delta -0.30")
    assert s["verdict"] == "inconclusive"  # one candidate seed is never `worse` (stats.MIN_SEEDS_WORSE)
    run_dir = root / s["run_dir"]
    assert (run_dir / "seed-0").is_dir() and not (run_dir / "seed-1").exists()
    assert Ledger(root / "results.tsv").rows()[-1].seeds == s["seeds"]

    trial.main(["--budget", "0.3", "--seeds", "3", "--all-seeds"])
    s = summary(capsys.readouterr().out)
    assert len(s["seeds"].split(",")) == 3 and "stopped_early" not in s

    use_backend(monkeypatch, root, quality=0.9)
    trial.main(["--budget", "0.3", "--seeds", "2"])
    s = summary(capsys.readouterr().out)
    assert len(s["seeds"].split(",")) == 2 and "stopped_early" not in s


def test_candidate_clearly_ahead_stops_for_efficacy(root, monkeypatch, capsys):
    """Efficacy stop, wired through after_wave: with a boundary any lead passes (monkeypatched), a 3-seed
    candidate far ahead after its first seed runs no more seeds and is `improved` on that seed."""
    use_backend(monkeypatch, root, quality=0.6)
    trial.main(["--budget", "0.3", "--seeds", "1"])
    capsys.readouterr()
    monkeypatch.setattr(stats, "efficacy_alpha", lambda looks_done, looks_planned: 0.5)
    use_backend(monkeypatch, root, quality=0.9)
    trial.main(["--budget", "0.3", "--seeds", "3", "--parallel", "1"])
    s = summary(capsys.readouterr().out)
    assert len(s["seeds"].split(",")) == 1 and s["verdict"] == "improved"
    assert s["stopped_early"].startswith("after 1/3 seeds: delta +0.30")
    assert s["stopped_early"].endswith("below the efficacy boundary")


def test_dry_run_prints_resolved_config(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    assert trial.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert tomllib.loads(out)["fake"] is True
    assert not (root / "results.tsv").exists()


def test_dirty_harness_is_refused_naming_the_file(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    (root / "autorl").mkdir()
    (root / "autorl" / "eval.py").write_text("N = 1000\n")

    def git(*args):
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "init")
    (root / "autorl" / "eval.py").write_text("N = 10\n")
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert "autorl/eval.py" in err and "--allow-dirty-harness" in err
    assert trial.main(["--budget", "0.3", "--seeds", "1", "--allow-dirty-harness"]) == 0


def test_a_config_with_changes_not_committed_runs_and_says_what_to_do(root, monkeypatch, capsys):
    """A trial of a train.toml the commit does not hold runs, and says so at its start and in the summary's
    `note` (program.md's grep): its row names a commit without its config, and a revert would drop that
    commit. `autorl status` says when train.toml is not the reference's config, and what differs."""
    from autorl.commands import cli

    use_backend(monkeypatch, root)

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "init")
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 0
    assert "not committed" not in capsys.readouterr().out
    (first,) = Ledger(root / "results.tsv").rows()
    assert cli.main(["status"]) == 0
    assert "is not" not in capsys.readouterr().out  # train.toml is the reference's config
    commit = git("rev-parse", "--short=7", "HEAD")
    (root / "train.toml").write_text(TRAIN_TOML.replace("batch_size = 8", "batch_size = 16"))
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    note = f"train.toml has changes not committed: this trial ran them, its row names commit {commit}"
    assert f"[trial] note: {note}" in out and note in summary(out)["note"]
    assert "git reset --hard HEAD~1) drops" in summary(out)["note"]
    assert Ledger(root / "results.tsv").rows()[-1].commit == commit
    assert cli.main(["status"]) == 0
    shown = capsys.readouterr().out
    assert (
        f"note: train.toml is not {first.run_id}'s config (orchestrator.batch_size = 16 here, 8 there)"
        in (shown)
    )
    (root / "train.toml").write_text(TRAIN_TOML)  # the revert the note asks after a discard
    assert cli.main(["status"]) == 0
    assert "is not" not in capsys.readouterr().out


def test_bad_config_is_refused_fast_without_heavy_imports(root):
    (root / "train.toml").write_text(TRAIN_TOML + "[orchestrator.eval]\ninterval = 5\n")
    code = (
        "import sys, time; t = time.monotonic(); from autorl.commands.trial import main; rc = main([]); "
        "assert 'torch' not in sys.modules, 'torch imported'; "
        "print('SECONDS', time.monotonic() - t); sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"AUTORL_ROOT": str(root), "PATH": ""},
    )
    assert proc.returncode == 2, proc.stderr
    assert "orchestrator.eval" in proc.stderr


def test_a_reference_at_the_top_of_the_score_range_is_noted():
    from autorl.engine.result import ceiling_note

    at_top = ceiling_note(LedgerRow(eval_ci_high=1.0), (0.2, 0.5), high=1.0)
    assert "no improvement is possible" in at_top and "make the task harder" in at_top
    assert ceiling_note(LedgerRow(eval_ci_high=0.97), (0.2, 1.0), high=1.0) == ""  # the reference decides
    assert ceiling_note(None, (0.9, 1.0), high=1.0) != ""  # no reference: this trial's interval
    assert ceiling_note(None, (0.5, 0.7), high=1.0) == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["--budget", "nan"],
        ["--budget", "inf"],
        ["--budget", "0"],
        ["--budget", "-5"],
        ["--seeds", "10000"],
        ["--seeds", "0"],
        ["--hang-timeout", "0.5"],
        ["--startup-cap", "0"],
        ["--grace", "0"],
        ["--grace", "nan"],
    ],
)
def test_run_py_flags_out_of_range_exit_2_before_anything_runs(root, monkeypatch, capsys, argv):
    use_backend(monkeypatch, root)
    with pytest.raises(SystemExit) as exc:
        trial.main(argv)
    assert exc.value.code == 2 and "must be" in capsys.readouterr().err
    assert not (root / "runs").exists() and not (root / "results.tsv").exists()


@pytest.mark.parametrize("content", [bytes(range(128, 256)) * 4, None])
def test_a_malformed_ledger_refuses_the_trial_before_anything_runs(root, monkeypatch, capsys, content):
    use_backend(monkeypatch, root)
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 0
    ledger = root / "results.tsv"
    if content is None:
        with open(ledger, "a") as f:
            f.write("bad\trow\n")  # a ragged row
    else:
        ledger.write_bytes(content)
    before = sorted((root / "runs").iterdir())
    capsys.readouterr()
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 2
    out, err = capsys.readouterr()
    assert "results.tsv:" in err and out.rstrip().endswith("status: invalid")
    assert sorted((root / "runs").iterdir()) == before  # no run directory, nothing trained


def test_a_failed_ledger_write_still_prints_and_saves_the_summary(root, monkeypatch, capsys):
    from autorl.record.ledger import LedgerError

    use_backend(monkeypatch, root)

    def refuse(self, line):
        raise LedgerError(f"{self.path}: cannot write: Permission denied")

    monkeypatch.setattr(Ledger, "_append", refuse)
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    s = summary(out)
    assert s["status"] == "ok" and "autorl ledger append" in out
    run_dir = root / s["run_dir"]
    assert (run_dir / "summary.txt").exists() and json.loads((run_dir / "result.json").read_text())["run_id"]


def test_each_run_py_flag_sets_its_option():
    """run.py's flags are RunOptions' fields (declared once): no flag given is the field's default, and each
    flag, spelt with dashes, sets its field with the value its type parses."""
    from autorl.commands.options import RunOptions

    assert trial.parse_options([]) == RunOptions()
    argv = "--config x.toml --track classic --budget 5 --seeds 3 --all-seeds --parallel 2 --ray h:1"
    argv += " --ray-start-timeout 7 --description d --dry-run --explain k --backend embedded"
    argv += " --allow-dirty-harness --hang-timeout 9 --startup-cap 11 --grace 0.5 --new-context --rerun r1"
    assert trial.parse_options(argv.split()) == RunOptions(
        config=Path("x.toml"),
        track="classic",
        budget=5.0,
        seeds=3,
        new_context=True,
        all_seeds=True,
        parallel=2,
        ray="h:1",
        ray_start_timeout=7.0,
        description="d",
        dry_run=True,
        explain="k",
        backend="embedded",
        allow_dirty_harness=True,
        hang_timeout=9.0,
        startup_cap=11.0,
        grace=0.5,
        rerun="r1",
    )
    assert trial.parse_options(["--parallel", "auto"]).parallel is None


def test_the_research_context_fixes_budget_and_seeds_after_the_baseline(root, monkeypatch, capsys):
    """Once the track has a baseline, a trial without --budget/--seeds takes the baseline's (and says so);
    another --budget is exit 2 with nothing recorded, unless --new-context starts a new baseline."""
    use_backend(monkeypatch, root)
    assert trial.main(["--budget", "0.5", "--seeds", "1"]) == 0
    capsys.readouterr()
    assert trial.main([]) == 0  # no flag: the context's budget and seeds
    out = capsys.readouterr().out
    first, second = Ledger(root / "results.tsv").rows()
    assert f"budget 0.5 s and 1 seeds: from the baseline {first.run_id}" in out
    assert "(--seeds sets other seeds; another budget is a new context: --new-context)" in out  # no override
    assert (second.budget, second.seeds_planned) == (0.5, 1)
    assert second.reference_run == first.run_id  # compared: the same context
    # another budget: refused before anything runs, with the way out
    assert trial.main(["--budget", "2"]) == 2
    err = capsys.readouterr().err
    assert f"--budget 2: the llm track's baseline {first.run_id} ran at 0.5 s" in err
    assert "--new-context" in err
    assert len(Ledger(root / "results.tsv").rows()) == 2
    # the same budget given explicitly is fine; --new-context starts a new baseline at another budget
    assert trial.main(["--budget", "0.5", "--seeds", "1"]) == 0
    assert trial.main(["--budget", "0.7", "--seeds", "1", "--new-context"]) == 0
    newest = Ledger(root / "results.tsv").rows()[-1]
    assert newest.budget == 0.7 and newest.verdict == "baseline"
    capsys.readouterr()
    assert trial.main(["--seeds", "1"]) == 0  # the new context's budget now
    assert Ledger(root / "results.tsv").rows()[-1].budget == 0.7


def test_the_runner_checks_the_model_recipe_and_the_eval_hash_without_importing_torch(tmp_path):
    """What run.py does before an LLM trial's first launch needs no torch (2 s of a 2-core CPU's start);
    the children import it, forked from a warm starter."""
    probe = """
import sys
from pathlib import Path
from autorl.commands import cli, trial
from autorl.llm import prepare
from autorl.llm import model_builder, track
model_builder.is_complete(Path(sys.argv[1]), model_builder.build_recipe())
track.TRACK.eval_hash(None)
print(sorted(m for m in ("torch", "transformers") if m in sys.modules))
"""
    env = {k: v for k, v in os.environ.items() if k != "AUTORL_ROOT"}  # the checkout's eval.toml
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]"]


def test_a_config_whose_last_trial_measured_nothing_runs_again_on_its_seeds(root, capsys):
    """A trial of a config whose latest trial in the context was interrupted or contended draws that trial's
    seeds (stopping a trial that looks bad buys no fresh draw); otherwise, and in another context, its own."""
    from autorl.engine import trial_run
    from autorl.engine.result import TrialIdentity
    from autorl.record.context import ResearchContext

    context = ResearchContext("llm", "e", "h", 20.0)

    def row(
        run_id: str, config: str, status: str = "ok", health: str = "", budget: float = 20.0
    ) -> LedgerRow:
        return LedgerRow(
            run_id=run_id,
            track="llm",
            eval_hash="e",
            harness_hash="h",
            budget=budget,
            config_hash=config,
            status=status,
            health=health,
            seeds="5000,5001",
            eval_score=0.4 if status == "ok" else None,
        )

    me = TrialIdentity("new", root / "runs" / "new", "c", context, "embedded", "idea")
    own = trial_run.harness_seeds("new", 3)
    assert trial_run.trial_seeds(me, [row("a", "idea")], 3) == (own, None)  # measured: fresh seeds (a re-run)
    for void in (row("b", "idea", status="interrupted"), row("b", "idea", health="contended")):
        assert trial_run.trial_seeds(me, [row("a", "idea"), void], 3) == ([5000, 5001, 5002], void)
        assert "seeds: b's (it measured nothing" in capsys.readouterr().out
        assert trial_run.trial_seeds(me, [void, row("a", "idea")], 3) == (own, None)  # measured since
        assert trial_run.trial_seeds(me, [row("b", "other", status="interrupted")], 3) == (own, None)
    assert trial_run.trial_seeds(me, [row("b", "idea", status="interrupted", budget=90.0)], 3) == (own, None)


def test_config_diff_is_against_the_contexts_baseline(root):
    """config.diff (and a claim's changes) are against the context's baseline: the run again of a contended
    baseline, not the discarded one; a new context's first trial against the track's first."""
    from autorl.engine import trial_run
    from autorl.io import paths
    from autorl.record.context import ResearchContext

    context = ResearchContext("llm", "e", "h", 20.0)
    rows = []
    for run_id, verdict, decision, health in (
        ("crowded", "baseline", "discard", "contended"),
        ("base", "baseline", "keep", ""),
    ):
        rows.append(
            LedgerRow(
                run_id=run_id,
                track="llm",
                eval_hash="e",
                harness_hash="h",
                budget=20.0,
                status="ok",
                eval_score=0.4,
                verdict=verdict,
                decision=decision,
                health=health,
            )
        )
        paths.run_config_file(run_id).parent.mkdir(parents=True)
        paths.run_config_file(run_id).write_text(f"lr = 1e-4  # {run_id}\n")
    diff = trial_run.config_diff_vs_baseline(rows, context, "lr = 5e-5\n")
    assert diff.startswith("--- baseline (base)\n") and "-lr = 1e-4  # base\n+lr = 5e-5\n" in diff
    longer = ResearchContext("llm", "e", "h", 90.0)
    assert trial_run.config_diff_vs_baseline(rows, longer, "lr = 5e-5\n").startswith("--- baseline (crowded)")
