"""TensorBoard event files (issue 52): every trial's seeds, written after the trial from the files the
backends leave, read back here with TensorBoard's own reader; a tracker that fails costs a warning line,
never the row; `autorl events` writes them for runs recorded before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.fake_backend import FakeBackend
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from autorl.commands import cli, trial
from autorl.commands.tune import parse_summary
from autorl.io.jsonl import read_jsonl
from autorl.llm.track import LLMTrack
from autorl.record import events, rungs, stats
from autorl.record.ledger import Ledger

REPO = Path(__file__).resolve().parent.parent


def read_back(event_dir: Path) -> EventAccumulator:
    acc = EventAccumulator(str(event_dir), size_guidance={"scalars": 0})  # 0: every point
    acc.Reload()
    return acc


def test_a_classic_trial_writes_each_seeds_curves_in_both_families_with_its_eval(
    tmp_path, monkeypatch, capsys
):
    """The real classic runner: each seed's metrics against the optimizer step and against the training
    clock (ms), its final eval score at its last step and its rungs where they were taken; the run's name
    says the trial, the seed and the description."""
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    argv = ["--track", "classic", "--config", str(REPO / "classic.toml"), "--budget", "600", "--seeds", "2"]
    assert trial.main([*argv, "--description", "shipped classic.toml"]) == 0
    run_dir = tmp_path / parse_summary(capsys.readouterr().out)["run_dir"]
    found = sorted(p.name for p in (run_dir / "tb").iterdir())
    assert found == ["seed-0_shipped_classic.toml", "seed-1_shipped_classic.toml"]
    for k, name in enumerate(found):
        acc, seed_dir = read_back(run_dir / "tb" / name), run_dir / f"seed-{k}"
        tags = set(acc.Tags()["scalars"])
        for family in ("step", "time"):
            assert {
                f"{family}/{key}" for key in ("reward_mean", "loss", "entropy", "approx_kl", "lr")
            } <= tags
            assert f"{family}/eval/score" in tags and f"{family}/rung/score" in tags
        metrics = read_jsonl(seed_dir / "metrics.jsonl")
        curve = acc.Scalars("step/entropy")
        assert [e.step for e in curve] == [r["step"] for r in metrics]  # fewer than MAX_POINTS: every step
        assert [e.value for e in curve] == pytest.approx([r["entropy"] for r in metrics], rel=1e-6)
        clock = acc.Scalars("time/entropy")
        assert [e.step for e in clock] == [round(r["seconds"] * 1000) for r in metrics]
        (final,) = acc.Scalars("step/eval/score")
        own = stats.eval_score(read_jsonl(seed_dir / "eval.jsonl"))
        assert final.step == metrics[-1]["step"] and final.value == pytest.approx(own, rel=1e-6)
        rung_steps = [e.step for e in acc.Scalars("step/rung/score")]
        assert rung_steps == [r.step for r in rungs.read(seed_dir)] and len(rung_steps) == 2


def test_an_llm_test_double_trial_writes_the_same_names_and_thins_long_curves(root, monkeypatch, capsys):
    """The LLM runner with the test-double backend (tests/fakes/fake_backend.py writes metrics.jsonl as the
    trainer does): the step and time families, the final eval; a curve longer than MAX_POINTS is thinned to
    it, its first and last steps kept."""
    monkeypatch.setattr(events, "MAX_POINTS", 10)
    backend = FakeBackend("ok", 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    assert trial.main(["--seeds", "1", "--budget", "0.8", "--description", "lr 3e-5"]) == 0
    run_dir = root / parse_summary(capsys.readouterr().out)["run_dir"]
    acc = read_back(run_dir / "tb" / "seed-0_lr_3e-5")
    metrics = read_jsonl(run_dir / "seed-0" / "metrics.jsonl")
    assert len(metrics) > 10
    curve = acc.Scalars("step/reward_mean")
    assert len(curve) == 10 and (curve[0].step, curve[-1].step) == (1, metrics[-1]["step"])
    assert [e.step for e in acc.Scalars("time/reward_mean")][-1] == round(metrics[-1]["elapsed_s"] * 1000)
    assert "time/elapsed_s" not in acc.Tags()["scalars"]  # the clock is the axis, not a curve
    (final,) = acc.Scalars("step/eval/score")
    row = Ledger(root / "results.tsv").rows()[-1]
    assert row.eval_score is not None and final.value == pytest.approx(row.eval_score, abs=1e-6)


def test_a_broken_tracker_is_one_warning_and_the_row_is_recorded(root, monkeypatch, capsys):
    """The event writer fails (a full disk): the trial's row is in results.tsv, its summary printed, exit 0,
    one warning line said."""
    from tensorboardX import event_file_writer

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(event_file_writer, "EventsWriter", full_disk)
    backend = FakeBackend("ok", 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    assert trial.main(["--seeds", "1", "--budget", "0.5"]) == 0
    out = capsys.readouterr()
    warnings = [ln for ln in (out.out + out.err).splitlines() if "TensorBoard events not written" in ln]
    assert len(warnings) == 1 and "No space left on device" in warnings[0]
    assert parse_summary(out.out)["status"] == "ok"
    (row,) = Ledger(root / "results.tsv").rows()
    assert row.status == "ok" and json.loads((root / "runs" / row.run_id / "result.json").read_text())


def test_autorl_events_writes_them_for_recorded_runs_and_refuses_an_unknown_one(root, monkeypatch, capsys):
    """A run recorded before trials wrote events (its tb/ removed here): `autorl events` writes it again, for
    every trial of the ledger or the ones named; an unknown run is exit 2."""
    backend = FakeBackend("ok", 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    assert trial.main(["--seeds", "1", "--budget", "0.5", "--description", "old run"]) == 0
    (row,) = Ledger(root / "results.tsv").rows()
    tb = root / "runs" / row.run_id / "tb"
    before = {p.name for p in tb.iterdir()}
    for p in tb.rglob("*"):
        if p.is_file():
            p.unlink()
    capsys.readouterr()
    assert cli.main(["events"]) == 0
    assert {p.name for p in tb.iterdir()} == before == {"seed-0_old_run"}
    assert "step/reward_mean" in read_back(tb / "seed-0_old_run").Tags()["scalars"]
    assert f"1/1 {row.run_id}: 1 seed(s)" in capsys.readouterr().out
    assert cli.main(["events", row.run_id[:15]]) == 0
    assert cli.main(["events", "no-such-run"]) == 2
    assert "no trial with run id 'no-such-run'" in capsys.readouterr().err


# ---- W&B ---------------------------------------------------------------------------------------------------


def wandb_records(path: Path) -> list:
    """The records of an offline W&B run file (run-*.wandb: W&B's 7-byte header, then records framed as in a
    LevelDB log, 32 KiB blocks, each a wandb_internal_pb2.Record)."""
    import struct

    from wandb.proto import wandb_internal_pb2

    data, pos, chunk, out = path.read_bytes(), 7, b"", []
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk, pos = chunk + data[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind in (1, 4):  # a full record, or a record's last fragment
            record = wandb_internal_pb2.Record()
            record.ParseFromString(chunk)
            out.append(record)
            chunk = b""
    return out


def test_wandb_offline_writes_a_run_per_seed_and_one_for_the_trial_inside_the_run_dir(
    root, monkeypatch, capsys, tmp_path_factory
):
    """AUTORL_WANDB=1 without a key: offline runs in runs/<run>/wandb, one per seed (its metrics, its config,
    its eval score) and one for the trial (verdict, delta, p), grouped by research context; nothing written
    outside the run directory (an empty HOME stays empty); the summary says how to sync them."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AUTORL_WANDB", "1")
    monkeypatch.setenv("AUTORL_WANDB_PROJECT", "autorl-test")
    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DIR", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    backend = FakeBackend("ok", 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    assert trial.main(["--seeds", "2", "--budget", "0.5", "--description", "wandb try"]) == 0
    out = capsys.readouterr().out
    (row,) = Ledger(root / "results.tsv").rows()
    where = root / "runs" / row.run_id / "wandb"
    assert f"W&B: 3 run(s) written offline in {where}; upload them with: wandb sync" in out
    runs = {}
    for path in where.glob("offline-run-*/run-*.wandb"):
        records = wandb_records(path)
        (meta,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        summary = {
            item.key: json.loads(item.value_json)
            for r in records
            if r.WhichOneof("record_type") == "summary"
            for item in r.summary.update
            if item.key
        }
        history = [r for r in records if r.WhichOneof("record_type") == "history"]
        config = {item.key: json.loads(item.value_json) for item in meta.config.update}
        runs[meta.display_name] = (meta, summary, history, config)
    assert set(runs) == {row.run_id, f"{row.run_id} seed-0", f"{row.run_id} seed-1"}
    meta, summary, history, config = runs[row.run_id]
    assert meta.project == "autorl-test" and meta.run_group.startswith("llm ")
    assert summary["verdict"] == "baseline" and summary["eval_score"] == pytest.approx(row.eval_score)
    assert config["autorl/description"] == "wandb try" and config["model.name"] == "tiny-test-model"
    meta, summary, history, config = runs[f"{row.run_id} seed-0"]
    metrics = read_jsonl(root / "runs" / row.run_id / "seed-0" / "metrics.jsonl")
    assert len(history) == len(metrics) and "eval/score" in summary
    assert list(home.iterdir()) == []


def test_a_broken_wandb_is_one_warning_and_the_row_is_recorded(root, monkeypatch, capsys):
    import wandb

    def refused(*args, **kwargs):
        raise RuntimeError("api_key not configured (no-tty)\nmore lines")

    monkeypatch.setenv("AUTORL_WANDB", "1")
    monkeypatch.setattr(wandb, "init", refused)
    backend = FakeBackend("ok", 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    assert trial.main(["--seeds", "1", "--budget", "0.5"]) == 0
    out = capsys.readouterr().out
    assert [ln for ln in out.splitlines() if "W&B" in ln] == [
        "[trial] warning: W&B runs not written (RuntimeError: api_key not configured (no-tty)"
    ]
    assert Ledger(root / "results.tsv").rows()[-1].status == "ok"


def test_a_seed_s_events_are_written_without_importing_torch(tmp_path):
    """The trial's runner never loads torch; writing the events (tensorboardX would import it) keeps it so,
    and the scalars read back. A process that has torch already still writes them."""
    import subprocess
    import sys

    seed = tmp_path / "run" / "seed-0"
    seed.mkdir(parents=True)
    rows = [{"step": k, "seconds": 0.5 * k, "loss": 1.0 / k} for k in (1, 2, 3)]
    (seed / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = (
        "import sys; from pathlib import Path; from autorl.record import events\n"
        "if sys.argv[2] == 'torch': import torch\n"
        "print(len(events.write_run(Path(sys.argv[1]))), 'torch' in sys.modules)\n"
    )
    for first, imported in (("", "False"), ("torch", "True")):
        run = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "run"), first], capture_output=True, text=True
        )
        assert run.returncode == 0 and run.stdout.split() == ["1", imported], run.stdout + run.stderr
        acc = read_back(tmp_path / "run" / "tb" / "seed-0")
        assert [e.value for e in acc.Scalars("step/loss")] == pytest.approx([1.0, 0.5, 1 / 3])
