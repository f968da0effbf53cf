"""scripts/gpu_proof.py, the GPU proof kit, in its CPU quick mode.

Kept cheap (the suite's time on 2 cores is nearly spent): the kit's main() runs in the test's process (torch
and transformers are imported once for the whole suite; a child process would pay ~20 s to import them again)
on part 2, the Qwen3-shape trainers, which run in the kit's own process, with a fault injected into part 1 to
check that a failing part leaves an error row while the others still run. Parts 1 and 3-5 start trainers,
evals and run.py as children (minutes on 2 cores): run them by hand, `uv run python scripts/gpu_proof.py
--quick` (docs/gpu.md).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
KIT = REPO / "scripts" / "gpu_proof.py"


def numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, list):
        return [x for v in value for x in numbers(v)]
    return []


@pytest.fixture
def gpu_proof(monkeypatch: pytest.MonkeyPatch):
    """The script as a module, with what its main() changes in the process put back afterwards: the
    environment (AUTORL_ROOT, PYTHONPATH), sys.path and torch's thread count."""
    import torch

    for name in ("AUTORL_ROOT", "PYTHONPATH", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the quick mode's CPU rows, also on a GPU machine
    monkeypatch.setattr(sys, "path", list(sys.path))
    spec = importlib.util.spec_from_file_location("gpu_proof", KIT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gpu_proof", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    environment = dict(os.environ)  # main() sets AUTORL_ROOT itself: monkeypatch would not undo that
    yield module
    os.environ.clear()
    os.environ.update(environment)
    torch.set_num_threads(threads)


def test_quick_mode_records_a_failing_part_and_runs_the_others(
    gpu_proof, tmp_path: Path, monkeypatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    earlier = {"part": 4, "name": "cpu-trial", "status": "ok", "reason": "", "figures": {"seeds": 6}}
    earlier_row = {**earlier, "device": "X", "date": "D"}
    (out / "gpu_proof.json").write_text(json.dumps({"rows": [earlier_row]}))

    def broken(_kit):
        raise RuntimeError("injected fault")

    monkeypatch.setitem(gpu_proof.PART_FUNCS, 1, broken)
    assert gpu_proof.main(["--quick", "--parts", "1,2", "--out", str(out)]) == 0
    data = json.loads((out / "gpu_proof.json").read_text())
    assert data["mode"] == "quick" and data["settings"]["quick"] is True
    rows = {r["name"]: r for r in data["rows"]}
    # part 1 failed: one error row with the exception, and part 2 still ran
    assert (
        rows["default"]["status"] == "error" and rows["default"]["reason"] == "RuntimeError: injected fault"
    )
    ours = rows["qwen3/embedded"]
    assert ours["status"] == "ok", ours
    figures = [x for v in ours["figures"].values() for x in numbers(v)]
    assert figures and all(math.isfinite(x) and x > 0 for x in figures), ours
    assert len(ours["figures"]["samples_per_s_runs"]) == data["settings"]["rounds"]
    assert 0 < ours["figures"]["completion_len_mean"] <= data["settings"]["completion_tokens"]
    trl = rows["qwen3/trl"]  # skipped without TRL (the project's venv), measured with the bundle
    assert trl["status"] == "ok" or trl["reason"].startswith("skipped: "), trl
    # a part not run this time keeps its row from the earlier run in the same --out
    assert rows["cpu-trial"] == earlier_row
    assert [r["part"] for r in data["rows"]] == sorted(r["part"] for r in data["rows"])
    table = (out / "gpu_proof.md").read_text()
    for row in data["rows"]:
        assert f"| {row['part']} | {row['name']} | {row['status']} |" in table
    assert "RuntimeError: injected fault" in table


def test_quick_mode_part_6_runs_the_fast_path_rows(gpu_proof, tmp_path: Path, monkeypatch) -> None:
    """Part 6 (scripts/gpu_fast.py) on the CPU: the graphs sampler's step body draws what HFSampler draws, the
    samplers are timed, the trainer runs with sampler hf-graphs (compiled, no CUDA graph on a CPU), and the
    GPU-only memory row says so. The files are written after each row (a device call cut short keeps the rows
    so far), and `--fast-rows` runs some rows again, in the order it names them, keeping the others from the
    file."""
    out = tmp_path / "out"
    out.mkdir()
    written: list[list[str]] = []
    real_write = gpu_proof.write_results

    def recording_write(out_dir, header, rows):
        written.append([r.name for r in rows])
        real_write(out_dir, header, rows)

    monkeypatch.setattr(gpu_proof, "write_results", recording_write)
    made_with: list[dict] = []  # the settings the trainer's StaticSampler is made with, at each trainer run
    real_bench = gpu_proof.bench_module

    def recording_bench():
        bench = real_bench()
        measure = bench.bench_embedded

        def bench_embedded(*args, **kwargs):
            from autorl.llm.embedded import train

            made_with.append(getattr(train.StaticSampler, "made_with", {}))
            return measure(*args, **kwargs)

        bench.bench_embedded = bench_embedded
        return bench

    monkeypatch.setattr(gpu_proof, "bench_module", recording_bench)
    assert gpu_proof.main(["--quick", "--parts", "6", "--out", str(out)]) == 0
    from autorl.llm.embedded import train
    from autorl.llm.embedded.static_sampler import StaticSampler

    tuned = {"guard_once": True, "sync_every": 8, "fused": True}
    assert made_with == [{}, tuned] and train.StaticSampler is StaticSampler  # for the tuned run only
    names = ["fast/correct", "fast/sampler", "fast/trainer", "fast/profile", "fast/memory"]
    assert written == [names[:1], names[:2], names[:3], names[:4], names, names]  # each row, then the part
    rows = {r["name"]: r for r in json.loads((out / "gpu_proof.json").read_text())["rows"]}
    correct = rows["fast/correct"]
    assert correct["status"] == "ok", correct
    alike, total = map(int, correct["figures"]["rows_alike"].split("/"))
    assert alike == total == 72 and correct["figures"]["within_1e-4"] is True
    sampler = rows["fast/sampler"]
    assert sampler["status"] == "ok", sampler
    timed = ("hf", "static", "graphs", "graphs_guard_once", "graphs_sync_8", "graphs_fused")
    assert all(sampler["figures"][f"{n}_tokens_per_s"] > 0 for n in timed)
    assert all(sampler["figures"][f"{n}_vs_graphs"] > 0 for n in ("guard_once", "sync_8", "fused"))
    trainer = rows["fast/trainer"]
    assert trainer["status"] == "ok", trainer
    for run in ("hf-graphs", "hf-graphs-tuned"):  # the tuned run's sampler is fused: pick in its step
        assert (
            trainer["figures"][f"{run}_samples_per_s"] > 0 and 0 < trainer["figures"][f"{run}_gen_share"] < 1
        )
    profiled = rows["fast/profile"]
    assert profiled["status"] == "ok", profiled
    assert profiled["figures"]["sample_s"] > 0 and profiled["figures"]["train_s"] > 0
    assert len(profiled["figures"]["top_cpu_ms"]) == 5 and "top_gpu_ms" not in profiled["figures"]  # no CUDA
    assert "autorl/train" in (out / "fast-profile.txt").read_text()  # the step's own range, timed
    assert rows["fast/memory"]["status"] == "skipped"

    assert all("cudagraph_skips" not in r["figures"] for r in rows.values())  # none logged
    real_module = gpu_proof.script_module

    def a_skip_in_correct(name: str):  # inductor's warning, logged by torch's own function, during one row
        module = real_module(name)
        if name == "gpu_fast":
            measured = module.correct

            def correct(kit, g):
                from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

                log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to mutated inputs (a test)")
                return measured(kit, g)

            module.correct = correct
        return module

    monkeypatch.setattr(gpu_proof, "script_module", a_skip_in_correct)
    rerun = ["--quick", "--parts", "6", "--fast-rows", "sampler,correct", "--out", str(out)]
    assert gpu_proof.main(rerun) == 0
    again = {r["name"]: r for r in json.loads((out / "gpu_proof.json").read_text())["rows"]}
    assert sorted(again) == sorted(names) and written[-1] == ["fast/sampler", "fast/correct"]  # as named
    assert again["fast/trainer"] == trainer and again["fast/profile"] == profiled  # kept from the file
    assert again["fast/correct"]["status"] == "ok" and again["fast/correct"] != correct  # measured again
    assert again["fast/correct"]["figures"]["cudagraph_skips"] == [
        "skipping cudagraphs due to mutated inputs (a test)"
    ]
    assert "cudagraph_skips" not in again["fast/sampler"]["figures"]  # the row it was not logged in


def test_a_failed_setup_leaves_an_error_row_per_part(gpu_proof, tmp_path: Path, monkeypatch) -> None:
    def no_root(work, settings):
        raise OSError("disk full")

    monkeypatch.setattr(gpu_proof, "make_root", no_root)
    out = tmp_path / "out"
    assert gpu_proof.main(["--quick", "--parts", "2,5", "--out", str(out)]) == 1
    rows = json.loads((out / "gpu_proof.json").read_text())["rows"]
    assert [(r["part"], r["status"], r["reason"]) for r in rows] == [
        (2, "error", "setup failed: OSError: disk full"),
        (5, "error", "setup failed: OSError: disk full"),
    ]
    assert "| 5 | eval | error | setup failed: OSError: disk full |" in (out / "gpu_proof.md").read_text()


@pytest.mark.parametrize(
    "bad, flag",
    [(["--parts", "1,9"], "--parts"), (["--parts", "6", "--fast-rows", "sampler,speed"], "--fast-rows")],
)
def test_bad_arguments_exit_2_before_anything_runs(tmp_path: Path, bad: list[str], flag: str) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(KIT), *bad, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert flag in proc.stderr.strip().splitlines()[-1]
    assert not out.exists()


def test_the_plan_row_is_unknown_when_a_larger_k_failed(gpu_proof) -> None:
    """H200, 2026-11-26: k = 4 and 8 were stopped, the plan said 16; k = 2 (the largest measured) being best
    said nothing about 16, and the row said plan_is_best true."""
    Row = gpu_proof.Row

    def k_row(k: int, rate: float | None) -> Row:
        if rate is None:
            return Row(3, f"share/tiny/k={k}", "error", "seed 0: stopped by a signal")
        return Row(3, f"share/tiny/k={k}", "ok", figures={"k": k, "aggregate_samples_per_s": rate})

    measured = [k_row(1, 260.3), k_row(2, 435.2)]
    cut_short = gpu_proof.verdict_row("tiny", [*measured, k_row(4, None), k_row(8, None)], planned=16)
    assert cut_short.figures["plan_is_best"] is None and cut_short.figures["failed_ks"] == [4, 8]
    # Every k tried was measured: a plan beyond them agrees while the aggregate still grows at the largest.
    assert gpu_proof.verdict_row("tiny", measured, planned=16).figures["plan_is_best"] is True
    assert gpu_proof.verdict_row("tiny", measured, planned=1).figures["plan_is_best"] is False
    assert (
        gpu_proof.verdict_row("tiny", [*measured, k_row(4, None)], planned=2).figures["plan_is_best"] is True
    )


def test_bundle_exclude_names_only_bundled_packages(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(KIT), "--build-bundle", str(tmp_path / "b"), "--exclude", "pandas,pandaz"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "pandaz" in proc.stderr and "pandas" not in proc.stderr.split(":")[-1]
    assert not (tmp_path / "b").exists()


def test_part_6_rows_are_kept_by_name_and_a_whole_part_row_replaces_them(gpu_proof, tmp_path: Path) -> None:
    """write_results: a part-6 row run again replaces its earlier self and keeps the others; a row for the
    whole of part 6 (its error) replaces every earlier part-6 row, and a measured row replaces that one."""
    Row = gpu_proof.Row
    header = {"device": "d", "date": "t", "command": "c"}

    def names() -> list[str]:
        return [r["name"] for r in json.loads((tmp_path / "gpu_proof.json").read_text())["rows"]]

    gpu_proof.write_results(tmp_path, header, [Row(2, "qwen3/trl", "ok"), Row(6, "fast/correct", "ok")])
    gpu_proof.write_results(tmp_path, header, [Row(6, "fast/sampler", "ok")])
    assert sorted(names()) == ["fast/correct", "fast/sampler", "qwen3/trl"]
    gpu_proof.write_results(tmp_path, header, [Row(6, "fast", "error", "setup")])
    assert sorted(names()) == ["fast", "qwen3/trl"]
    gpu_proof.write_results(tmp_path, header, [Row(6, "fast/memory", "ok")])
    assert sorted(names()) == ["fast/memory", "qwen3/trl"]
