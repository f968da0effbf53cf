"""One-time setup: inspect the machine, pick the backend, fetch or build the model, prepare the data.

Writes `.autorl/machine.json`, which run.py reads (and creates by calling this when it is missing).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autorl.io import bytecode, paths
from autorl.io.machine import Machine, inspect, save_machine
from autorl.io.tomlcheck import ConfigError
from autorl.llm.config import load_train_config

# The shipped train.toml points here; prepare builds it locally (no hub needed).
BUILTIN_MODEL = ".autorl/models/tiny-arith"


class PrepareError(Exception):
    """Something prepare could not provide; the message says what is missing and how to provide it."""


def say(msg: str) -> None:
    print(f"[prepare] {msg}", flush=True)


def model_path(name: str) -> Path | None:
    """The local directory of a model name when it is a path (relative to the repo root or absolute)."""
    candidate = Path(name).expanduser()
    if not candidate.is_absolute():
        candidate = paths.repo_root() / candidate
    if name == BUILTIN_MODEL or name.startswith((".", "/", "~")) or candidate.exists():
        return candidate
    return None


def require_model(model_dir: str) -> None:
    """Exit 2 with the command to run when a resolved model directory holds no model (scripts' check)."""
    if not (Path(model_dir) / "config.json").is_file():
        print(
            f"error: the base model {model_dir} is not prepared yet: run `uv run prepare.py` first",
            file=sys.stderr,
        )
        raise SystemExit(2)


def fetch_model(name: str) -> Path:
    """Install the shipped builtin model (or build it when the code's recipe changed), accept a local
    directory, or download a hub id (huggingface_hub)."""
    local = model_path(name)
    if name == BUILTIN_MODEL:
        from autorl.llm import model_builder as mb

        try:
            shipped = mb.install_shipped_model(paths.repo_root() / BUILTIN_MODEL)
        except mb.ShippedModelError as exc:
            raise PrepareError(str(exc)) from exc
        if shipped is not None:
            return shipped
        say(
            f"the code's recipe is not the shipped model's: building the base model at {name} (a few minutes)"
        )
        return mb.build_base_model(paths.repo_root() / BUILTIN_MODEL)
    if local is not None:
        if not (local / "config.json").exists():
            raise PrepareError(
                f"model.name = {name!r} is a path, but {local} holds no Hugging Face model (config.json)"
            )
        return local
    try:
        from huggingface_hub import snapshot_download

        say(f"downloading {name} from the Hugging Face hub (or using its local cache)")
        return Path(snapshot_download(repo_id=name))
    except Exception as exc:  # the hub raises many types: offline, gated, not found
        raise PrepareError(
            f"could not fetch model {name!r} from the Hugging Face hub ({type(exc).__name__}: {exc}).\n"
            f"Offline? Download it elsewhere (`huggingface-cli download {name} --local-dir DIR`), copy DIR "
            "here, set model.name in train.toml to that directory, and run `uv run prepare.py` again."
        ) from exc


def builtin_model_outdated(machine: Machine) -> bool:
    """The machine uses the builtin model and the code now builds it differently (a harness update)."""
    if machine.model_name != BUILTIN_MODEL or not machine.model_path:
        return False
    from autorl.llm import model_builder as mb

    return not mb.is_complete(Path(machine.model_path), mb.build_recipe())


def prepare_data(cfg_sources: list[tuple[str, dict]], eval_envs: list[tuple[str, dict]]) -> list[str]:
    """Load every environment's data once, so a missing dataset fails here and not mid-trial: each taskset
    as training reads it (its source in train.toml) and as the eval does (eval.toml), one line each."""
    from autorl.llm.envs import load_env

    problems = []
    sources = [(t, f, "training") for t, f in cfg_sources] + [(t, f, "eval") for t, f in eval_envs]
    for taskset_id, fields, use in sources:
        try:
            env = load_env(taskset_id, fields)
            n = len(env.eval_examples(1))
            say(f"environment {taskset_id} ({use}): data ready ({n} example checked)")
        except Exception as exc:
            problems.append(f"environment {taskset_id!r}: {exc}")
    return problems


def find_prime_rl(explicit: str | None) -> dict | None:
    from dataclasses import asdict

    from autorl.llm.primerl import install as primerl

    prime = primerl.find_prime_rl(explicit)
    return None if prime is None else {k: str(v) for k, v in asdict(prime).items()}


def prepare(config: Path, prime_rl_dir: str | None = None, skip_model: bool = False) -> Machine:
    say(f"python {sys.version.split()[0]}, repo {paths.repo_root()}")
    bytecode.compile_once(say)
    prime_rl = find_prime_rl(prime_rl_dir or os.environ.get("PRIME_RL_DIR"))
    if prime_rl_dir and prime_rl is None:  # asked for by name: not a fallback to the embedded backend
        raise ConfigError(
            f"--prime-rl {prime_rl_dir}: not a usable prime-rl checkout (a directory with .venv/bin/rl: "
            "`uv sync --all-extras` in the checkout makes it)"
        )
    machine = inspect(prime_rl=prime_rl)
    say(f"torch {machine.torch}, {machine.cpus} CPUs, {machine.ram_gb} GB RAM, {machine.platform}")
    for gpu in machine.gpus:
        say(
            f"GPU {gpu.index}: {gpu.name}, {gpu.memory_gb} GB"
            + (f" ({gpu.free_gb} GB free)" if gpu.free_gb else "")
        )
    if not machine.gpus:
        say("no GPU found: the embedded backend trains on the CPU")
    if machine.prime_rl:
        say(f"prime-rl found at {machine.prime_rl['dir']} (commit {machine.prime_rl.get('commit')})")
        if len(machine.gpus) < 2:
            machine.notes.append("prime-rl found but fewer than 2 GPUs: using the embedded backend")
    else:
        say("prime-rl not found (pass --prime-rl PATH or set PRIME_RL_DIR to use it on 2+ GPUs)")
    say(f"backend: {machine.backend}")

    cfg = load_train_config(config)
    name = cfg.model.model.name
    machine.model_name = name
    if not skip_model:
        machine.model_path = str(fetch_model(name))
        say(f"model {name}: {machine.model_path}")

    from autorl.llm.eval import load_eval_spec

    spec = load_eval_spec(paths.eval_spec_file())
    sources = [
        (s.env.taskset.id, _taskset_fields(s.env.taskset)) for s in cfg.model.orchestrator.train.source
    ]
    evals = [(e.taskset["id"], e.taskset_fields) for e in spec.env]
    problems = prepare_data(sources, evals)
    if problems:
        raise PrepareError("data missing:\n  " + "\n  ".join(problems))

    if machine.prime_rl and machine.backend == "prime-rl":
        from autorl.llm.primerl import install as primerl

        say("installing autorl's environments into prime-rl's environment")
        try:
            found = primerl.find_prime_rl(machine.prime_rl["dir"])
            if found is None:
                raise primerl.PrimeRLError(f"no usable prime-rl checkout at {machine.prime_rl['dir']}")
            primerl.install_environments(found)
        except primerl.PrimeRLError as exc:
            raise PrepareError(
                f"could not install autorl's environments into prime-rl's venv: {exc}"
            ) from exc
    if not skip_model:
        from dataclasses import asdict

        from autorl.engine.track import get_track

        slots = get_track("llm").make_backend(machine.backend).plan_slots(cfg, machine)
        machine.slots = [asdict(s) for s in slots]
        say(f"{len(slots)} seed(s) at once: " + "; ".join(s.describe() for s in slots))
    path = save_machine(machine)
    say(f"wrote {path.relative_to(paths.repo_root())}")
    return machine


def _taskset_fields(taskset) -> dict:
    fields = taskset.model_dump()
    fields.pop("id", None)
    return fields


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prepare.py", description=__doc__)
    parser.add_argument(
        "--config", type=Path, default=Path("train.toml"), help="the train config (default train.toml)"
    )
    parser.add_argument(
        "--prime-rl", dest="prime_rl", default=None, help="path to a prime-rl checkout with its venv"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        prepare(args.config, args.prime_rl)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PrepareError as exc:
        print(f"prepare failed: {exc}", file=sys.stderr)
        return 1
    return 0
