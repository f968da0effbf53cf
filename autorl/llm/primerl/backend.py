"""The prime-rl backend: a real trial with prime-rl's `rl` launcher on a GPU pair (vLLM on the first GPU,
the trainer on the second).

What it does, in trial order (the parts live in this package's modules):
- `resolve` renders the run config (render.py): the user's train.toml plus the harness-owned keys.
- `plan_slots` says how many seeds run side by side here (slots.py): GPU pairs, seeds per pair, ports.
- `launch` renders the seed's config for its slot, validates it with prime-rl's own `rl @ file --dry-run`
  (seconds, before any GPU starts; a schema error becomes a ConfigError with prime-rl's message), then returns
  the `rl @ file` command with the slot's GPUs in CUDA_VISIBLE_DEVICES. autorl.engine.process runs it in its
  own process group under the budget; `PrimeRLFollower` (follow.py) turns its console lines into progress.
- `collect` picks the latest complete weights and makes them evaluable (weights.py), counts trainer steps,
  reads peak memory, names the component that died (follow.py), and checks that no process of the run is
  left, on a GPU least of all.
- `eval_command` runs the fixed evaluation (`python -m autorl.llm.eval --engine vllm`) in prime-rl's
  environment, on both GPUs.

prime-rl is an external install (install.py). Without it, a dry run still renders the config and says
"prime-rl not found"; a real run stops with that message (exit 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from autorl.engine.backend import WHOLE_MACHINE, Backend, Collected, Launch, Slot
from autorl.engine.process import kill_marked, processes_with_env
from autorl.io import atomic, paths
from autorl.io.jsonl import read_jsonl
from autorl.io.machine import Machine, nvidia_smi
from autorl.llm.primerl import slots
from autorl.llm.primerl.follow import (
    LOG_TAIL_LINES,
    PrimeRLFollower,
    attribute_crash,
    merge_metrics,
    our_row,
    strip_ansi,
    trainer_steps,
)
from autorl.llm.primerl.install import (
    NOT_FOUND,
    SUPPORTED_COMMIT,
    PrimeRL,
    PrimeRLError,
    PrimeRLNotFound,
    locate_prime_rl,
)
from autorl.llm.primerl.render import primerl_run_dir, render, to_toml, unknown_keys
from autorl.llm.primerl.weights import (
    WEIGHTS_SUBDIR,
    assemble_weights,
    base_model_dir,
    latest_stable_broadcast,
)

if TYPE_CHECKING:
    from autorl.llm.config import LoadedConfig

RENDERED_FILE = "primerl.toml"  # in the seed's run dir: the config `rl` runs with
LAUNCH_FILE = "primerl-launch.json"  # what collect() needs to know about the launch
RUN_ID_ENV = "PRL_RUN_ID"  # prime-rl keeps a preset run id: every process of the run inherits it
DEFAULT_GPUS = "0,1"  # GPU 0: vLLM, GPU 1: trainer (prime-rl assigns inference first)
DRY_RUN_TIMEOUT_S = 300.0


@dataclass
class GpuProcess:
    pid: int
    name: str
    used_memory_mb: float | None
    gpu_uuid: str


def gpu_processes() -> list[GpuProcess] | None:
    """Processes holding GPU memory; None where nvidia-smi is absent or fails."""
    rows = nvidia_smi("compute-apps", ["pid", "process_name", "used_memory", "gpu_uuid"])
    if rows is None:
        return None
    procs = []
    for parts in rows:
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        try:
            memory: float | None = float(parts[2])
        except ValueError:
            memory = None
        procs.append(GpuProcess(int(parts[0]), parts[1], memory, parts[3]))
    return procs


def run_processes(run_id: str) -> list[psutil.Process]:
    """Live processes of one launch: every process prime-rl starts inherits PRL_RUN_ID from our launch env."""
    return processes_with_env(RUN_ID_ENV, run_id)


def _gpu_ids(slot: Slot = WHOLE_MACHINE) -> str:
    """The two GPUs of the run: the slot's pair, else the first two of an inherited CUDA_VISIBLE_DEVICES,
    else 0 and 1."""
    if slot.gpus:
        return ",".join(str(g) for g in slot.gpus)
    inherited = [g.strip() for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    return ",".join(inherited[:2]) if len(inherited) >= 2 else DEFAULT_GPUS


def launch_env(prime: PrimeRL, run_id: str, slot: Slot = WHOLE_MACHINE) -> dict[str, str]:
    """`rl` starts its children (inference, orchestrator, torchrun, env-server) by name from PATH, so
    prime-rl's venv comes first on PATH. PRL_RUN_ID is inherited by every process of the run (prime-rl keeps
    a preset one), which is how leftovers are found afterwards."""
    return {
        "PATH": f"{prime.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(prime.bin_dir.parent),
        "CUDA_VISIBLE_DEVICES": _gpu_ids(slot),
        RUN_ID_ENV: run_id,
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
    from autorl.io.tomlcheck import ConfigError

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


class PrimeRLBackend(Backend["LoadedConfig"]):
    """The Backend protocol (autorl/engine/backend.py) for prime-rl's `rl` launcher on 2 GPUs."""

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

    def check(self, cfg: LoadedConfig) -> None:
        """Every key of the rendered config must exist in the pinned schema (autorl/llm/primerl_keys.txt).

        The config loader already refused harness-owned keys; this catches a key the loader accepts but the
        pinned prime-rl would reject, before `rl --dry-run` (which needs prime-rl) ever runs.
        """
        from autorl.io.tomlcheck import ConfigError

        bad = unknown_keys(render(cfg.data, paths.runs_dir() / "check", 0))
        if bad:
            name = Path(str(cfg.path)).name
            raise ConfigError(
                "\n".join(
                    f"{name}: `{key}` is not a key of prime-rl {SUPPORTED_COMMIT}'s schema" for key in bad
                )
            )

    def resolve(
        self, cfg: LoadedConfig, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE
    ) -> dict[str, Any]:
        return render(cfg.data, run_dir, seed, slot)

    def plan_slots(self, cfg: LoadedConfig, machine: Machine) -> list[Slot]:
        """A GPU pair per seed, k seeds per pair for a small model, distinct ports (see slots.py)."""
        return slots.plan_slots(cfg.data.get("model", {}).get("name"), machine)

    def launch(self, cfg: LoadedConfig, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> Launch:
        """The seed's config for its slot (its ports and memory share; the whole machine: as resolve)."""
        prime = locate_prime_rl()
        if prime is None:
            raise PrimeRLNotFound()
        run_dir = Path(run_dir).resolve()
        run_dir.mkdir(parents=True, exist_ok=True)
        config = render(cfg.data, run_dir, seed, slot)
        rendered = run_dir / RENDERED_FILE
        atomic.write_text(rendered, to_toml(config))
        run_id = f"autorl-{uuid.uuid4().hex}"
        env = launch_env(prime, run_id, slot)
        validate_with_rl(prime, rendered, env)
        atomic.write_text(
            run_dir / LAUNCH_FILE,
            json.dumps(
                {
                    "run_id": run_id,
                    "prime_rl_dir": str(prime.dir),
                    "prime_rl_commit": prime.commit,
                    "rendered": str(rendered),
                    "primerl_run_dir": str(primerl_run_dir(run_dir)),
                    "model": config.get("model", {}).get("name"),
                    "cuda_visible_devices": env["CUDA_VISIBLE_DEVICES"],
                    "slot": asdict(slot),
                    "launched_at": time.time(),
                },
                indent=2,
            )
            + "\n",
        )
        (run_dir / "metrics.jsonl").unlink(missing_ok=True)
        follower = PrimeRLFollower(primerl_run_dir(run_dir), run_dir / "metrics.jsonl")
        return Launch(argv=[str(prime.rl), "@", str(rendered)], cwd=prime.dir, env=env, parse_line=follower)

    def collect(self, cfg: LoadedConfig, run_dir: Path) -> Collected:
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
        atomic.write_text(run_dir / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
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
            steps = max(steps, step)  # a broadcast of step N means step N ran, logged or not (a stop between)

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
        return Collected(
            weights_dir=weights_dir,
            steps=steps,
            peak_memory_gb=peak,
            failed_component=failed_component,
            notes=notes,
            extras=extras,
        )

    @staticmethod
    def _check_leftovers(run_id: str | None) -> list[str]:
        if not run_id:
            return []
        left = run_processes(run_id)
        notes = []
        on_gpu_procs = gpu_processes()
        if on_gpu_procs is not None:
            on_gpu = {p.pid for p in on_gpu_procs}
            holding = [p.pid for p in left if p.pid in on_gpu]
            notes.append(
                f"GPU check: {len(holding)} process(es) of the run still on a GPU: {holding}"
                if holding
                else "GPU check: no process of the run holds a GPU"
            )
        else:
            notes.append("GPU check skipped: nvidia-smi not found")
        if left:
            killed = kill_marked(RUN_ID_ENV, run_id)  # and what they started meanwhile
            notes.append(f"killed {len(killed)} leftover process(es) of the run: {killed}")
        return notes

    def eval_command(
        self,
        cfg: LoadedConfig,
        weights_dir: Path | None,
        out_path: Path,
        slot: Slot = WHOLE_MACHINE,
        split: str = "eval",
    ) -> Launch:
        """The fixed eval with vLLM on the slot's GPUs, in prime-rl's environment (its torch and vLLM)."""
        prime = locate_prime_rl()
        if prime is None:
            raise PrimeRLNotFound()
        weights = weights_dir
        if weights is None:  # the untrained base model
            name = cfg.data.get("model", {}).get("name")
            weights = base_model_dir(name) or name
        gpus = _gpu_ids(slot)
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
            *(["--split", split] if split != "eval" else []),
        ]
        env = {
            "PATH": f"{prime.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(prime.bin_dir.parent),
            "CUDA_VISIBLE_DEVICES": gpus,
            "AUTORL_ROOT": str(paths.repo_root()),
        }
        return Launch(argv=argv, cwd=paths.repo_root(), env=env)

    def summary_extras(
        self, cfg: LoadedConfig, collected: list[Collected], eval_rows: list[dict]
    ) -> dict[str, str]:
        steps = [o.extras.get("weights_step") for o in collected if o.extras.get("weights_step") is not None]
        return {"weights_step": ",".join(str(s) for s in steps)} if steps else {}
