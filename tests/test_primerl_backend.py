"""The prime-rl backend, tested up to the process boundary against tests/fakes/fake_prime_rl/rl (a test
double of prime-rl's `rl` launcher, not prime-rl): rendering (golden files), key checks, dry-run validation,
console and metrics parsing, weight selection, crash attribution, the not-found path, and full budgeted
runs."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from autorl.engine.backend import WHOLE_MACHINE, Slot
from autorl.io.tomlcheck import ConfigError
from autorl.llm.config import load_train_config
from autorl.llm.primerl import backend as primerl
from autorl.llm.primerl import install as primerl_install
from autorl.llm.primerl.backend import PrimeRLBackend
from autorl.llm.primerl.follow import (
    COMPONENTS,
    PrimeRLFollower,
    attribute_crash,
    merge_metrics,
    our_row,
    parse_step_line,
)
from autorl.llm.primerl.install import NOT_FOUND, PrimeRLNotFound, find_prime_rl, locate_prime_rl
from autorl.llm.primerl.render import render, to_toml, unknown_keys
from autorl.llm.primerl.weights import latest_stable_broadcast
from autorl.llm.primerl_keys import is_primerl_key
from autorl.record import runview

REPO = Path(__file__).resolve().parent.parent
FAKE_RL = REPO / "tests" / "fakes" / "fake_prime_rl" / "rl"
GOLDEN = REPO / "tests" / "golden"
UPDATE_GOLDEN = os.environ.get("AUTORL_UPDATE_GOLDEN") == "1"

# The default train.toml shape (local builtin model, arithmetic taskset): kept here so the agent editing the
# real train.toml never breaks this test.
DEFAULT_TOML = """\
max_steps = 200
seq_len = 256

[model]
name = ".autorl/models/tiny-arith"

[trainer.optim]
lr = 1e-4

[orchestrator]
batch_size = 64
group_size = 8

[orchestrator.train.sampling]
temperature = 1.0
max_completion_tokens = 16

[[orchestrator.train.source]]
name = "arithmetic"

[orchestrator.train.source.env.taskset]
id = "autorl-arithmetic"
"""

# What the orchestrator prints (prime-rl 559b447, log_train_batch; loguru with colours forced).
ORCH_STEP = (
    "\x1b[2m12:03:41\x1b[0m\x1b[1m\x1b[32m SUCCESS\x1b[0m\x1b[1m\x1b[32m \x1b[22mStep 7 |    12.3s | "
    "Reward 0.4102 | Trainable 252/256 (98.4%) | Turns 1.0 | Branches 1.0 | Max Off-Policy 1 | Error 0.0% | "
    "Cancelled 0.0% | Truncation 3.1%\x1b[0m"
)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test gets its own repo root (no machine file) and no ambient prime-rl / W&B / GPU settings."""
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    for var in ("PRIME_RL_DIR", "AUTORL_WANDB", "AUTORL_PRIMERL_PORT", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    for var in [v for v in os.environ if v.startswith("FAKE_RL_")]:
        monkeypatch.delenv(var)
    monkeypatch.setattr(primerl_install, "_warned", set())


@pytest.fixture
def fake_prime(tmp_path, monkeypatch) -> Path:
    """A directory laid out like a prime-rl checkout whose `.venv/bin/rl` is the test double."""
    prime = tmp_path / "prime-rl"
    bin_dir = prime / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "python3"):  # the double's `#!/usr/bin/env python3` finds ours first on PATH
        (bin_dir / name).symlink_to(sys.executable)
    (bin_dir / "rl").symlink_to(FAKE_RL)
    monkeypatch.setenv("PRIME_RL_DIR", str(prime))
    return prime


def load(tmp_path: Path, text: str, name: str = "train.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load_train_config(path, backend="prime-rl")


def arithmetic_config(
    tmp_path: Path, extra: str = "", model: str = "Qwen/Qwen3-0.6B", max_steps: int | None = None
):
    head = f"max_steps = {max_steps}\n" if max_steps else ""
    return load(
        tmp_path,
        head
        + f"""
[model]
name = "{model}"
[orchestrator]
batch_size = 8
group_size = 4
[[orchestrator.train.source]]
name = "arithmetic"
[orchestrator.train.source.env.taskset]
id = "autorl-arithmetic"
{extra}""",
    )


class RawConfig:
    """A config that skipped the loader (to feed keys the loader would refuse)."""

    def __init__(self, path: Path, data: dict) -> None:
        self.path, self.data = path, data


# ----------------------------------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------------------------------


def check_golden(name: str, text: str) -> None:
    golden = GOLDEN / name
    if UPDATE_GOLDEN:
        golden.write_text(text)
    assert golden.exists(), f"missing {golden}: run with AUTORL_UPDATE_GOLDEN=1 once"
    assert text == golden.read_text(), (
        f"rendered config differs from {golden} (AUTORL_UPDATE_GOLDEN=1 rewrites it)"
    )


@pytest.mark.parametrize(
    ("source", "golden"),
    [
        (REPO / "examples" / "gsm8k-2gpu.toml", "primerl-gsm8k-2gpu.toml"),
        (None, "primerl-default.toml"),
    ],
)
def test_rendered_config_matches_golden_and_uses_only_pinned_schema_keys(tmp_path, source, golden):
    cfg = load_train_config(source, backend="prime-rl") if source else load(tmp_path, DEFAULT_TOML)
    rendered = PrimeRLBackend().resolve(cfg, tmp_path / "runs" / "r1" / "seed-0", seed=1234)
    text = to_toml(rendered).replace(str(tmp_path.resolve()), "<ROOT>")
    check_golden(golden, text)
    assert unknown_keys(rendered) == []
    assert tomllib.loads(to_toml(rendered)) == rendered  # the TOML `rl` reads is exactly the dict


def _listening_hosts(rendered: dict) -> dict[str, str | None]:
    """Every address a server of the rendered run binds to, as prime-rl 559b447 reads it (an absent host:
    vLLM binds every interface; the trainer's metrics server, when on, 0.0.0.0)."""
    hosts: dict[str, str | None] = {"inference.server": rendered["inference"]["server"].get("host")}
    for part in ("orchestrator", "trainer"):
        if "rollout_transport" in rendered.get(part, {}):
            hosts[f"{part}.rollout_transport"] = rendered[part]["rollout_transport"].get("host", "localhost")
    if "metrics_server" in rendered.get("trainer", {}):
        hosts["trainer.metrics_server"] = rendered["trainer"]["metrics_server"].get("host", "0.0.0.0")
    return hosts


@pytest.mark.parametrize("source", [REPO / "examples" / "gsm8k-2gpu.toml", None])
def test_every_server_of_a_rendered_run_listens_on_loopback_only(tmp_path, source):
    """prime-rl's vLLM server binds every interface when inference.server.host is unset: the harness sets it
    to 127.0.0.1, for the whole machine and for a slot that moves the ports, and the client uses it."""
    cfg = load_train_config(source, backend="prime-rl") if source else load(tmp_path, DEFAULT_TOML)
    for slot in (WHOLE_MACHINE, Slot(gpus=(0, 1), port=8600, gpu_share=0.5)):
        out = render(cfg.data, tmp_path / "runs" / "r" / "seed-0", seed=1, slot=slot)
        hosts = _listening_hosts(out)
        assert set(hosts.values()) == {"127.0.0.1"}, hosts
        assert out["orchestrator"]["model"]["client"]["base_url"].startswith("http://127.0.0.1:")


def test_a_wider_binding_is_an_explicit_choice_and_a_bad_one_is_refused(tmp_path, monkeypatch):
    cfg = load(tmp_path, DEFAULT_TOML)
    monkeypatch.setenv("AUTORL_PRIMERL_HOST", "0.0.0.0")
    out = render(cfg.data, tmp_path / "runs" / "r" / "seed-0", seed=1)
    assert out["inference"]["server"]["host"] == "0.0.0.0"
    assert out["orchestrator"]["model"]["client"]["base_url"] == "http://127.0.0.1:8000/v1"
    for bad_env, bad in (("AUTORL_PRIMERL_HOST", "every-interface"), ("AUTORL_PRIMERL_PORT", "80x")):
        monkeypatch.setenv(bad_env, bad)
        with pytest.raises(ConfigError, match=bad_env):
            PrimeRLBackend().check(cfg)
        monkeypatch.delenv(bad_env)


def test_render_adds_harness_keys_and_keeps_the_users(tmp_path):
    cfg = load(tmp_path, DEFAULT_TOML)
    run_dir = tmp_path / "runs" / "r1" / "seed-0"
    out = render(cfg.data, run_dir, seed=99)
    # the user's keys, untouched
    assert out["orchestrator"]["batch_size"] == 64
    assert out["trainer"]["optim"] == {"lr": 1e-4}
    assert cfg.data["model"]["name"] == ".autorl/models/tiny-arith"  # the input is not mutated
    # harness-owned keys
    assert out["output_dir"] == str(run_dir.resolve() / "primerl")
    assert out["run"] == {"name": "autorl"} and out["clean"] is True
    assert out["deployment"] == {"type": "single_node", "num_infer_gpus": 1, "num_train_gpus": 1}
    assert out["weight_broadcast"] == {"type": "filesystem"}
    assert out["monitors"] == {"file": {"path": "metrics.jsonl"}}  # W&B off
    assert "eval" not in out["orchestrator"]
    agent = out["orchestrator"]["train"]["source"][0]["env"]["agent"]
    assert agent == {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}}
    assert out["inference"]["vllm"]["seed"] == 99
    assert out["inference"]["vllm"]["max_model_len"] == 256  # follows seq_len
    port = out["inference"]["server"]["port"]
    assert out["orchestrator"]["model"]["client"]["base_url"] == f"http://127.0.0.1:{port}/v1"
    # a local model: absolute (rl runs in prime-rl's checkout) and an explicit renderer (auto needs a hub id)
    assert out["model"]["name"] == str((tmp_path / ".autorl" / "models" / "tiny-arith").resolve())
    assert out["orchestrator"]["renderer"] == {"name": "default"}


def test_render_hub_model_keeps_auto_renderer_and_wandb_only_from_the_environment(tmp_path, monkeypatch):
    cfg = arithmetic_config(tmp_path)
    out = render(cfg.data, tmp_path / "run", seed=1)
    assert out["model"]["name"] == "Qwen/Qwen3-0.6B" and "renderer" not in out["orchestrator"]
    monkeypatch.setenv("AUTORL_WANDB", "1")
    monkeypatch.setenv("AUTORL_PRIMERL_PORT", "8123")
    out = render(cfg.data, tmp_path / "run", seed=1)
    assert out["monitors"]["wandb"]["project"] == "autorl"
    assert out["inference"]["server"]["port"] == 8123
    assert out["orchestrator"]["model"]["client"]["base_url"] == "http://127.0.0.1:8123/v1"
    assert unknown_keys(out) == []


def test_render_seeds_a_difficulty_pool_sampler(tmp_path):
    cfg = arithmetic_config(
        tmp_path, '[orchestrator.train.source.curriculum.sampler]\ntype = "difficulty_pool"\n'
    )
    out = render(cfg.data, tmp_path / "run", seed=5)
    assert out["orchestrator"]["train"]["source"][0]["curriculum"]["sampler"]["seed"] == 5
    assert unknown_keys(out) == []


def test_check_rejects_a_key_outside_the_pinned_schema(tmp_path):
    backend = PrimeRLBackend()
    backend.check(load(tmp_path, DEFAULT_TOML))  # the default shape passes
    data = tomllib.loads(DEFAULT_TOML)
    data["trainer"]["optim"]["lrr"] = 1e-5
    with pytest.raises(ConfigError, match=r"trainer\.optim\.lrr"):
        backend.check(RawConfig(tmp_path / "train.toml", data))
    assert not is_primerl_key("trainer.optim.lrr") and is_primerl_key("trainer.optim.lr")


# ----------------------------------------------------------------------------------------------------
# Finding prime-rl, launching, the not-found path
# ----------------------------------------------------------------------------------------------------


def test_not_found_message_and_dry_run_note(tmp_path):
    backend = PrimeRLBackend()
    assert locate_prime_rl() is None
    assert backend.availability_note() == NOT_FOUND
    assert "--prime-rl PATH" in NOT_FOUND and "PRIME_RL_DIR" in NOT_FOUND
    cfg = arithmetic_config(tmp_path)
    assert backend.resolve(cfg, tmp_path / "run", 0)["deployment"]["num_train_gpus"] == 1  # still renders
    with pytest.raises(PrimeRLNotFound, match="prime-rl not found"):
        backend.preflight()
    with pytest.raises(PrimeRLNotFound, match="prime-rl not found"):
        backend.launch(cfg, tmp_path / "run", 0)
    with pytest.raises(PrimeRLNotFound):
        backend.eval_command(cfg, None, tmp_path / "eval.jsonl")


def test_find_prime_rl_checks_layout_and_commit(tmp_path, fake_prime, capsys):
    assert find_prime_rl(tmp_path / "nowhere") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert find_prime_rl(empty) is None
    assert "uv sync --all-extras" in capsys.readouterr().err

    prime = find_prime_rl(None)  # from $PRIME_RL_DIR
    assert prime is not None and prime.rl == fake_prime / ".venv" / "bin" / "rl"
    assert prime.commit is None and not prime.supported
    assert "not a git checkout" in capsys.readouterr().err

    git = ["git", "-C", str(fake_prime), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    prime = find_prime_rl(str(fake_prime))
    assert prime is not None and prime.commit and len(prime.commit) == 40
    assert not prime.supported and "not the supported 559b447" in capsys.readouterr().err


def test_launch_validates_with_dry_run_then_returns_rl_command(tmp_path, fake_prime, monkeypatch):
    log = tmp_path / "dry-runs.log"
    monkeypatch.setenv("FAKE_RL_DRY_RUN_LOG", str(log))
    cfg = arithmetic_config(tmp_path)
    run_dir = tmp_path / "runs" / "r" / "seed-0"
    launch = PrimeRLBackend().launch(cfg, run_dir, seed=3)
    assert log.read_text().count("\n") == 1  # prime-rl's own validation ran once, before anything starts
    rendered = run_dir / primerl.RENDERED_FILE
    assert launch.argv == [str(fake_prime / ".venv" / "bin" / "rl"), "@", str(rendered.resolve())]
    assert launch.cwd == fake_prime.resolve()
    assert launch.env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert launch.env["PATH"].startswith(str(fake_prime.resolve() / ".venv" / "bin"))
    assert tomllib.loads(rendered.read_text())["inference"]["vllm"]["seed"] == 3
    assert (run_dir / "primerl" / "autorl" / "configs" / "orchestrator.json").exists()  # the dry run's output
    launched = json.loads((run_dir / primerl.LAUNCH_FILE).read_text())
    assert launched["run_id"] == launch.env["PRL_RUN_ID"]


def test_dry_run_schema_error_becomes_config_error_with_prime_rls_message(tmp_path, fake_prime):
    data = tomllib.loads(DEFAULT_TOML)
    data["trainer"]["optim"]["lrr"] = 1e-5  # a typo the loader would catch; here prime-rl must
    with pytest.raises(ConfigError) as err:
        PrimeRLBackend().launch(RawConfig(tmp_path / "train.toml", data), tmp_path / "run", seed=0)
    message = str(err.value)
    assert "--dry-run" in message and "--trainer.optim.lrr" in message
    assert "Extra inputs are not permitted" in message
    assert "│" not in message and "\x1b" not in message  # the box and colours are gone


def test_eval_command_runs_autorl_eval_with_vllm_in_prime_rls_environment(tmp_path, fake_prime):
    cfg = arithmetic_config(tmp_path)
    launch = PrimeRLBackend().eval_command(cfg, tmp_path / "w", tmp_path / "eval.jsonl")
    assert launch.argv[:3] == [
        str(fake_prime.resolve() / ".venv" / "bin" / "python"),
        "-m",
        "autorl.llm.eval",
    ]
    assert launch.argv[3:] == [
        "--weights",
        str(tmp_path / "w"),
        "--out",
        str(tmp_path / "eval.jsonl"),
        "--engine",
        "vllm",
    ]
    assert launch.env["CUDA_VISIBLE_DEVICES"] == "0,1"  # vLLM on both GPUs


def test_install_environments_uses_no_deps_and_pins_prime_rls_packages(tmp_path, fake_prime, monkeypatch):
    calls: list[list[str]] = []

    class Done:
        returncode, stdout, stderr = 0, "torch==2.11.0+cu128\nvllm==0.26.0\n-e file:///x\n", ""

    def run(cmd, **kw):
        calls.append(list(cmd))
        if "--constraint" in cmd:
            calls[-1].append(Path(cmd[cmd.index("--constraint") + 1]).read_text())
        return Done()

    prime = find_prime_rl(str(fake_prime))
    primerl_install.install_environments(prime, run=run)
    install = calls[0]
    assert install[1:3] == ["pip", "install"] and "--no-deps" in install
    assert str(prime.python) in install
    editable = [install[i + 1] for i, a in enumerate(install) if a == "-e"]
    assert str(REPO / "environments" / "gsm8k") in editable and str(REPO) in editable
    pins = calls[2][-1]
    assert "torch==2.11.0+cu128" in pins and "vllm==0.26.0" in pins and "-e" not in pins
    assert calls[-1][0] == str(prime.python) and "autorl.llm.eval" in calls[-1][-1]


# ----------------------------------------------------------------------------------------------------
# Console lines and metrics
# ----------------------------------------------------------------------------------------------------


def test_parse_step_line_on_prime_rl_console_formats():
    step = parse_step_line(ORCH_STEP)
    assert step is not None and (step.step, step.reward, step.seconds) == (7, 0.4102, 12.3)
    assert (
        parse_step_line("12:00:01 SUCCESS Step 12 |  2m 5s | Reward 0.9000 | Trainable 1/1 (100.0%)").seconds
        == 125
    )
    assert parse_step_line("12:00:01 SUCCESS Step 1 |   850ms | Reward 0.0000 | x").seconds == 0.85
    json_record = json.dumps(
        {"level": "SUCCESS", "message": "Step 3 |    1.0s | Reward 0.5000 | Trainable 2/2"}
    )
    assert parse_step_line(json_record).step == 3
    not_steps = [
        "12:00:01 SUCCESS Evaluated gsm8k (Step 5) | Policy v4 |    3.0s | Reward 0.3000 | Turns 1.0",
        "[trainer0]:12:00:01 SUCCESS Step 5 |    1.1s | Loss 0.0123 | Entropy 0.5 | LR 3.00e-06",
        "12:00:01 WARNING Step 4: empty train batch after 8 finalized episodes",
        "12:00:01    INFO Starting orchestrator loop (max_steps=20)",
        '@@autorl {"event": "step"}',
        "",
    ]
    assert [parse_step_line(line) for line in not_steps] == [None] * len(not_steps)


def trainer_rows(step: int, loss: float, lr: float = 3e-6, peak: float = 10.0) -> list[dict]:
    return [
        {"step": step, "time": 1.0, "perf/throughput": 5000.0, "perf/peak_memory": peak},
        {"step": step, "time": 1.0, "optim/lr": lr, "optim/grad_norm": 0.3},
        {"step": step, "time": 1.0, "loss/mean": loss, "entropy/all/mean": 0.8},
        {
            "step": step,
            "time": 1.0,
            "time/step": 2.0,
            "time/forward_backward": 1.5,
            "time/wait_for_batch": 0.5,
        },
    ]


def orchestrator_row(step: int, reward: float, rollouts: int = 256) -> dict:
    return {
        "step": step,
        "time": 1.0,
        "train/agg/effective/agent/reward/mean": reward,
        "train/agg/all/agent/reward/mean": reward - 0.1,
        "progress/rollouts": rollouts,
        "time/step": 9.0,
        "time/pack": 0.1,
    }


def test_metrics_merge_by_step_keeps_both_step_times():
    merged = merge_metrics([orchestrator_row(1, 0.25), *trainer_rows(1, 0.5), orchestrator_row(2, 0.5)])
    assert sorted(merged) == [1, 2]
    assert merged[1]["trainer/time/step"] == 2.0 and merged[1]["orchestrator/time/step"] == 9.0
    row = our_row(1, merged[1])
    shape = {"step": 1, "reward_mean": 0.25, "loss": 0.5, "lr": 3e-6, "seconds": 2.0, "samples_per_s": 128.0}
    assert row.items() >= shape.items()  # the embedded backend's keys, plus the same-named extras
    assert row["grad_norm"] == 0.3 and row["peak_memory_gb"] == 10.0
    assert our_row(2, merged[2])["loss"] is None  # the trainer has not finished step 2 yet


def test_follower_emits_trainer_steps_and_copies_complete_steps(tmp_path):
    prime_dir, ours = tmp_path / "primerl", tmp_path / "metrics.jsonl"
    prime_dir.mkdir()
    source = prime_dir / "metrics.jsonl"
    follow = PrimeRLFollower(prime_dir, ours)

    assert follow("12:00:00    INFO Starting orchestrator loop (max_steps=20)") is None
    source.write_text(json.dumps(orchestrator_row(1, 0.25)) + "\n")
    first = follow(ORCH_STEP.replace("Step 7", "Step 1"))
    assert first["event"] == "step" and first["step"] == 0 and first["batch"] == 1  # clock starts, 0 trained
    with open(source, "a") as f:
        for row in trainer_rows(1, 0.5):
            f.write(json.dumps(row) + "\n")
        f.write('{"step": 2, "time": 1.0, "train/agg/effective/ag')  # a row still being written
    event = follow("12:00:05    INFO some other orchestrator line")
    assert event["step"] == 1 and event["loss"] == 0.5 and event["reward"] == 0.25
    assert follow("12:00:06    INFO nothing new") is None
    assert [json.loads(line)["step"] for line in ours.read_text().splitlines()] == [1]
    with open(source, "a") as f:
        f.write('ent/reward/mean": 0.75, "progress/rollouts": 256}\n')  # the rest of the cut row
    follow("12:00:07    INFO more")
    assert follow.rows[-1]["train/agg/effective/agent/reward/mean"] == 0.75


# ----------------------------------------------------------------------------------------------------
# Weights and crash attribution
# ----------------------------------------------------------------------------------------------------


def make_broadcast(run: Path, step: int, stable: bool) -> Path:
    d = run / "broadcasts" / f"step_{step}"
    d.mkdir(parents=True)
    (d / "model-00001-of-00001.safetensors").write_bytes(b"x")
    if stable:
        (d / "STABLE").touch()
    return d


def test_latest_stable_broadcast_skips_an_incomplete_step(tmp_path):
    assert latest_stable_broadcast(tmp_path) is None
    make_broadcast(tmp_path, 9, stable=True)
    make_broadcast(tmp_path, 10, stable=True)
    make_broadcast(tmp_path, 11, stable=False)  # cut short by the stop: no STABLE yet
    (tmp_path / "broadcasts" / "step_12.tmp").mkdir()
    step, path = latest_stable_broadcast(tmp_path)
    assert step == 10 and path.name == "step_10"


def test_collect_assembles_weights_with_base_model_files_and_reads_metrics(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    (base / "tokenizer.json").write_text("{}")
    (base / "model.safetensors").write_bytes(b"base")  # the base weights must not leak into the result
    run_dir = tmp_path / "seed-0"
    prime_dir = run_dir / "primerl" / "autorl"
    make_broadcast(prime_dir, 3, stable=True)
    make_broadcast(prime_dir, 4, stable=False)
    rows = [orchestrator_row(s, 0.1 * s) for s in (1, 2, 3, 4)]
    rows += [r for s in (1, 2, 3) for r in trainer_rows(s, 1.0 / s, peak=10.0 + s)]
    prime_dir.joinpath("metrics.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows) + '{"step": 4, "lo'
    )
    (run_dir / primerl.LAUNCH_FILE).write_text(json.dumps({"model": str(base), "run_id": "autorl-none"}))

    outcome = PrimeRLBackend().collect(None, run_dir)
    assert outcome.weights_dir == run_dir / "weights" and outcome.extras["weights_step"] == 3
    assert sorted(p.name for p in outcome.weights_dir.iterdir()) == [
        "config.json",
        "model-00001-of-00001.safetensors",
        "tokenizer.json",
    ]
    assert outcome.steps == 3 and outcome.peak_memory_gb == 13.0
    assert outcome.failed_component is None
    ours = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in ours] == [1, 2, 3, 4] and ours[1]["loss"] == 0.5 and ours[3]["loss"] is None
    assert "GPU check skipped: nvidia-smi not found" in outcome.notes or any(
        "GPU check:" in n for n in outcome.notes
    )


def write_logs(prime_dir: Path, tracebacks: dict[str, str]) -> Path:
    logs = prime_dir / "logs" / "attempt_1"
    logs.mkdir(parents=True)
    (prime_dir / "logs" / "latest").symlink_to("attempt_1")
    for i, component in enumerate(COMPONENTS):
        text = f"12:00:0{i}    INFO {component} started\n"
        if component in tracebacks:
            text += f'Traceback (most recent call last):\n  File "x.py", line 1\n{tracebacks[component]}\n'
        path = logs / f"{component}.log"
        path.write_text(text)
        os.utime(path, (1000 + i, 1000 + i))
    return logs


@pytest.mark.parametrize("component", ["inference", "orchestrator", "trainer"])
def test_crash_attributed_from_the_launchers_error_line_with_that_log_tail(tmp_path, component):
    prime_dir = tmp_path / "primerl" / "autorl"
    write_logs(prime_dir, {component: f"RuntimeError: {component} exploded"})
    console = tmp_path / "run.log"
    console.write_text(
        "12:00:00    INFO Starting RL run\n"
        f"\x1b[31m12:00:09   ERROR Error: {component.capitalize()} failed with exit code 1\x1b[0m\n"
        "12:00:09   ERROR Terminating all processes...\n"
    )
    who, log_tail = attribute_crash(prime_dir, console)
    assert who == component
    assert log_tail[-1] == f"RuntimeError: {component} exploded"


def test_crash_attribution_without_console_picks_the_first_component_to_die(tmp_path):
    prime_dir = tmp_path / "primerl" / "autorl"
    write_logs(
        prime_dir, {"inference": "CUDA error: out of memory", "orchestrator": "ConnectionError: refused"}
    )
    assert (
        attribute_crash(prime_dir, None)[0] == "inference"
    )  # its log stopped first; the orchestrator followed


def test_our_stop_is_not_a_crash(tmp_path):
    prime_dir = tmp_path / "primerl" / "autorl"
    write_logs(prime_dir, {"trainer": "KeyboardInterrupt"})
    console = tmp_path / "run.log"
    console.write_text(
        "12:00:00 WARNING Received SIGTERM, terminating all processes...\n"
        "12:00:00   ERROR Error: Trainer failed with exit code -15\n"
    )
    assert attribute_crash(prime_dir, console) is None
    assert attribute_crash(prime_dir, None)[0] == "trainer"  # without the console only the traceback is known


# ----------------------------------------------------------------------------------------------------
# End to end: the test double under autorl.engine.process, with a budget
# ----------------------------------------------------------------------------------------------------


def run_trial(tmp_path: Path, cfg, budget: float = 2.0, grace: float = 5.0):
    from autorl.engine.process import BudgetSpec, run_budgeted

    backend = PrimeRLBackend()
    run_dir = tmp_path / "runs" / "r" / "seed-0"
    launch = backend.launch(cfg, run_dir, seed=11)
    events: list[dict] = []
    spec = BudgetSpec(budget_s=budget, startup_cap_s=30.0, hang_s=30.0, grace_s=grace)
    result = run_budgeted(launch, run_dir / "run.log", spec, on_event=lambda e, t: events.append(e))
    leftovers = primerl.run_processes(launch.env["PRL_RUN_ID"])  # before collect, which would kill them
    return backend, run_dir, result, events, leftovers


def tiny_model(path: Path) -> dict:
    """A stand-in HF model directory: config, tokenizer file and real safetensors weights (numpy: fast)."""
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    tensors = {
        "model.embed_tokens.weight": rng.standard_normal((64, 16)).astype(np.float32),
        "model.norm.weight": np.ones(16, dtype=np.float32),
    }
    path.mkdir(parents=True)
    save_file(tensors, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2", "hidden_size": 16}))
    (path / "tokenizer_config.json").write_text("{}")
    return tensors


def test_budgeted_run_picks_latest_weights_and_leaves_no_process(tmp_path, fake_prime, monkeypatch):
    import numpy as np
    from safetensors.numpy import load_file

    base = tmp_path / "tiny"
    tensors = tiny_model(base)
    monkeypatch.setenv("FAKE_RL_MODEL_DIR", str(base))
    monkeypatch.setenv("FAKE_RL_STEP_S", "0.1")
    monkeypatch.setenv("FAKE_RL_STARTUP_S", "0.5")  # start-up is not charged to the budget
    monkeypatch.setenv("FAKE_RL_GRANDCHILDREN", "2")
    cfg = arithmetic_config(tmp_path, model=str(base))  # no max_steps: only the budget stops it

    backend, run_dir, result, events, leftovers = run_trial(tmp_path, cfg, budget=2.0)
    assert result.stop_reason == "budget" and result.status == "ok" and not result.hard_killed
    assert result.startup_seconds >= 0.5 and 1.9 <= result.training_seconds <= 2.0
    assert leftovers == []
    steps = [e for e in events if e["event"] == "step"]
    assert steps[0]["step"] == 0 and steps[0]["batch"] == 1  # the clock starts when batch 1 is handed over
    assert steps[-1]["step"] >= 3

    outcome = backend.collect(cfg, run_dir)
    assert outcome.failed_component is None
    assert outcome.steps >= steps[-1]["step"] and outcome.extras["weights_step"] in (
        outcome.steps,
        outcome.steps - 1,
    )
    # an HF directory: the broadcast's shards + index, the base model's config and tokenizer files
    files = sorted(p.name for p in outcome.weights_dir.iterdir())
    assert files == [
        "config.json",
        "model-00001-of-00001.safetensors",
        "model.safetensors.index.json",
        "tokenizer_config.json",
    ]
    index = json.loads((outcome.weights_dir / "model.safetensors.index.json").read_text())
    assert set(index["weight_map"]) == set(tensors)
    loaded = load_file(str(outcome.weights_dir / "model-00001-of-00001.safetensors"))
    assert all(np.array_equal(loaded[k], v) for k, v in tensors.items())
    ours = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(ours) >= outcome.steps and all(r["reward_mean"] is not None for r in ours)
    assert outcome.peak_memory_gb is not None
    seed = runview.load_seed(run_dir, 0)  # what `autorl show` reads of a prime-rl seed
    assert seed.reward is not None and seed.reward.end > seed.reward.start  # the fake's reward rises
    assert set(seed.trends) == {"loss", "mismatch_kl", "entropy"} and seed.truncated == pytest.approx(0.25)


def test_sigterm_ignoring_run_with_escaped_worker_is_killed_completely(tmp_path, fake_prime, monkeypatch):
    monkeypatch.setenv("FAKE_RL_IGNORE_SIGTERM", "1")
    monkeypatch.setenv("FAKE_RL_GRANDCHILDREN", "2")
    monkeypatch.setenv("FAKE_RL_SETSID", "1")
    cfg = arithmetic_config(tmp_path)
    backend, run_dir, result, _, leftovers = run_trial(tmp_path, cfg, budget=1.0, grace=1.0)
    assert result.stop_reason == "budget" and result.hard_killed
    assert leftovers == []
    outcome = backend.collect(cfg, run_dir)
    assert outcome.weights_dir is not None and outcome.failed_component is None


@pytest.mark.parametrize("component", ["inference", "orchestrator", "trainer"])
def test_crashing_component_is_named_with_its_traceback(tmp_path, fake_prime, monkeypatch, component):
    monkeypatch.setenv("FAKE_RL_CRASH", component)
    monkeypatch.setenv("FAKE_RL_CRASH_STEP", "2")
    monkeypatch.setenv("FAKE_RL_STEP_S", "0.05")
    cfg = arithmetic_config(tmp_path)
    backend, run_dir, result, _, leftovers = run_trial(tmp_path, cfg, budget=30.0)
    assert result.status == "crash" and leftovers == []
    outcome = backend.collect(cfg, run_dir)
    assert outcome.failed_component == component
    assert any(f"fake {component} failure" in line for line in outcome.extras["failed_log_tail"])
    assert any(f"{component} died" in note for note in outcome.notes)


def test_run_to_max_steps_finishes_cleanly(tmp_path, fake_prime, monkeypatch):
    monkeypatch.setenv("FAKE_RL_STEP_S", "0.02")
    cfg = arithmetic_config(tmp_path, max_steps=5)
    backend, run_dir, result, _, leftovers = run_trial(tmp_path, cfg, budget=30.0)
    assert result.stop_reason == "exited" and result.returncode == 0 and leftovers == []
    outcome = backend.collect(cfg, run_dir)
    assert outcome.steps == 5 and outcome.extras["weights_step"] == 5
    assert "Training finished!" in (run_dir / "run.log").read_text()


def test_hung_run_is_killed_as_timeout_and_keeps_its_last_weights(tmp_path, fake_prime, monkeypatch):
    from autorl.engine.process import BudgetSpec, run_budgeted

    monkeypatch.setenv("FAKE_RL_HANG_STEP", "3")
    monkeypatch.setenv("FAKE_RL_STEP_S", "0.02")
    cfg = arithmetic_config(tmp_path)
    backend, run_dir = PrimeRLBackend(), tmp_path / "run"
    launch = backend.launch(cfg, run_dir, seed=0)
    spec = BudgetSpec(budget_s=60.0, startup_cap_s=30.0, hang_s=3.0, grace_s=2.0)
    result = run_budgeted(launch, run_dir / "run.log", spec)
    assert result.stop_reason == "hang" and result.status == "timeout"
    assert primerl.run_processes(launch.env["PRL_RUN_ID"]) == []
    outcome = backend.collect(cfg, run_dir)
    assert outcome.steps == 2 and outcome.extras["weights_step"] == 2 and outcome.failed_component is None


def test_run_py_dry_run_without_prime_rl_prints_config_and_note(tmp_path, capsys):
    from autorl.commands import trial

    code = trial.main(
        ["--backend", "prime-rl", "--dry-run", "--config", str(REPO / "examples" / "gsm8k-2gpu.toml")]
    )
    out = capsys.readouterr().out
    assert code == 0
    rendered = tomllib.loads(out)  # the TOML that `rl @ file` would get (comment lines aside)
    assert rendered["deployment"]["num_infer_gpus"] == 1
    assert rendered["weight_broadcast"]["type"] == "filesystem"
    assert out.rstrip().endswith(f"# note: {NOT_FOUND}")


def test_env_server_crash_counts_as_orchestrator_with_the_env_servers_log(tmp_path):
    prime_dir = tmp_path / "primerl" / "autorl"
    logs = write_logs(prime_dir, {})
    (logs / "envs" / "train").mkdir(parents=True)
    (logs / "envs" / "train" / "gsm8k.log").write_text(
        "Traceback (most recent call last):\nImportError: no module\n"
    )
    console = tmp_path / "run.log"
    console.write_text("12:00:09   ERROR Error: Train env server gsm8k failed with exit code 1\n")
    assert attribute_crash(prime_dir, console) == (
        "orchestrator",
        ["Traceback (most recent call last):", "ImportError: no module"],
    )
    console.write_text(  # after our SIGTERM a component exiting 1 is not a crash
        "12:00:00 WARNING Received SIGTERM, terminating all processes...\n"
        "12:00:01   ERROR Error: Orchestrator failed with exit code 1\n"
    )
    assert attribute_crash(prime_dir, console) is None


def test_render_makes_a_relative_data_path_absolute(tmp_path, monkeypatch):
    """`rl` runs in prime-rl's checkout: a relative GSM8K data_path must point into our repo there too."""
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    cfg = load(tmp_path, DEFAULT_TOML)
    data = copy.deepcopy(cfg.data)
    data["orchestrator"]["train"]["source"][0]["env"]["taskset"]["data_path"] = "data/gsm8k"
    out = render(data, tmp_path / "run", seed=0)
    taskset = out["orchestrator"]["train"]["source"][0]["env"]["taskset"]
    assert taskset["data_path"] == str((tmp_path / "data" / "gsm8k").resolve())


# ----------------------------------------------------------------------------------------------------
# Seeds side by side: slots (GPU pairs, seeds per pair, ports, vLLM memory share)
# ----------------------------------------------------------------------------------------------------

# Published shapes (config.json) of a 0.6B, a 1.5B and a 7B model (Qwen3-0.6B, Qwen2.5-1.5B, Qwen2.5-7B).
QWEN3_0_6B = dict(
    hidden_size=1024,
    num_hidden_layers=28,
    intermediate_size=3072,
    vocab_size=151936,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    tie_word_embeddings=True,
)
QWEN25_1_5B = dict(
    hidden_size=1536,
    num_hidden_layers=28,
    intermediate_size=8960,
    vocab_size=151936,
    num_attention_heads=12,
    num_key_value_heads=2,
    tie_word_embeddings=True,
)
QWEN25_7B = dict(
    hidden_size=3584,
    num_hidden_layers=28,
    intermediate_size=18944,
    vocab_size=152064,
    num_attention_heads=28,
    num_key_value_heads=4,
    tie_word_embeddings=False,
)


def described_machine(n_gpus: int, memory_gb: float, cpus: int = 64):
    from autorl.io.machine import Gpu, Machine

    gpus = [Gpu(i, "H100", memory_gb) for i in range(n_gpus)]
    return Machine(python="3.12", platform="Linux x86_64", torch=None, cpus=cpus, ram_gb=512.0, gpus=gpus)


def model_config_dir(tmp_path: Path, shape: dict) -> Path:
    """A model directory with only config.json: the parameter count comes from the shape."""
    model = tmp_path / "models" / str(shape["hidden_size"])
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "qwen2", **shape}))
    return model


def test_parameter_counts_from_safetensors_headers_and_from_config(tmp_path):
    from autorl.llm.primerl.slots import config_parameters, model_parameters, safetensors_parameters

    tensors = tiny_model(tmp_path / "tiny")
    assert safetensors_parameters(tmp_path / "tiny") == sum(t.size for t in tensors.values())
    assert model_parameters(str(tmp_path / "tiny")) == sum(t.size for t in tensors.values())
    # the published sizes: 0.6B (0.44B without embeddings), 1.5B (1.31B without), 7.6B
    assert 0.58e9 < config_parameters(QWEN3_0_6B) < 0.62e9
    assert 1.50e9 < config_parameters(QWEN25_1_5B) < 1.56e9
    assert 7.5e9 < config_parameters(QWEN25_7B) < 7.7e9
    assert config_parameters({"hidden_size": 8}) is None
    assert model_parameters("Org/not-on-this-machine") is None


def test_eight_gpus_give_four_pairs_with_distinct_ports(tmp_path):
    from autorl.llm.primerl.render import PORT_STRIDE

    cfg = arithmetic_config(tmp_path, model=str(model_config_dir(tmp_path, QWEN25_7B)))
    plan = PrimeRLBackend().plan_slots(cfg, described_machine(8, 80.0))
    assert [s.gpus for s in plan] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert [s.index for s in plan] == [0, 1, 2, 3] and all(s.gpu_share is None for s in plan)
    assert [s.port for s in plan] == [8000 + PORT_STRIDE * i for i in range(4)]


def test_a_small_model_shares_a_pair_and_a_big_one_does_not(tmp_path):
    backend = PrimeRLBackend()
    small = arithmetic_config(tmp_path, model=str(model_config_dir(tmp_path, QWEN25_1_5B)))
    big = arithmetic_config(tmp_path, model=str(model_config_dir(tmp_path, QWEN25_7B)))
    two_80gb = described_machine(2, 80.0)
    plan = backend.plan_slots(small, two_80gb)
    k = len(plan)
    assert k >= 2 and all(s.gpus == (0, 1) for s in plan)  # 1.5B x 18 bytes + margin < half of 72 GB
    assert all(s.gpu_share == pytest.approx(1 / k) for s in plan)
    assert len({s.port for s in plan}) == k
    assert backend.plan_slots(big, two_80gb) == [Slot(index=0, gpus=(0, 1), port=8000)]  # k = 1
    assert len(backend.plan_slots(small, described_machine(2, 24.0))) == 1  # less memory: no sharing
    # every seed needs its cores: 16 CPUs over 4 pairs leave one seed per pair
    assert len(backend.plan_slots(small, described_machine(8, 80.0, cpus=16))) == 4
    # fewer than 2 GPUs: the whole machine
    assert backend.plan_slots(small, described_machine(1, 80.0)) == [WHOLE_MACHINE]


def test_seeds_per_pair_override_and_unknown_model(tmp_path, monkeypatch):
    backend = PrimeRLBackend()
    # a hub name not on this machine: size unknown, one seed per pair
    cfg = arithmetic_config(tmp_path, model="Org/not-on-this-machine")
    assert len(backend.plan_slots(cfg, described_machine(2, 80.0))) == 1
    monkeypatch.setenv("AUTORL_PRIMERL_SEEDS_PER_PAIR", "3")
    monkeypatch.setenv("AUTORL_PRIMERL_PORT", "9000")
    plan = backend.plan_slots(cfg, described_machine(4, 80.0))
    # across pairs first: slots 0 and 1 on different pairs
    assert [s.gpus for s in plan] == [(0, 1), (2, 3)] * 3
    assert [s.port for s in plan] == [9000, 9100, 9200, 9300, 9400, 9500]
    assert all(s.gpu_share == pytest.approx(1 / 3) for s in plan)
    monkeypatch.setenv("AUTORL_PRIMERL_SEEDS_PER_PAIR", "0")
    with pytest.raises(ValueError, match="AUTORL_PRIMERL_SEEDS_PER_PAIR"):
        backend.plan_slots(cfg, described_machine(2, 80.0))


def test_launch_in_a_slot_renders_its_ports_memory_share_and_gpus(tmp_path, fake_prime, monkeypatch):
    log = tmp_path / "dry-runs.log"
    monkeypatch.setenv("FAKE_RL_DRY_RUN_LOG", str(log))
    monkeypatch.setenv("AUTORL_PRIMERL_SEEDS_PER_PAIR", "2")
    backend = PrimeRLBackend()
    cfg = arithmetic_config(tmp_path)
    plan = backend.plan_slots(cfg, described_machine(8, 80.0))
    slot = plan[5]  # the second seed on pair (2, 3)
    assert slot.gpus == (2, 3) and slot.gpu_share == 0.5
    run_dir = tmp_path / "runs" / "r" / "seed-5"
    launch = backend.launch(cfg, run_dir, seed=5, slot=slot)
    assert log.read_text().count("\n") == 1  # the double's `rl --dry-run` accepted every rendered key
    assert launch.env["CUDA_VISIBLE_DEVICES"] == "2,3"
    out = tomllib.loads((run_dir / primerl.RENDERED_FILE).read_text())
    assert unknown_keys(out) == []
    port = slot.port
    assert port == 8500 and out["inference"]["server"]["port"] == port
    assert out["orchestrator"]["model"]["client"]["base_url"] == f"http://127.0.0.1:{port}/v1"
    transport = {"type": "zmq", "host": "127.0.0.1", "port": port + 10}  # prime-rl binds port and port + 1
    assert out["orchestrator"]["rollout_transport"] == out["trainer"]["rollout_transport"] == transport
    assert out["orchestrator"]["env_server_base_port"] == port + 20
    assert out["inference"]["vllm"]["gpu_memory_utilization"] == 0.45  # half of prime-rl's default 0.9
    assert json.loads((run_dir / primerl.LAUNCH_FILE).read_text())["slot"]["port"] == port


def test_launch_on_the_whole_machine_renders_what_resolve_does(tmp_path, fake_prime):
    """The default slot adds nothing: the rendered file is the golden-file rendering."""
    backend = PrimeRLBackend()
    cfg = load(tmp_path, DEFAULT_TOML)
    run_dir = tmp_path / "runs" / "r1" / "seed-0"
    backend.launch(cfg, run_dir, seed=1234)
    text = (run_dir / primerl.RENDERED_FILE).read_text().replace(str(tmp_path.resolve()), "<ROOT>")
    assert text == (GOLDEN / "primerl-default.toml").read_text()


def free_base_port() -> int:
    """A base port whose two slots' ports (vLLM, transport and transport + 1, env server) are all free."""
    import socket

    for base in range(20000, 60000, 1000):
        ports = [base + s * 100 + offset for s in (0, 1) for offset in (0, 10, 11, 20)]
        try:
            for port in ports:
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    pytest.skip("no free port range")


def run_side_by_side(tmp_path: Path, slots: list, name: str) -> list:
    """Two seeds of the test double at once (each in its slot) under the budget; their results."""
    import threading

    from autorl.engine.process import BudgetSpec, run_budgeted

    backend, cfg = PrimeRLBackend(), arithmetic_config(tmp_path)
    spec = BudgetSpec(budget_s=1.5, startup_cap_s=30.0, hang_s=30.0, grace_s=5.0)
    results: dict[int, object] = {}
    launches = [
        backend.launch(cfg, tmp_path / "runs" / name / f"seed-{i}", seed=i, slot=slot)
        for i, slot in enumerate(slots)
    ]

    def one(i: int) -> None:
        results[i] = run_budgeted(launches[i], tmp_path / "runs" / name / f"seed-{i}" / "run.log", spec)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(slots))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(primerl.run_processes(launch.env["PRL_RUN_ID"]) == [] for launch in launches)
    return [results[i] for i in range(len(slots))]


def test_two_slots_run_side_by_side_without_port_collisions(tmp_path, fake_prime, monkeypatch):
    monkeypatch.setenv("FAKE_RL_BIND_PORTS", "1")  # the double holds every port a real run opens
    monkeypatch.setenv("FAKE_RL_STEP_S", "0.05")
    monkeypatch.setenv("AUTORL_PRIMERL_PORT", str(free_base_port()))
    monkeypatch.setenv("AUTORL_PRIMERL_SEEDS_PER_PAIR", "2")
    plan = PrimeRLBackend().plan_slots(arithmetic_config(tmp_path), described_machine(2, 80.0))
    results = run_side_by_side(tmp_path, plan, "slots")
    assert [r.stop_reason for r in results] == ["budget", "budget"]
    assert all(r.status == "ok" and r.steps >= 1 for r in results)
    # the control: the same two seeds on the whole machine share every port and die of it (the one that
    # binds a port second; with both starting at once each may lose a different port)
    results = run_side_by_side(tmp_path, [WHOLE_MACHINE, WHOLE_MACHINE], "same-ports")
    crashed = [i for i, r in enumerate(results) if r.status == "crash"]
    assert crashed
    for i in crashed:
        outcome = PrimeRLBackend().collect(None, tmp_path / "runs" / "same-ports" / f"seed-{i}")
        assert "Address already in use" in outcome.extras["failed_log_tail"][-1]


def test_prime_rl_not_found_is_refused_before_prepare(tmp_path, monkeypatch, capsys):
    """A fresh clone asking for prime-rl without it: exit 2 with the not-found message, before prepare runs
    (no machine file, no model download)."""
    from autorl.commands import trial

    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    monkeypatch.delenv("PRIME_RL_DIR", raising=False)
    shutil.copyfile(REPO / "eval.toml", tmp_path / "eval.toml")
    code = trial.main(["--backend", "prime-rl", "--config", str(REPO / "examples" / "gsm8k-2gpu.toml")])
    out, err = capsys.readouterr()
    assert code == 2 and NOT_FOUND in err and out.rstrip().endswith("status: invalid")
    assert not (tmp_path / ".autorl" / "machine.json").exists() and not (tmp_path / "results.tsv").exists()
