"""The prime-rl backend: a real 2-GPU trial with prime-rl's `rl` launcher (vLLM on GPU 0, trainer on GPU 1).

What it does, in trial order:
- `resolve` renders the run config: the user's train.toml (the raw dict, exactly as written) plus the
  harness-owned keys (output dir, fixed run name, 1+1 GPU deployment, filesystem weight broadcast, file
  metrics, no online eval, inference server, seeds, local-only environment harness). Every rendered key is in
  the pinned schema (autorl/llm/primerl_keys.txt, prime-rl 559b447).
- `launch` validates the rendered file with prime-rl's own `rl @ file --dry-run` (seconds, before any GPU
  starts; a schema error becomes a ConfigError with prime-rl's message), then returns the `rl @ file`
  command. autorl.process runs it in its own process group under the budget.
- While it runs, `PrimeRLFollower` (the Launch's parse_line) turns the orchestrator's console lines
  (`Step N | 1.2s | Reward 0.41 | ...`) into progress step events; the first one starts the budget clock
  (the orchestrator prints it when it hands batch 1 to the trainer: training has begun). It also follows
  prime-rl's metrics.jsonl and copies per-step figures into our run directory's metrics.jsonl.
- `collect` picks the latest complete weights (the highest `broadcasts/step_N` holding `STABLE`) and
  assembles an evaluable Hugging Face directory from them plus the base model's config and tokenizer files
  (prime-rl's broadcast holds only the safetensors shards), counts trainer steps, reads peak memory, names
  the component that died (inference | orchestrator | trainer) with its log tail, and checks that no
  process of the run is left on a GPU.
- `eval_command` runs the fixed evaluation (`python -m autorl.llm.eval --engine vllm`) in prime-rl's
  environment, on both GPUs.

prime-rl is an external install (its own uv environment: torch/vLLM pinned by it). Without it, a dry run
still renders the config and says "prime-rl not found"; a real run stops with that message (exit 2).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl import paths
from autorl.backend import WHOLE_MACHINE, Backend, Launch, Slot, TrainOutcome

SUPPORTED_COMMIT = "559b447"  # the prime-rl commit whose schema, logs and layout this module follows
SUPPORTED_VERSION = "v0.8.1.dev67"
NOT_FOUND = "prime-rl not found: pass --prime-rl PATH to prepare.py or set PRIME_RL_DIR"

RENDERED_FILE = "primerl.toml"  # in the seed's run dir: the config `rl` runs with
LAUNCH_FILE = "primerl-launch.json"  # what collect() needs to know about the launch
OUTPUT_SUBDIR = "primerl"  # prime-rl's output_dir, inside the seed's run dir
RUN_NAME = "autorl"  # fixed run.name: prime-rl writes to <output_dir>/<run.name>
WEIGHTS_SUBDIR = "weights"  # the assembled HF directory the eval reads

INFERENCE_PORT = 8000  # vLLM's OpenAI server; AUTORL_PRIMERL_PORT overrides (a second job on the node)
DEFAULT_GPUS = "0,1"  # GPU 0: vLLM, GPU 1: trainer (prime-rl assigns inference first)
DEFAULT_SEQ_LEN = 2048  # prime-rl's default seq_len; vLLM's max_model_len follows it
DRY_RUN_TIMEOUT_S = 300.0
LOG_TAIL_LINES = 30
COMPONENTS = ("inference", "orchestrator", "trainer")
# Pure-Python packages autorl.llm.eval needs that prime-rl's environment may lack. Installed with every
# package prime-rl already has pinned to its installed version, so nothing of prime-rl's changes.
EVAL_DEPS = ["math-verify", "tomlkit"]
# Files the eval needs besides the weights: prime-rl's broadcast directory holds only safetensors shards.
BASE_MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "added_tokens.json",
    "chat_template.jinja",
)


class PrimeRLError(RuntimeError):
    """prime-rl could not be used for this trial (the message says why)."""


class PrimeRLNotFound(PrimeRLError):
    """No usable prime-rl checkout: a usage problem (exit 2), not a crash."""

    def __init__(self, message: str = NOT_FOUND) -> None:
        super().__init__(message)


_warned: set[str] = set()


def _warn(message: str) -> None:
    """Once per process: the checkout is looked up several times per trial."""
    if message not in _warned:
        _warned.add(message)
        print(f"warning: {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------------
# Finding prime-rl
# ----------------------------------------------------------------------------------------------------


@dataclass
class PrimeRL:
    """A prime-rl checkout with its own uv environment (`uv sync --all-extras` made `.venv`)."""

    dir: Path
    python: Path  # <dir>/.venv/bin/python: runs the fixed eval with prime-rl's torch and vLLM
    rl: Path  # <dir>/.venv/bin/rl: the launcher
    commit: str | None
    version: str | None

    @property
    def supported(self) -> bool:
        return self.commit is not None and self.commit.startswith(SUPPORTED_COMMIT)

    @property
    def bin_dir(self) -> Path:
        return self.rl.parent


def _git(directory: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def find_prime_rl(path: str | os.PathLike[str] | None = None) -> PrimeRL | None:
    """The prime-rl checkout at `path` (else $PRIME_RL_DIR), or None when there is none or it is unusable.

    Warns (stderr) when the checkout has no environment yet or is at another commit than the supported one.
    """
    raw = path if path is not None else os.environ.get("PRIME_RL_DIR")
    if not raw:
        return None
    directory = Path(raw).expanduser().resolve()
    if not directory.is_dir():
        _warn(f"prime-rl: {directory} is not a directory")
        return None
    bin_dir = directory / ".venv" / "bin"
    python, rl = bin_dir / "python", bin_dir / "rl"
    if not (python.exists() and rl.exists()):
        _warn(f"prime-rl at {directory} has no environment ({rl} missing): run `uv sync --all-extras` there")
        return None
    commit = _git(directory, "rev-parse", "HEAD")
    version = _git(directory, "describe", "--tags", "--always") or _pyproject_version(directory)
    if commit is None:
        _warn(f"prime-rl at {directory} is not a git checkout: cannot check it is commit {SUPPORTED_COMMIT}")
    elif not commit.startswith(SUPPORTED_COMMIT):
        _warn(
            f"prime-rl at {directory} is at commit {commit[:9]}, not the supported {SUPPORTED_COMMIT} "
            f"({SUPPORTED_VERSION}); its config schema or log format may differ"
        )
    return PrimeRL(dir=directory, python=python, rl=rl, commit=commit, version=version)


def _pyproject_version(directory: Path) -> str | None:
    import tomllib

    try:
        return tomllib.loads((directory / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None


def locate_prime_rl() -> PrimeRL | None:
    """prime-rl for this trial: $PRIME_RL_DIR, else the checkout prepare.py recorded in the machine file."""
    if os.environ.get("PRIME_RL_DIR"):
        return find_prime_rl(None)
    from autorl.machine import load_machine

    machine = load_machine()
    recorded = (machine.prime_rl or {}).get("dir") if machine else None
    return find_prime_rl(recorded) if recorded else None


def install_environments(prime: PrimeRL, run: Callable[..., Any] = subprocess.run) -> None:
    """Install our environment packages and autorl itself into prime-rl's environment.

    prime-rl's orchestrator imports our tasksets (`autorl-arithmetic`, `autorl-gsm8k`) and the fixed eval runs
    there with prime-rl's torch and vLLM. Everything goes in with `--no-deps` so prime-rl's pins stay
    untouched; the few pure-Python packages the eval needs (EVAL_DEPS) are added with every installed
    package constrained to its current version. `run` is subprocess.run (tests pass a recorder).
    Raises PrimeRLError naming the command that failed.
    """
    uv = shutil.which("uv")
    if uv is None:
        raise PrimeRLError("uv not found on PATH: it installs our packages into prime-rl's environment")
    python = str(prime.python)

    def step(cmd: list[str], **kw: Any) -> Any:
        try:
            return run(cmd, check=True, **kw)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise PrimeRLError(
                f"installing into prime-rl's environment failed: `{' '.join(cmd)}`: {exc}"
            ) from exc

    root = paths.REPO_ROOT
    projects = sorted(p for p in (root / "environments").iterdir() if (p / "pyproject.toml").is_file())
    step(
        [
            uv,
            "pip",
            "install",
            "--python",
            python,
            "--no-deps",
            *(a for p in [*projects, root] for a in ("-e", str(p))),
        ]
    )

    frozen = step([uv, "pip", "freeze", "--python", python], capture_output=True, text=True).stdout
    pins = [line for line in frozen.splitlines() if re.match(r"^[A-Za-z0-9_.\-\[\]]+==\S+$", line)]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="prime-rl-pins-", delete=False) as f:
        f.write("\n".join(pins) + "\n")
    try:
        step([uv, "pip", "install", "--python", python, "--constraint", f.name, *EVAL_DEPS])
    finally:
        os.unlink(f.name)

    # each environment project's import package is the directory holding its __init__.py
    modules = [
        "autorl.llm.eval",
        *(d.name for p in projects for d in sorted(p.iterdir()) if (d / "__init__.py").is_file()),
    ]
    check = run([python, "-c", "import " + ", ".join(modules)], capture_output=True, text=True)
    if check.returncode != 0:
        raise PrimeRLError(
            f"prime-rl's environment cannot import {', '.join(modules)}:\n{check.stderr[-2000:]}"
        )


@dataclass
class GpuProcess:
    pid: int
    name: str
    used_memory_mb: float | None
    gpu_uuid: str


def nvidia_smi_available() -> bool:
    return shutil.which("nvidia-smi") is not None


def gpu_processes() -> list[GpuProcess]:
    """Processes holding GPU memory, via nvidia-smi; [] where nvidia-smi is absent or fails."""
    if not nvidia_smi_available():
        return []
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "--query-compute-apps=pid,process_name,used_memory,gpu_uuid",
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    procs = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        try:
            memory: float | None = float(parts[2])
        except ValueError:
            memory = None
        procs.append(GpuProcess(int(parts[0]), parts[1], memory, parts[3]))
    return procs


def run_processes(run_id: str) -> list[Any]:
    """Live processes of one launch: every process prime-rl starts inherits PRL_RUN_ID from our launch env."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("PRL_RUN_ID") == run_id and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue  # gone, or another user's process
    return found


# ----------------------------------------------------------------------------------------------------
# Rendering the run config
# ----------------------------------------------------------------------------------------------------


def wandb_enabled() -> bool:
    """W&B stays off unless the user turns it on outside train.toml (the agent cannot)."""
    return os.environ.get("AUTORL_WANDB", "") == "1"


def inference_port() -> int:
    return int(os.environ.get("AUTORL_PRIMERL_PORT", INFERENCE_PORT))


def local_model_dir(name: str | None) -> Path | None:
    """The directory of a model name that is a local path (relative names are relative to the repo root)."""
    if not name:
        return None
    candidate = Path(name).expanduser()
    if not candidate.is_absolute():
        candidate = paths.repo_root() / candidate
    if name.startswith((".", "/", "~")) or candidate.exists():
        return candidate.resolve()
    return None


def _seq_len(data: dict[str, Any]) -> int:
    """The longest sequence any component is configured for (vLLM must hold prompt + completion)."""
    lengths = [
        data.get("seq_len"),
        data.get("orchestrator", {}).get("seq_len"),
        data.get("trainer", {}).get("model", {}).get("seq_len"),
    ]
    return max((n for n in lengths if isinstance(n, int)), default=DEFAULT_SEQ_LEN)


def render(data: dict[str, Any], run_dir: Path, seed: int) -> dict[str, Any]:
    """train.toml's raw dict + the harness-owned keys = the config `rl` runs with (prime-rl key names).

    Every key added here is harness-owned: the config loader refuses them in train.toml, so nothing the
    user wrote is overwritten.
    """
    cfg = copy.deepcopy(data)
    run_dir = Path(run_dir).resolve()

    # The model: a local path must be absolute, `rl` runs in prime-rl's checkout.
    model = cfg.setdefault("model", {})
    local = local_model_dir(model.get("name"))
    if local is not None:
        model["name"] = str(local)

    # Where prime-rl writes: <run_dir>/primerl/autorl/{configs,logs,metrics.jsonl,broadcasts,...}.
    cfg["output_dir"] = str(run_dir / OUTPUT_SUBDIR)
    cfg["run"] = {"name": RUN_NAME}
    cfg["clean"] = True  # a retried seed reuses its directory; never resume another run's state

    # GPU 0 serves vLLM, GPU 1 trains (with CUDA_VISIBLE_DEVICES="0,1" in the launch env).
    cfg["deployment"] = {"type": "single_node", "num_infer_gpus": 1, "num_train_gpus": 1}
    # Filesystem broadcast writes HF safetensors to broadcasts/step_N every step: the latest weights are
    # always on disk when the budget stops the run (under NCCL only a DCP checkpoint would be).
    cfg["weight_broadcast"] = {"type": "filesystem"}

    monitors: dict[str, Any] = {"file": {"path": "metrics.jsonl"}}
    if wandb_enabled():
        monitors["wandb"] = {
            "project": os.environ.get("AUTORL_WANDB_PROJECT", "autorl"),
            "name": f"{run_dir.parent.name}/{run_dir.name}",
        }
    cfg["monitors"] = monitors

    orch = cfg.setdefault("orchestrator", {})
    # No online eval: it would run inside the training budget; the fixed harness evaluates afterwards.
    orch.pop("eval", None)
    port = inference_port()
    orch.setdefault("model", {}).setdefault("client", {})["base_url"] = f"http://localhost:{port}/v1"
    if local is not None:
        # renderer "auto" only knows exact hub ids; a local directory needs one named (its chat template).
        orch["renderer"] = {"name": "default"}
    for source in orch.get("train", {}).get("source", []):
        agent = source.setdefault("env", {}).setdefault("agent", {})
        # Defaults are the `bash` harness in a remote `prime` sandbox; the harness runs everything locally.
        agent.setdefault("harness", {})["id"] = "null"
        agent.setdefault("runtime", {})["type"] = "subprocess"
        taskset = source["env"].get("taskset", {})
        if isinstance(taskset.get("data_path"), str):  # relative to our repo, not prime-rl's checkout
            data_path = Path(taskset["data_path"]).expanduser()
            taskset["data_path"] = str((paths.repo_root() / data_path).resolve())
        sampler = source.get("curriculum", {}).get("sampler", {})
        if sampler.get("type") == "difficulty_pool":
            sampler["seed"] = seed

    inference = cfg.setdefault("inference", {})
    inference["server"] = {"port": port}
    inference["router"] = "None"  # a bare vLLM engine on server.port: one engine needs no router
    inference["vllm"] = {
        "seed": seed,  # vLLM's sampling seed (the trainer has no seed key in the pinned schema)
        # Start-up is outside the budget: CUDA graphs (enforce_eager = false) cost the budget nothing and
        # make every rollout in it faster.
        "enforce_eager": False,
        # No sample is longer than seq_len (prime-rl truncates there); vLLM need not serve the model's
        # full context.
        "max_model_len": _seq_len(cfg),
    }
    return cfg


def flat_keys(data: Any, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """Every leaf key of a config as a dotted path; array-of-tables items are their index."""
    if isinstance(data, dict):
        for key, value in data.items():
            path = (*prefix, str(key))
            if isinstance(value, dict) and value:
                yield from flat_keys(value, path)
            elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                for i, item in enumerate(value):
                    yield from flat_keys(item, (*path, str(i)))
            else:
                yield ".".join(path)


def unknown_keys(config: dict[str, Any]) -> list[str]:
    """Rendered keys that the pinned prime-rl schema does not have (must be none)."""
    from autorl.llm.schema import is_primerl_key

    return [key for key in flat_keys(config) if not is_primerl_key(key)]


def to_toml(config: dict[str, Any]) -> str:
    import tomlkit

    header = "# Rendered by autorl from train.toml + harness-owned keys; run with `rl @ this-file`.\n"
    return header + tomlkit.dumps(config)


# ----------------------------------------------------------------------------------------------------
# Following the run: console lines and metrics.jsonl
# ----------------------------------------------------------------------------------------------------

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# `HH:MM:SS SUCCESS Step 3 |    1.2s | Reward 0.4102 | Trainable ...` (loguru; colours stripped first).
_STEP_RE = re.compile(
    r"^(?:\[[^\]]*\]:?\s*)?(?:\d{2}:\d{2}:\d{2}\s+)?(?:[A-Z]+\s+)?Step (\d+) \|\s*([^|]*?)\s*\|"
    r"\s*Reward ([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"
)
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


def parse_duration(text: str) -> float | None:
    """prime-rl's format_time: `850ms`, `1.2s`, `2m 5s`, `1h 3m`, `1d 2h` -> seconds."""
    parts = _DURATION_RE.findall(text)
    if not parts:
        return None
    return sum(float(n) * _DURATION_UNITS[unit] for n, unit in parts)


@dataclass
class StepLine:
    step: int
    reward: float
    seconds: float | None


def parse_step_line(line: str) -> StepLine | None:
    """The orchestrator's per-step line (console or orchestrator.log), or None for any other line.

    `Evaluated <env> (Step N) | ...` lines, the trainer's `Step N | ... | Loss ...` lines and JSON log
    records without a step message are not step lines.
    """
    text = strip_ansi(line).strip()
    if text.startswith("{"):  # log.json_logging = true: one JSON record a line
        try:
            text = str(json.loads(text).get("message", ""))
        except (json.JSONDecodeError, AttributeError):
            return None
    m = _STEP_RE.match(text)
    if m is None:
        return None
    return StepLine(int(m.group(1)), float(m.group(3)), parse_duration(m.group(2)))


def merge_metrics(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """prime-rl's metrics.jsonl rows merged by step (the trainer and the orchestrator each log several rows
    per step). Both log `time/step`: the trainer's (its row also has `time/forward_backward`) is kept as
    `trainer/time/step`, the orchestrator's as `orchestrator/time/step`."""
    merged: dict[int, dict[str, Any]] = {}
    for row in rows:
        step = row.get("step")
        if not isinstance(step, int | float) or isinstance(step, bool):
            continue
        into = merged.setdefault(int(step), {})
        trainer_time_row = "time/forward_backward" in row
        for key, value in row.items():
            if key == "step":
                continue
            if key == "time/step":
                key = "trainer/time/step" if trainer_time_row else "orchestrator/time/step"
            into[key] = value
    return merged


def reward_mean(metrics: dict[str, Any]) -> float | None:
    """Mean reward of the trained-on rollouts: `train/agg/effective/<agent>/reward/mean`, over agents."""
    for subset in ("effective", "all"):
        pattern = re.compile(rf"^train/agg/{subset}/[^/]+/reward/mean$")
        values = [v for k, v in metrics.items() if pattern.match(k) and isinstance(v, int | float)]
        if values:
            return sum(values) / len(values)
    return None


def our_row(step: int, metrics: dict[str, Any]) -> dict[str, Any]:
    """One merged step in the shape the embedded backend writes (its key names, where prime-rl logs the same
    quantity). `seconds` is the trainer's step time (waiting for the batch included: the pipeline's cycle)."""
    seconds = metrics.get("trainer/time/step", metrics.get("orchestrator/time/step"))
    rollouts = metrics.get("progress/rollouts")
    reward = reward_mean(metrics)
    return {
        "step": step,
        "reward_mean": reward,
        "reward": reward,
        "loss": metrics.get("loss/mean"),
        "lr": metrics.get("optim/lr"),
        "seconds": seconds,
        "samples_per_s": rollouts / seconds if isinstance(rollouts, int | float) and seconds else None,
        "grad_norm": metrics.get("optim/grad_norm"),
        "mismatch_kl": metrics.get("mismatch_kl/all/mean"),
        "peak_memory_gb": metrics.get("perf/peak_memory"),
    }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    if not path.is_file():
        return rows
    for line in path.read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a kill
        if isinstance(row, dict):
            rows.append(row)
    return rows


def trainer_steps(merged: dict[int, dict[str, Any]]) -> int:
    """Completed trainer steps: the highest step with a trainer loss row."""
    return max((step for step, m in merged.items() if "loss/mean" in m), default=0)


class PrimeRLFollower:
    """The Launch's parse_line: a console line of `rl` -> a progress event (or None).

    Each call also reads what prime-rl appended to its metrics.jsonl since the last call, and appends every
    step that now has both its trainer and its orchestrator figures to our metrics.jsonl. A `step` event
    carries `step` = trainer steps completed so far (what the summary counts), plus the batch's reward.
    """

    def __init__(self, primerl_run_dir: Path, out_metrics: Path) -> None:
        self.source = Path(primerl_run_dir) / "metrics.jsonl"
        self.out = Path(out_metrics)
        self.offset = 0
        self.partial = ""
        self.rows: list[dict[str, Any]] = []
        self.written: set[int] = set()
        self.reported = 0  # trainer steps already reported; nothing is reported before step 1

    def poll(self) -> dict[int, dict[str, Any]]:
        try:
            with open(self.source, encoding="utf-8", errors="replace") as f:
                f.seek(self.offset)
                chunk = f.read()
                self.offset = f.tell()
        except OSError:
            chunk = ""
        text = self.partial + chunk
        lines = text.split("\n")
        self.partial = lines.pop()  # an incomplete last line waits for the next call
        for line in lines:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                self.rows.append(row)
        merged = merge_metrics(self.rows)
        complete = sorted(s for s, m in merged.items() if "loss/mean" in m and reward_mean(m) is not None)
        new = [s for s in complete if s not in self.written]
        if new:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            with open(self.out, "a", encoding="utf-8") as f:
                for step in new:
                    f.write(json.dumps(our_row(step, merged[step])) + "\n")
                    self.written.add(step)
        return merged

    def __call__(self, line: str) -> dict[str, Any] | None:
        merged = self.poll()
        done = trainer_steps(merged)
        parsed = parse_step_line(line)
        if parsed is None and done <= self.reported:
            return None
        event: dict[str, Any] = {"event": "step", "step": done}
        if done in merged:
            event.update(
                {k: v for k, v in our_row(done, merged[done]).items() if v is not None and k != "step"}
            )
        if parsed is not None:
            event.update({"batch": parsed.step, "reward": parsed.reward})
            if parsed.seconds is not None:
                event["batch_seconds"] = parsed.seconds
        self.reported = done
        return event


# ----------------------------------------------------------------------------------------------------
# After the run: weights, steps, memory, crash attribution
# ----------------------------------------------------------------------------------------------------


def primerl_run_dir(run_dir: Path) -> Path:
    return Path(run_dir) / OUTPUT_SUBDIR / RUN_NAME


def latest_stable_broadcast(run_dir: Path) -> tuple[int, Path] | None:
    """The highest `broadcasts/step_N` that holds `STABLE` (written last); a directory without it is a
    broadcast cut short by the stop and is skipped."""
    broadcasts = Path(run_dir) / "broadcasts"
    found = []
    if broadcasts.is_dir():
        for d in broadcasts.iterdir():
            m = re.fullmatch(r"step_(\d+)", d.name)
            if m and d.is_dir() and (d / "STABLE").is_file():
                found.append((int(m.group(1)), d))
    return max(found, default=None)


def assemble_weights(broadcast: Path, base_model: Path | None, dest: Path) -> list[str]:
    """An evaluable HF directory: the broadcast's safetensors (+ index) and the base model's config and
    tokenizer files. Hard links where possible (same filesystem), else copies. Returns notes."""
    notes = []
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in sorted(broadcast.iterdir()):
        if f.is_file() and (f.suffix == ".safetensors" or f.name.endswith(".safetensors.index.json")):
            _link_or_copy(f, dest / f.name)
    if base_model is None or not base_model.is_dir():
        notes.append(f"base model directory unknown: {dest} has weights but no config/tokenizer files")
        return notes
    for name in BASE_MODEL_FILES:
        if (base_model / name).is_file():
            _link_or_copy(base_model / name, dest / name)
    if not (dest / "config.json").exists():
        notes.append(f"{base_model} has no config.json: {dest} may not load")
    return notes


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def base_model_dir(model_name: str | None) -> Path | None:
    """Where the base model's files are: a local path, the machine file's prepared copy, or the HF cache."""
    local = local_model_dir(model_name)
    if local is not None:
        return local
    from autorl.machine import load_machine

    machine = load_machine()
    if machine and machine.model_path and machine.model_name == model_name:
        return Path(machine.model_path)
    if model_name:
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(repo_id=model_name, local_files_only=True))
        except Exception:  # not cached / not installed: the caller notes the missing files
            return None
    return None


_FAILED_RE = re.compile(r"Error: (.+?) failed with exit code (-?\d+)")


def _failed_log(logs: Path, name: str) -> tuple[str, Path]:
    """The component a launcher error line names, and its log. `Trainer` -> trainer.log; an environment
    server (`Train env server gsm8k`) serves the orchestrator: envs/train/gsm8k.log."""
    lowered = name.lower()
    if m := re.fullmatch(r"(train|eval) env server (.+)", lowered):
        return "orchestrator", logs / "envs" / m.group(1) / f"{name.split(' ', 3)[-1]}.log"
    for component in COMPONENTS:
        if lowered.startswith(component):
            return component, logs / f"{component}.log"
    return lowered, logs / f"{lowered}.log"


def tail(path: Path, n: int = LOG_TAIL_LINES) -> list[str]:
    if not path.is_file():
        return []
    lines = strip_ansi(path.read_text(errors="replace")).splitlines()
    return [line.rstrip() for line in lines[-n:]]


def attribute_crash(prime_dir: Path, console_log: Path | None) -> tuple[str, list[str]] | None:
    """Which component died, with the tail of its log; None when nothing failed on its own.

    First evidence: the launcher's `Error: <Component> failed with exit code N` console line, before any
    `Received SIGTERM` (after our stop, components exiting are not crashes). Else, unless we stopped the
    run: the component logs under logs/latest/ with a traceback, the earliest written first (a component
    that dies takes the others down after it).
    """
    logs = prime_dir / "logs" / "latest"
    console = (
        strip_ansi(console_log.read_text(errors="replace")) if console_log and console_log.is_file() else ""
    )
    before_stop, stopped, _ = console.partition("Received SIGTERM")
    for m in _FAILED_RE.finditer(before_stop):
        if int(m.group(2)) < 0:  # a negative code is a signal: someone else stopped it
            continue
        component, log = _failed_log(logs, m.group(1))
        return component, tail(log)
    if stopped:
        return None
    candidates = []
    for component in COMPONENTS:
        log = logs / f"{component}.log"
        if log.is_file() and "Traceback (most recent call last)" in log.read_text(errors="replace"):
            candidates.append((log.stat().st_mtime, component))
    if not candidates:
        return None
    component = min(candidates)[1]
    return component, tail(logs / f"{component}.log")


# ----------------------------------------------------------------------------------------------------
# The backend
# ----------------------------------------------------------------------------------------------------


def _gpu_ids() -> str:
    """The two GPUs of the run: the first two of an inherited CUDA_VISIBLE_DEVICES, else 0 and 1."""
    inherited = [g.strip() for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    return ",".join(inherited[:2]) if len(inherited) >= 2 else DEFAULT_GPUS


def launch_env(prime: PrimeRL, run_id: str) -> dict[str, str]:
    """`rl` starts its children (inference, orchestrator, torchrun, env-server) by name from PATH, so
    prime-rl's venv comes first on PATH. PRL_RUN_ID is inherited by every process of the run (prime-rl keeps
    a preset one), which is how leftovers are found afterwards."""
    return {
        "PATH": f"{prime.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(prime.bin_dir.parent),
        "CUDA_VISIBLE_DEVICES": _gpu_ids(),
        "PRL_RUN_ID": run_id,
        "PYTHONUNBUFFERED": "1",
    }


def rl_error_message(output: str) -> str:
    """prime-rl's validation message without colours and the box it is drawn in."""
    lines = []
    for raw in strip_ansi(output).splitlines():
        line = raw.strip().strip("│╭╮╰╯").strip().strip("─").strip()
        if line:
            lines.append(line)
    return "\n".join(lines[-LOG_TAIL_LINES:]) or "(no output)"


def validate_with_rl(prime: PrimeRL, rendered: Path, env: dict[str, str]) -> None:
    """`rl @ rendered --dry-run`: prime-rl's own schema check, before any GPU starts."""
    from autorl.tomlcheck import ConfigError

    try:
        proc = subprocess.run(
            [str(prime.rl), "@", str(rendered), "--dry-run"],
            cwd=prime.dir,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=DRY_RUN_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        raise PrimeRLError(f"`rl --dry-run` did not finish in {DRY_RUN_TIMEOUT_S:g} s") from exc
    if proc.returncode != 0:
        message = rl_error_message(proc.stderr + "\n" + proc.stdout)
        raise ConfigError(f"prime-rl rejected the rendered config {rendered} (`rl --dry-run`):\n{message}")


class PrimeRLBackend(Backend):
    """The Backend protocol (autorl/backend.py) for prime-rl's `rl` launcher on 2 GPUs."""

    name = "prime-rl"

    def availability_note(self) -> str | None:
        """A line for --dry-run: where prime-rl is, or how to provide it."""
        prime = locate_prime_rl()
        if prime is None:
            return NOT_FOUND
        state = "supported" if prime.supported else f"NOT the supported {SUPPORTED_COMMIT}"
        return f"prime-rl at {prime.dir} (commit {(prime.commit or 'unknown')[:9]}, {state})"

    def preflight(self) -> None:
        """Raise PrimeRLNotFound now, before the trial starts anything (the base-model eval included)."""
        if locate_prime_rl() is None:
            raise PrimeRLNotFound()

    def check(self, cfg: Any) -> None:
        """Every key of the rendered config must exist in the pinned schema (autorl/llm/primerl_keys.txt).

        The config loader already refused harness-owned keys; this catches a key the loader accepts but the
        pinned prime-rl would reject, before `rl --dry-run` (which needs prime-rl) ever runs.
        """
        from autorl.tomlcheck import ConfigError

        bad = unknown_keys(render(cfg.data, paths.runs_dir() / "check", 0))
        if bad:
            name = Path(str(cfg.path)).name
            raise ConfigError(
                "\n".join(
                    f"{name}: `{key}` is not a key of prime-rl {SUPPORTED_COMMIT}'s schema" for key in bad
                )
            )

    def resolve(self, cfg: Any, run_dir: Path, seed: int) -> dict[str, Any]:
        return render(cfg.data, run_dir, seed)

    def launch(self, cfg: Any, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> Launch:
        prime = locate_prime_rl()
        if prime is None:
            raise PrimeRLNotFound()
        run_dir = Path(run_dir).resolve()
        run_dir.mkdir(parents=True, exist_ok=True)
        config = self.resolve(cfg, run_dir, seed)
        rendered = run_dir / RENDERED_FILE
        rendered.write_text(to_toml(config))
        run_id = f"autorl-{uuid.uuid4().hex}"
        env = launch_env(prime, run_id)
        validate_with_rl(prime, rendered, env)
        (run_dir / LAUNCH_FILE).write_text(
            json.dumps(
                {
                    "run_id": run_id,
                    "prime_rl_dir": str(prime.dir),
                    "prime_rl_commit": prime.commit,
                    "rendered": str(rendered),
                    "primerl_run_dir": str(primerl_run_dir(run_dir)),
                    "model": config.get("model", {}).get("name"),
                    "cuda_visible_devices": env["CUDA_VISIBLE_DEVICES"],
                    "launched_at": time.time(),
                },
                indent=2,
            )
            + "\n"
        )
        (run_dir / "metrics.jsonl").unlink(missing_ok=True)
        follower = PrimeRLFollower(primerl_run_dir(run_dir), run_dir / "metrics.jsonl")
        return Launch(argv=[str(prime.rl), "@", str(rendered)], cwd=prime.dir, env=env, parse_line=follower)

    def collect(self, cfg: Any, run_dir: Path) -> TrainOutcome:
        run_dir = Path(run_dir)
        prime_dir = primerl_run_dir(run_dir)
        launched = (
            json.loads((run_dir / LAUNCH_FILE).read_text()) if (run_dir / LAUNCH_FILE).is_file() else {}
        )
        notes: list[str] = []
        extras: dict[str, Any] = {}

        # Metrics: ours is rewritten whole from prime-rl's (the follower may have missed the last rows).
        merged = merge_metrics(read_jsonl(prime_dir / "metrics.jsonl"))
        rows = [our_row(step, merged[step]) for step in sorted(merged)]
        tmp = run_dir / "metrics.jsonl.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        tmp.replace(run_dir / "metrics.jsonl")
        steps = trainer_steps(merged)
        peaks = [
            m["perf/peak_memory"]
            for m in merged.values()
            if isinstance(m.get("perf/peak_memory"), int | float)
        ]
        peak = round(max(peaks), 3) if peaks else None

        # Weights: the newest complete broadcast, made evaluable.
        weights_dir = None
        latest = latest_stable_broadcast(prime_dir)
        if latest is None:
            notes.append(
                f"prime-rl wrote no complete weights (no broadcasts/step_N with STABLE in {prime_dir})"
            )
        else:
            step, broadcast = latest
            weights_dir = run_dir / WEIGHTS_SUBDIR
            notes += assemble_weights(broadcast, base_model_dir(launched.get("model")), weights_dir)
            what = "the untrained base model" if step == 0 else f"after trainer step {step}"
            notes.append(f"weights: {broadcast} ({what}) -> {weights_dir}")
            extras["weights_step"] = step

        # Crash attribution.
        failed = attribute_crash(prime_dir, run_dir / "run.log")
        failed_component = None
        if failed is not None:
            failed_component, log_tail = failed
            log = prime_dir / "logs" / "latest" / f"{failed_component}.log"
            notes.append(f"prime-rl's {failed_component} died; last lines of {log}:\n" + "\n".join(log_tail))
            extras["failed_log_tail"] = log_tail

        # Nothing of the run may be left, on a GPU least of all.
        notes += self._check_leftovers(launched.get("run_id"))
        return TrainOutcome(
            weights_dir=weights_dir,
            steps=steps,
            peak_memory_gb=peak,
            failed_component=failed_component,
            notes=notes,
            extras=extras,
        )

    @staticmethod
    def _check_leftovers(run_id: str | None) -> list[str]:
        import psutil

        if not run_id:
            return []
        left = run_processes(run_id)
        notes = []
        if nvidia_smi_available():
            on_gpu = {p.pid for p in gpu_processes()}
            holding = [p.pid for p in left if p.pid in on_gpu]
            notes.append(
                f"GPU check: {len(holding)} process(es) of the run still on a GPU: {holding}"
                if holding
                else "GPU check: no process of the run holds a GPU"
            )
        else:
            notes.append("GPU check skipped: nvidia-smi not found")
        if left:
            for proc in left:
                try:
                    proc.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(left, timeout=5)
            notes.append(f"killed {len(left)} leftover process(es) of the run: {[p.pid for p in left]}")
        return notes

    def eval_command(self, cfg: Any, weights_dir: Path | None, out_path: Path) -> Launch:
        """The fixed eval with vLLM on both GPUs, in prime-rl's environment (its torch and vLLM)."""
        prime = locate_prime_rl()
        if prime is None:
            raise PrimeRLNotFound()
        weights = weights_dir
        if weights is None:  # the untrained base model
            name = cfg.data.get("model", {}).get("name")
            weights = base_model_dir(name) or name
        gpus = _gpu_ids()
        argv = [
            str(prime.python),
            "-m",
            "autorl.llm.eval",
            "--weights",
            str(weights),
            "--out",
            str(out_path),
            "--engine",
            "vllm",
        ]
        env = {
            "PATH": f"{prime.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(prime.bin_dir.parent),
            "CUDA_VISIBLE_DEVICES": gpus,
            "AUTORL_ROOT": str(paths.repo_root()),
        }
        return Launch(argv=argv, cwd=paths.repo_root(), env=env)

    def summary_extras(self, cfg: Any, outcomes: list[TrainOutcome], eval_rows: list[dict]) -> dict[str, str]:
        steps = [o.extras.get("weights_step") for o in outcomes if o.extras.get("weights_step") is not None]
        return {"weights_step": ",".join(str(s) for s in steps)} if steps else {}
