"""Issue 14 §2 and §5: no win without training better, and what the agent sees.

Training on a held-out split is refused; only trials under the same budget are compared; the reference
cannot be lowered silently (re-marks need a reason and are kept in an append-only history); a reference
whose eval.jsonl changed is refused; `status`/`report` show every track on request.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest
from fakes.fake_backend import TRAIN_TOML, FakeBackend

from autorl.classic.config import load_classic_config
from autorl.classic.track import ClassicTrack
from autorl.commands import cli, report, status, trial
from autorl.commands.confirm import CONFIRM_SEED_BASE
from autorl.io.harness import harness_hash
from autorl.io.jsonl import read_jsonl
from autorl.io.machine import Machine, save_machine
from autorl.io.tomlcheck import ConfigError
from autorl.llm.config import load_train_config
from autorl.llm.track import LLMTrack
from autorl.record import context as research
from autorl.record import stats
from autorl.record.context import ResearchContext, best_kept
from autorl.record.ledger import Ledger, LedgerError, eval_rows_hash, reference_evidence, reference_rows
from autorl.record.row import LedgerRow
from autorl.record.sidetables import CONFIRMED
from autorl.record.stats import noise_floor

REPO = Path(__file__).resolve().parent.parent
TRAIN = (REPO / "train.toml").read_text()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    return tmp_path


# ---- a training source on a held-out split -------------------------------------------------------------


@pytest.mark.parametrize("split", ["eval", "test"])
@pytest.mark.parametrize("backend", ["embedded", "prime-rl"])
def test_training_on_a_held_out_split_is_refused(root, capsys, split, backend):
    text = TRAIN.replace('split = "train"', f'split = "{split}"', 1)
    assert text != TRAIN
    path = root / "train.toml"
    path.write_text(text)
    lineno = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(f'split = "{split}"'))
    with pytest.raises(ConfigError) as exc:
        load_train_config(path, backend)
    assert str(exc.value).startswith(f"train.toml:{lineno}: `orchestrator.train.source.0.env.taskset.split`")
    assert "held-out split" in str(exc.value)
    assert trial.main(["--config", str(path), "--backend", backend, "--dry-run"]) == 2
    assert "held-out split" in capsys.readouterr().err
    assert not (root / "results.tsv").exists() and not (root / "runs").exists()


# ---- the budget is part of what makes trials comparable -----------------------------------------------


def add(ledger: Ledger, run_id: str, score: float | None, decision: str = "pending", **kw: object) -> None:
    row = {
        "run_id": run_id,
        "status": "ok" if score is not None else "crash",
        "eval_score": score,
        "decision": decision,
        "track": "llm",
        "harness_hash": "h",
        "eval_hash": "e",
        "config_hash": f"c-{run_id}",
        "budget": 600.0,
        "description": f"try {run_id}",
    }
    ledger.append(row | kw)


def test_reference_and_noise_floor_only_under_the_same_budget(root):
    ledger = Ledger(root / "results.tsv")
    add(ledger, "legacy", 0.95, "keep", budget=None)  # an earlier ledger's row: no budget recorded
    add(ledger, "b600", 0.50, "keep", config_hash="A", seed_scores={1: 0.4, 2: 0.6})
    add(ledger, "b60", 0.90, "keep", budget=60.0, config_hash="A", seed_scores={1: 0.0, 2: 1.0})
    rows = ledger.rows()
    assert best_kept(rows, ResearchContext("llm", "e", "h", 600.0)).run_id == "b600"
    assert ledger.best_kept(ResearchContext("llm", "e", "h", 60.0)).run_id == "b60"
    assert best_kept(rows, ResearchContext("llm", "e", "h", 30.0)) is None
    assert (
        best_kept(rows, ResearchContext("llm", "e", "h", None)).run_id == "legacy"
    )  # legacy rows only among themselves
    add(ledger, "odd", 0.5, "keep", budget=12345.678)  # written with 6 digits, still found by its budget
    assert ledger.best_kept(ResearchContext("llm", "e", "h", 12345.678)).run_id == "odd"
    nf = noise_floor(rows, ResearchContext("llm", "e", "h", 600.0), prior_sd=0.1)
    assert nf.df == 1 and nf.measured_sd == pytest.approx(0.2 / 2**0.5)  # not pooled with the 60 s seeds


# ---- the reference cannot be lowered silently ----------------------------------------------------------


def test_changing_a_decision_needs_a_reason_and_is_kept_in_the_history(root, capsys):
    ledger = Ledger(root / "results.tsv")
    add(ledger, "base", 0.40, "keep", verdict="baseline")
    add(ledger, "k1", 0.50, "keep", verdict="improved")
    add(ledger, "k2", 0.60, "keep", verdict="improved")
    before = ledger.path.read_text()
    assert cli.main(["mark", "discard", "--run", "k2"]) == 2
    assert "needs --reason" in capsys.readouterr().err
    assert ledger.path.read_text() == before and not ledger.history_path.exists()
    with pytest.raises(SystemExit) as exit_:  # an empty reason is refused by argparse
        cli.main(["mark", "discard", "--run", "k2", "--reason", " "])
    assert exit_.value.code == 2
    capsys.readouterr()

    assert cli.main(["mark", "discard", "--run", "k2", "--reason", "eval.jsonl was from a bad seed"]) == 0
    assert "the reference is now k1 (was k2)" in capsys.readouterr().out
    assert ledger.best_kept(ResearchContext("llm", "e", "h", 600.0)).run_id == "k1"
    first = ledger.history_path.read_text()
    assert cli.main(["mark", "discard", "--run", "k2", "--lesson", "seed 3 diverged"]) == 0  # same decision
    assert ledger.history_path.read_text().startswith(first)  # appended, never rewritten
    marks = ledger.history()
    assert [(m.run_id, m.old, m.new, m.is_remark) for m in marks] == [
        ("k2", "keep", "discard", True),
        ("k2", "discard", "discard", False),
    ]
    assert (marks[0].reference_before, marks[0].reference_after) == ("k2", "k1")
    text = status.render(status.collect(ledger.rows(), marks=ledger.history()))
    assert "re-marked k2: keep -> discard (eval.jsonl was from a bad seed); reference k2 -> k1" in text


# ---- the reference's eval rows are the ones it was scored on -------------------------------------------


def test_reference_rows_are_checked_against_the_recorded_hash(root):
    runs = root / "runs"
    (runs / "r").mkdir(parents=True)
    text = '{"env": "toy", "example_id": "0", "sample": 0, "score": 1.0}\n'
    (runs / "r" / "eval.jsonl").write_text(text)
    row = LedgerRow(run_id="r", eval_rows_hash=eval_rows_hash(text))
    assert reference_rows(row, runs) == [{"env": "toy", "example_id": "0", "sample": 0, "score": 1.0}]
    (runs / "r" / "eval.jsonl").write_text(text.replace("1.0", "0.0"))
    with pytest.raises(LedgerError, match="has changed since the trial wrote it"):
        reference_rows(row, runs)
    with pytest.raises(LedgerError, match="records no eval_rows_hash"):
        reference_rows(LedgerRow(run_id="r", eval_rows_hash=""), runs)
    (runs / "r" / "eval.jsonl").unlink()
    with pytest.raises(LedgerError, match="is missing"):
        reference_rows(row, runs)


def test_the_reference_side_holds_every_trial_of_its_config_in_the_context(root):
    """reference_evidence: the reference's rows, then those of its config's other trials of the context (a
    seed number already used is given a new one); another config, another context, a trial marked crash or
    one not ok are not pooled; a same-config trial whose eval.jsonl is lost is left out and named."""
    runs = root / "runs"
    ctx = ResearchContext("llm", "e", "h", 60.0)

    def trial(run_id: str, seeds: list[int], score: float, **kw) -> LedgerRow:
        (runs / run_id).mkdir(parents=True)
        text = "".join(
            json.dumps({"env": "toy", "example_id": "0", "sample": 0, "score": score, "seed": s}) + "\n"
            for s in seeds
        )
        (runs / run_id / "eval.jsonl").write_text(text)
        fields = dict(
            track="llm", eval_hash="e", harness_hash="h", budget=60.0, status="ok", eval_score=score
        )
        fields |= dict(config_hash="base", decision="keep", eval_rows_hash=eval_rows_hash(text))
        return LedgerRow(run_id=run_id, **(fields | kw))

    rows = [
        base := trial("base", [1, 2], 0.6),
        trial("repeat", [2, 3], 0.4, decision="discard"),  # seed 2 is the baseline's too
        trial("idea", [4], 0.9, config_hash="idea"),
        trial("short", [5], 0.1, budget=30.0),
        trial("faulty", [6], 0.1, decision="crash"),
        trial("died", [7], 0.1, status="timeout"),
        trial("lost", [8], 0.1),
    ]
    (runs / "lost" / "eval.jsonl").unlink()
    got = reference_evidence(base, rows, ctx, runs)
    assert got.runs == ("base", "repeat") and got.seeds == 4
    assert sorted((r["seed"], r["score"]) for r in got.rows) == [(1, 0.6), (2, 0.6), (3, 0.4), (4, 0.4)]
    assert got.unread == (
        "lost (the reference lost cannot be used: " + str(runs / "lost" / "eval.jsonl") + " is missing)",
    )
    assert got.describe().startswith("4 (base + repeat); left out lost (")
    assert reference_evidence(rows[2], rows, ctx, runs).runs == ("idea",)


@pytest.fixture
def fake_root(root, monkeypatch):
    (root / "train.toml").write_text(TRAIN_TOML)
    shutil.copyfile(REPO / "eval.toml", root / "eval.toml")
    save_machine(
        Machine(python="3", platform="test", torch=None, cpus=2, ram_gb=1.0, model_name="tiny-test-model")
    )
    backend = FakeBackend("ok", 0.5, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    return root


def test_a_tampered_reference_is_refused_before_anything_runs(fake_root, capsys):
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 0
    (ref,) = Ledger(fake_root / "results.tsv").rows()
    capsys.readouterr()
    # Another budget (a new context): not comparable, so the trial runs and is a baseline of its own.
    assert trial.main(["--budget", "0.4", "--seeds", "1", "--new-context"]) == 0
    assert "verdict: baseline" in capsys.readouterr().out
    eval_jsonl = fake_root / "runs" / ref.run_id / "eval.jsonl"
    eval_jsonl.write_text(eval_jsonl.read_text().replace('"score": 0.0', '"score": 1.0', 1))
    runs_before = sorted(p.name for p in (fake_root / "runs").iterdir())
    assert trial.main(["--budget", "0.3", "--seeds", "1", "--new-context"]) == 2
    err = capsys.readouterr().err
    assert f"the reference {ref.run_id} cannot be used" in err and "has changed" in err
    assert sorted(p.name for p in (fake_root / "runs").iterdir()) == runs_before
    assert len(Ledger(fake_root / "results.tsv").rows()) == 2


def test_a_lost_reference_names_the_recovery_and_the_recovery_works(fake_root, capsys):
    """The reference's eval.jsonl is gone: exit 2 with the exact commands; following them, the next trial runs
    and is compared with the next kept trial (here none is left: it is a new baseline)."""
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 0
    (ref,) = Ledger(fake_root / "results.tsv").rows()
    assert cli.main(["mark", "keep", "--lesson", "baseline"]) == 0
    (fake_root / "runs" / ref.run_id / "eval.jsonl").unlink()
    capsys.readouterr()
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert "is missing" in err and "to recover: restore" in err
    command = next(line.strip() for line in err.splitlines() if line.strip().startswith("uv run autorl mark"))
    assert command == f'uv run autorl mark discard --run {ref.run_id} --reason "eval.jsonl lost"'
    assert cli.main(shlex.split(command)[3:]) == 0
    assert trial.main(["--budget", "0.3", "--seeds", "1"]) == 0
    assert "verdict: baseline" in capsys.readouterr().out
    assert len(Ledger(fake_root / "results.tsv").rows()) == 2


# ---- the agent's view -----------------------------------------------------------------------------------


def test_status_lessons_whole_baseline_repeat_not_counted_and_tracks(root, capsys):
    ledger = Ledger(root / "results.tsv")
    add(ledger, "cl", 400.0, "keep", track="classic", eval_hash="ec")
    add(ledger, "base", 0.40, "keep", config_hash="B", verdict="baseline")
    add(ledger, "repeat", 0.42, "discard", config_hash="B", lesson="baseline repeat: noise floor")
    long_lesson = "lr 1e-5 diverges after 40 steps: reward collapses to 0 " * 3
    for i in range(4):
        add(ledger, f"d{i}", 0.41, "discard", lesson=long_lesson if i == 3 else f"lesson {i}")
    st = status.collect(ledger.rows())
    assert st["baseline_repeats"] == ["repeat"] and st["not_kept_streak"] == 4
    assert "WARNING" not in status.render(st)  # 5 not kept, one of them the baseline repeat
    add(ledger, "d4", 0.39, "discard")
    assert cli.main(["status"]) == 0
    text = capsys.readouterr().out
    assert "WARNING: 5 trials in a row not kept" in text
    assert f"d3 (discard): {long_lesson.strip()}" in text  # whole, not cut
    assert "`autorl status --track classic`" in text
    lessons = [ln for ln in text.splitlines() if "(discard): " in ln or "(keep): " in ln]
    assert len(lessons) == 5  # every lesson of the context, bounded by count (MAX_LESSONS)
    assert cli.main(["status", "--track", "classic"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("trials: 1 (classic track") and "cl" in text
    assert "`autorl status --track llm`" in text
    assert cli.main(["status", "--all"]) == 0
    assert "classic ec" in capsys.readouterr().out


def test_an_idea_tried_twice_is_one_idea_decided_in_the_keep_rate(root):
    """An inconclusive idea discarded, then its labelled re-run kept; a keep run again and discarded: two
    ideas, one kept (before, four decided trials and two keeps of one idea). A re-run of the kept config joins
    the reference's pool, and is no idea not kept since the keep."""
    ledger = Ledger(root / "results.tsv")
    add(ledger, "base", 0.40, "keep", config_hash="B", verdict="baseline")
    add(ledger, "a", 0.44, "discard", config_hash="A", verdict="inconclusive")
    add(ledger, "a-again", 0.45, "keep", config_hash="A", verdict="improved")
    add(ledger, "a-third", 0.43, "discard", config_hash="A", verdict="inconclusive")
    add(ledger, "c", 0.41, "discard", config_hash="C", verdict="inconclusive")
    rows = ledger.rows()
    assert research.config_repeats(rows) == {"a", "a-third"}
    st = status.collect(rows)
    assert st["keep_rate"] == {"kept": 1, "decided": 2}
    assert st["since_last_keep"] == 1 and st["not_kept_streak"] == 1  # c, not a-third
    # the bar of the next delta: all three trials of the kept config, the discarded first one too
    assert st["best_pooled"] == (3, 3, pytest.approx((0.44 + 0.45 + 0.43) / 3))


def test_report_track_and_progress_plot(root, capsys):
    ledger = Ledger(root / "results.tsv")
    add(ledger, "base", 0.40, "keep", base_score=0.1, description="baseline")
    add(ledger, "k1", 0.50, "keep", base_score=0.1, description="lr 3e-6")
    add(ledger, "d1", 0.45, "discard", base_score=0.1)
    add(ledger, "cl", 400.0, "keep", track="classic", eval_hash="ec")
    assert cli.main(["report", "--out", str(root / "p.png"), "--track", "llm"]) == 0
    out = capsys.readouterr().out
    assert "`autorl report --track classic`" in out and "| 2 | k1 |" in out
    fig = report.figure(report.context_rows(ledger.rows(), "llm"))
    ax = fig.axes[0]
    ticks = [t for t in ax.get_xticks() if 0.5 <= t <= 3.5]
    assert ticks == [1.0, 2.0, 3.0]
    assert [t.get_text() for t in ax.texts] == ["baseline", "lr 3e-6"]
    assert any(list(line.get_ydata()) == [0.1, 0.1] for line in ax.get_lines())  # the base model's score


# ---- the sealed test set: `autorl confirm` end to end on the classic track --------------------------------


def classic_trial(ledger: Ledger, root: Path, run_id: str, decision: str, text: str, score: float) -> None:
    (root / "runs" / run_id).mkdir(parents=True)
    (root / "runs" / run_id / "config.toml").write_text(text)
    cfg = load_classic_config(root / "runs" / run_id / "config.toml")
    ledger.append(
        {
            "run_id": run_id,
            "track": "classic",
            "backend": "classic",
            "status": "ok",
            "eval_score": score,
            "decision": decision,
            "budget": 1.0,
            "config_hash": cfg.config_hash,
            "harness_hash": harness_hash(root),
            "eval_hash": ClassicTrack().eval_hash(cfg),
            "description": run_id,
        }
    )


def test_confirm_retrains_both_configs_on_fresh_seeds_and_scores_the_test_split(root, capsys, monkeypatch):
    from autorl.engine import pool

    ledger = Ledger(root / "results.tsv")
    classic = (REPO / "classic.toml").read_text()
    classic_trial(ledger, root, "base", "keep", classic, 100.0)
    assert cli.main(["confirm"]) == 2  # only the baseline is kept: nothing to confirm
    assert "is the baseline" in capsys.readouterr().err
    faster = classic.replace("learning_rate = 5e-4", "learning_rate = 2.5e-3")
    classic_trial(ledger, root, "cand", "keep", faster, 150.0)
    classic_trial(ledger, root, "later", "discard", classic, 90.0)
    assert cli.main(["confirm", "--run", "later"]) == 2
    assert "not kept" in capsys.readouterr().err

    order: list[str] = []  # the sides in the order the real pool is given their seeds
    real_pool = pool.run_local
    monkeypatch.setattr(
        pool,
        "run_local",
        lambda run, view: order.extend(j.dir.parent.name for j in run.jobs) or real_pool(run, view),
    )
    assert cli.main(["confirm", "--seeds", "2"]) == 0
    assert order == ["candidate", "baseline"] * 2  # interleaved: the machine's drift falls on both alike
    out = capsys.readouterr().out
    (row,) = CONFIRMED.read(root / "confirmed.tsv")
    assert (row["run_id"], row["baseline_run"], row["status"]) == ("cand", "base", "ok")
    seeds = [int(s) for s in row["seeds"].split(",")]
    assert len(seeds) == 2 and min(seeds) >= CONFIRM_SEED_BASE  # no trial ever trains on these
    test_score, base_score = float(row["test_score"]), float(row["baseline_test_score"])
    assert float(row["delta"]) == pytest.approx(test_score - base_score, abs=1e-3)
    assert float(row["ci_low"]) < float(row["delta"]) < float(row["ci_high"])
    assert 0.0 <= float(row["p_value"]) <= 1.0 and row["verdict"] in ("improved", "inconclusive", "worse")
    assert float(row["eval_delta"]) == pytest.approx(50.0)
    assert f"\ndelta: {float(row['delta']):+.4f}\n" in out and "confirmed: " in out  # as a trial shows it
    (confirm_dir,) = (root / "runs").glob("confirm-*")
    for side in ("candidate", "baseline"):
        for k in range(2):
            seed_dir = confirm_dir / side / f"seed-{k}"
            assert len(read_jsonl(seed_dir / "eval.jsonl")) == 100
            assert '"split": "test"' in (seed_dir / "eval.log").read_text()  # the sealed episodes
    assert len(ledger.rows()) == 3  # results.tsv is untouched: confirmations have their own file
    assert cli.main(["status"]) == 0  # the best keep says it was confirmed, and that again is a repeat
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "confirmed on the test split at" in ln)
    assert line.startswith(f"best kept, confirmed on the test split at 1 s: {row['verdict']} (delta ")
    assert f"{row['confirm_id']}; 1 confirm(s) of it: another at this budget repeats a test)" in line
    # these trials have no eval rows: the eval delta, so the power, is unknown, and nothing claims one
    assert row["power"] == "" and "power: not computed (the eval delta is unknown)" in out
    assert "power" not in line
    # what the size assumed, beside what the test split shows: the sides' seeds about their means, pooled
    ss = 0.0
    for side in ("candidate", "baseline"):
        a, b = (stats.eval_score(read_jsonl(confirm_dir / side / f"seed-{k}" / "eval.jsonl")) for k in (0, 1))
        ss += (a - b) ** 2 / 2
    assert f"; seed sd measured on the test split {(ss / 2) ** 0.5:.4g} (df 2)\n" in out
    assert cli.main(["report", "--out", str(root / "p.png")]) == 0
    shown = capsys.readouterr().out
    assert f"| cand | base | +50.0000 | {float(row['delta']):+.4f} |" in shown
    assert f"| 2 | - | {row['verdict']} |" in shown


def test_a_confirmed_tsv_of_before_the_power_column_is_read_and_upgraded_by_the_next_confirm(root, capsys):
    """confirmed.tsv written before it had `power`: status and report read it (no power shown), the next
    append rewrites it once under the current header, its rows kept; a header of neither kind is refused."""
    ledger = Ledger(root / "results.tsv")
    path = CONFIRMED.beside(ledger)
    old = CONFIRMED.earlier[0]
    assert old + ["power"] == CONFIRMED.columns
    earlier_row = dict(
        zip(old, ["2026-11-30T01:00:00", "confirm-a", "k1", "base", "llm", "90", "1,2"], strict=False)
    )
    earlier_row |= {"delta": "0.01", "p_value": "0.3", "verdict": "inconclusive", "status": "ok"}
    path.write_text("\t".join(old) + "\n" + "\t".join(earlier_row.get(c, "") for c in old) + "\n")
    (read,) = CONFIRMED.read(path)
    assert read["power"] == "" and read["verdict"] == "inconclusive"
    assert status.confirms_line([read]).startswith(
        "best kept, confirmed on the test split at 90 s: inconclusive"
    )
    assert "power" not in status.confirms_line([read])
    CONFIRMED.append(
        ledger, [{"confirm_id": "confirm-b", "run_id": "k1", "verdict": "improved", "power": 0.8123}]
    )
    lines = path.read_text().splitlines()
    assert lines[0].split("\t") == CONFIRMED.columns and len(lines) == 3
    first, second = CONFIRMED.read(path)
    assert first == read and (second["confirm_id"], second["power"]) == ("confirm-b", "0.8123")
    assert "(power 0.81, confirm-b;" in status.confirms_line([second])  # improved at 81%: no warning
    path.write_text("timestamp\tsomething else\n")
    with pytest.raises(LedgerError, match="not the autorl confirmed.tsv header"):
        CONFIRMED.append(ledger, [{"confirm_id": "confirm-c"}])
    assert path.read_text() == "timestamp\tsomething else\n"  # refused: never rewritten


def test_test_split_episodes_differ_from_the_eval_episodes():
    from autorl.classic.evaluate import evaluate, random_act_fn

    eval_returns = evaluate("CartPole-v1", random_act_fn, episodes=20)
    test_returns = evaluate("CartPole-v1", random_act_fn, episodes=20, split="test")
    assert list(eval_returns) == list(evaluate("CartPole-v1", random_act_fn, episodes=20))
    assert list(eval_returns) != list(test_returns)


def test_gsm8k_eval_is_a_held_out_slice_of_train_and_test_is_sealed(tmp_path):
    rows = [{"question": f"What is {i} + 1?", "answer": f"#### {i + 1}"} for i in range(400)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "test.jsonl").write_text(json.dumps({"question": "2 + 2?", "answer": "#### 4"}) + "\n")
    from autorl_gsm8k import core as gsm

    train = gsm.dataset(gsm.Settings(split="train", data_path=str(tmp_path)))
    held = gsm.dataset(gsm.Settings(split="eval", data_path=str(tmp_path)))
    test = gsm.dataset(gsm.Settings(split="test", data_path=str(tmp_path)))
    assert {p.prompt for p in train}.isdisjoint({p.prompt for p in held})
    assert len(train) + len(held) == 400 and 20 <= len(held) <= 60  # ~10% held out
    assert [p.answer for p in test] == ["4"]


# ---- the sized confirm and the chance line ----------------------------------------------------------------


def trial_with_rows(
    ledger: Ledger, root: Path, run_id: str, seed_means: list[float], decision: str, **kw: object
) -> dict:
    """A ledger row whose runs/<id>/eval.jsonl holds 40 examples per seed around each seed's mean."""
    rng = np.random.default_rng(len(run_id))
    rows = [
        {"seed": s, "env": "a", "example_id": str(i), "sample": 0, "score": float(m + rng.normal(0, 0.05))}
        for s, m in enumerate(seed_means)
        for i in range(40)
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (root / "runs" / run_id).mkdir(parents=True)
    (root / "runs" / run_id / "eval.jsonl").write_text(text)
    add(
        ledger, run_id, sum(seed_means) / len(seed_means), decision, eval_rows_hash=eval_rows_hash(text), **kw
    )
    return ledger.find(run_id)


def test_a_confirm_trained_beside_other_work_is_recorded_contended_never_a_confirmation(
    root, capsys, monkeypatch
):
    """A side whose seeds trained while other work held the CPUs (their outcome.json, as the runner writes
    it beside busy work: stopped by the budget, 50% of the training waiting for a CPU) measured the machine:
    the confirm says so, records status `contended` and `confirmed: no`, and status names no confirmation."""
    from autorl.commands import confirm
    from autorl.record.outcome import SeedOutcome

    ledger = Ledger(root / "results.tsv")
    classic = (REPO / "classic.toml").read_text()
    classic_trial(ledger, root, "base", "keep", classic, 100.0)
    classic_trial(
        ledger, root, "cand", "keep", classic.replace("learning_rate = 5e-4", "learning_rate = 1e-3"), 150.0
    )
    real_record = confirm.record

    def beside_busy_work(ledger, confirm_id, seeds, sides, *rest):
        for result in sides["candidate"].seeds:
            crowded = SeedOutcome.read(result.dir).model_copy(
                update={"stop_reason": "budget", "cpu_wait_share": 0.5}
            )
            crowded.write(result.dir)
        return real_record(ledger, confirm_id, seeds, sides, *rest)

    monkeypatch.setattr(confirm, "record", beside_busy_work)
    assert cli.main(["confirm", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "health/contended (candidate): 1/1 seeds trained while tasks on this machine waited" in out
    assert "confirmed: no (contended: not measured; run it again when the machine is quiet)" in out
    (row,) = CONFIRMED.read(root / "confirmed.tsv")
    assert row["status"] == "contended" and "health/contended (baseline)" not in out
    assert cli.main(["status"]) == 0
    shown = capsys.readouterr().out
    assert "best kept, confirmed on the test split" not in shown and "confirmed on the test split 0" in shown


def test_confirm_is_sized_for_the_low_end_of_the_eval_delta(root):
    """The fewest seeds a side that give 80% power for the low end of the eval delta's 90% interval, or the
    cap and the power it buys with what would be needed, or --seeds; no seed count for a low end <= 0."""
    from autorl.commands import confirm

    ledger = Ledger(root / "results.tsv")
    base = trial_with_rows(ledger, root, "base", [0.50, 0.55, 0.45, 0.52, 0.48], "keep")
    cand = trial_with_rows(ledger, root, "cand", [0.62, 0.66, 0.58, 0.64, 0.60], "keep")
    noise = stats.NoiseFloor(prior_sd=0.05)
    rows = ledger.rows()
    sized = confirm.size(cand, base, rows, noise, cap=64, given=None)
    c = stats.compare(reference_rows(cand, root / "runs"), reference_rows(base, root / "runs"), noise=noise)
    assert sized.eval_delta == pytest.approx(c.delta) and 0 < sized.low < c.delta  # discounted
    assert sized.chosen_by == "sized" and sized.seeds == sized.needed
    assert stats.power(sized.low, 0.05, sized.seeds) >= 0.8 > stats.power(sized.low, 0.05, sized.seeds - 1)
    capped = confirm.size(cand, base, rows, noise, cap=sized.seeds - 1, given=None)
    assert capped.chosen_by == "capped" and capped.seeds == sized.seeds - 1 and capped.power < 0.8
    assert (
        f"{sized.seeds} seeds a side are the fewest that give 80% or more" in capped.describe()
        and "capped at" in capped.describe()
    )
    assert "(1 trial of the candidate's config vs 1 trial of the baseline's)" in sized.describe()
    assert confirm.size(cand, base, rows, noise, cap=64, given=2).seeds == 2  # --seeds overrides
    behind = confirm.size(base, cand, rows, noise, cap=7, given=None)  # the "candidate" is the worse one
    assert behind.low < 0 and behind.seeds == 7 and "no seed count" in behind.describe()
    # The baseline's config run again (it scored lower): the delta is the one a trial's verdict sees, the
    # candidate against both of the baseline config's trials, not against the baseline's lucky one alone.
    trial_with_rows(
        ledger, root, "base-again", [0.40, 0.44, 0.36, 0.42, 0.38], "discard", config_hash="c-base"
    )
    rows = ledger.rows()
    pooled = confirm.size(cand, base, rows, noise, cap=64, given=None)
    both = reference_evidence(base, rows, ResearchContext.of(base), root / "runs")
    assert both.runs == ("base", "base-again")
    assert pooled.eval_delta == pytest.approx(
        stats.compare(reference_rows(cand, root / "runs"), both.rows).delta
    )
    assert pooled.eval_delta > sized.eval_delta + 0.04 and pooled.seeds < sized.seeds
    assert "(1 trial of the candidate's config vs 2 trials of the baseline's)" in pooled.describe()
    (root / "runs" / "cand" / "eval.jsonl").unlink()
    with pytest.raises(confirm.ConfirmError, match="give --seeds"):
        confirm.size(cand, base, rows, noise, cap=64, given=None)
    assert "power not computed" in confirm.size(cand, base, rows, noise, cap=64, given=3).describe()


def test_status_and_report_say_how_many_improved_verdicts_chance_alone_explains(root, capsys):
    ledger = Ledger(root / "results.tsv")
    add(ledger, "base", 0.40, "keep", verdict="baseline")
    for run_id, verdict, decision in [
        ("k1", "improved", "keep"),
        ("d1", "inconclusive", "discard"),
        ("d2", "worse", "discard"),
        ("k2", "improved", "keep"),
        ("d3", "inconclusive", "discard"),
    ]:
        add(ledger, run_id, 0.5, decision, verdict=verdict, reference_run="base")
    add(ledger, "crashed", None, "crash", verdict="n/a")
    # the baseline's repeat (program.md's noise floor), lucky: a comparison, said to be an A/A one
    add(ledger, "rep", 0.5, "discard", verdict="improved", reference_run="base", config_hash="c-base")
    rows = [
        {"run_id": "k1", "verdict": "improved", "status": "ok"},
        {"run_id": "k2", "verdict": "inconclusive", "status": "ok"},
    ]
    CONFIRMED.append(ledger, rows)
    rate = LLMTrack().false_keep_rate
    st = status.collect(ledger.rows(), confirmed=CONFIRMED.read(root / "confirmed.tsv"))
    assert st["chance"] == {
        "comparisons": 6,
        "improved": 3,
        "repeats": 1,
        "repeats_improved": 1,
        "false_keep_rate": rate,
        "expected_by_chance": pytest.approx(6 * rate),
        "kept": 2,
        "confirmed": 1,
    }
    assert cli.main(["status"]) == 0
    line = (
        "comparisons: 6 (1 a repeat of the baseline's config, A/A), improved 3 (1 of them a repeat); by "
        f"chance alone ~{6 * rate:.1f} would read improved"
    )
    assert line in capsys.readouterr().out
    assert cli.main(["report", "--out", str(root / "p.png"), "--md", str(root / "r.md")]) == 0
    assert (
        line in (root / "r.md").read_text() and "confirmed on the test split 1" in (root / "r.md").read_text()
    )


# ---- a quick look: its own flag, never a context's baseline, reference or noise-floor sample ---------------


def test_a_quick_look_is_one_short_seed_that_no_trial_is_compared_with(fake_root, capsys):
    """`run.py --quick` (here with a test budget): one seed, said on screen, verdict `quick`; the plain run
    after it starts the baseline with the defaults it would have had without the quick look (its own
    budget, all its seeds, no --new-context), and neither it nor the noise floor sees the quick row."""
    assert trial.main(["--quick", "--budget", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "quick look: 1 seed x 0.2 s; no verdict" in out and "verdict: quick" in out
    (quick,) = Ledger(fake_root / "results.tsv").rows()
    assert quick.verdict == "quick" and quick.seeds_planned == 1
    assert cli.main(["status"]) == 0
    assert "no trials yet (only 1 quick look, which no trial is compared with)" in capsys.readouterr().out
    assert trial.main(["--quick", "--seeds", "2"]) == 2  # a quick look is one seed
    assert "--quick is one seed" in capsys.readouterr().err
    assert trial.main(["--budget", "0.3", "--seeds", "2"]) == 0  # no --new-context needed: no baseline yet
    out = capsys.readouterr().out
    assert "verdict: baseline" in out and "from the baseline" not in out
    _, base = Ledger(fake_root / "results.tsv").rows()
    assert (base.budget, base.seeds_planned) == (0.3, 2)
    assert trial.main([]) == 0  # a plain run now takes the baseline's context, not the quick look's
    assert "budget 0.3 s and 2 seeds: from the baseline" in capsys.readouterr().out
    rows = Ledger(fake_root / "results.tsv").rows()
    assert rows[-1].reference_run == base.run_id
    context = ResearchContext.of(base)
    assert [r.run_id for r in context.rows(rows)] == [base.run_id, rows[-1].run_id]
    assert noise_floor(rows, context).n_runs == 2  # the quick look's seed is not a sample
    assert status.collect(rows)["context"]["trials"] == 2
    assert trial.main(["--seeds", "3"]) == 0  # seeds other than the baseline's: said, not refused
    out = capsys.readouterr().out
    assert f"--seeds 3: the baseline {base.run_id} ran 2; the verdict compares" in out
    assert "trial's 3 with the reference's seeds; more seeds cost 1.5x the time and detect a smaller" in out
    assert "budget 0.3 s: from the baseline" in out


def test_a_smaller_confirm_after_a_larger_one_never_replaces_it(root, capsys):
    """Status names the best keep's strongest confirm (the most seeds a side; the latest of equals) and says
    what the rest read; a confirm of a keep already confirmed at its budget says, before it trains, that it
    repeats that test."""
    from autorl.commands import confirm

    def confirmed(confirm_id: str, seeds: int, verdict: str, budget: str = "20") -> dict[str, str]:
        row = dict.fromkeys(CONFIRMED.columns, "")
        seed_list = ",".join(str(10_000_000 + k) for k in range(seeds))
        row |= {"confirm_id": confirm_id, "run_id": "k1", "budget": budget, "seeds": seed_list}
        return row | {"verdict": verdict, "status": "ok", "delta": "0.05", "p_value": "0.01"}

    sized = confirmed("confirm-a", 8, "improved")
    small = confirmed("confirm-b", 1, "inconclusive") | {"delta": "0.0468", "p_value": "0.162"}
    line = status.confirms_line([sized, small])
    assert line.startswith("best kept, confirmed on the test split at 20 s: improved (delta +0.0500, p 0.01")
    assert "confirm-a; 2 confirm(s) of it, the rest (on as many seeds or fewer) read inconclusive" in line
    again = confirmed("confirm-c", 8, "inconclusive")
    assert status.confirms_line([sized, small, again]).split(": ")[1].startswith("inconclusive")  # the latest

    noise = stats.NoiseFloor(prior_sd=0.05)
    size = confirm.Size(1, 0.07, 0.02, 0.05, 0.1, 9, "--seeds")
    plan = confirm.ConfirmPlan("confirm-d", "k1", "base", 1.0, 20.0, [1], size, noise)
    assert confirm.repeat_note([sized, small], plan) == (
        "note: k1 was confirmed at 20 s before (confirm-a: improved, 8 seeds a side): this confirm repeats "
        "that test and adds no evidence for it; autorl status names the one with the most seeds"
    )
    longer = confirm.ConfirmPlan("confirm-e", "k1", "base", 2.0, 40.0, [1], size, noise)
    assert confirm.repeat_note([sized, small], longer) == ""  # a long-budget confirm is another test
    assert confirm.repeat_note([sized | {"status": "contended"}], plan) == ""  # never measured
