"""What this machine has (CPUs, RAM, GPUs, prime-rl) and the backend that follows; the machine file."""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil
from pydantic import ConfigDict, TypeAdapter, ValidationError

from autorl.io import atomic, inputs, paths


@dataclass
class Gpu:
    index: int
    name: str
    memory_gb: float
    free_gb: float | None = None


@dataclass
class Machine:
    python: str
    platform: str
    torch: str | None
    cpus: int
    ram_gb: float
    gpus: list[Gpu] = field(default_factory=list)
    prime_rl: dict[str, Any] | None = None  # dir, python, rl, commit, version (autorl.llm.primerl.install)
    backend: str = "embedded"  # the backend `--backend auto` picks
    model_name: str | None = None  # the model prepared for train.toml (harness-owned from here on)
    model_path: str | None = None  # where its weights are (local dir)
    notes: list[str] = field(default_factory=list)
    # the slots the prepared backend plans for the prepared model: how many seeds run at once
    # (autorl.engine.slots)
    slots: list[dict[str, Any]] = field(default_factory=list)

    __pydantic_config__ = ConfigDict(extra="forbid")  # a key this version does not know: not its file

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json_data(cls, data: object) -> Machine:
        """The machine file's parsed JSON validated (types, keys) into a Machine; ValueError if not one."""
        try:
            return _MACHINE.validate_python(data)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"{where + ': ' if where else ''}{first['msg']}") from None


_MACHINE = TypeAdapter(Machine)


def nvidia_smi(query: str, fields: Sequence[str]) -> list[list[str]] | None:
    """`nvidia-smi --query-<query>=<fields>` as rows of stripped values (no CUDA context is created).

    query is `gpu` (one row per GPU) or `compute-apps` (one row per process holding GPU memory); None where
    nvidia-smi is absent or fails. The one place nvidia-smi is called.
    """
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-{query}={','.join(fields)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [[part.strip() for part in line.split(",")] for line in out.strip().splitlines() if line.strip()]


def detect_gpus() -> list[Gpu]:
    """GPUs via nvidia-smi when present, else via torch."""
    rows = nvidia_smi("gpu", ["index", "name", "memory.total", "memory.free"])
    if rows is not None:
        try:
            return [
                Gpu(int(idx), name, round(float(total) / 1024, 1), round(float(free) / 1024, 1))
                for idx, name, total, free in rows
            ]
        except ValueError:
            pass
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    gpus = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        gpus.append(Gpu(i, props.name, round(props.total_memory / 2**30, 1)))
    return gpus


def own_cpu_ids() -> list[int]:
    """The cores this process may run on (its CPU affinity; all of them where there is none)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def peak_rss_gb() -> float:
    """This process's peak resident memory so far, in GiB (the children's own figure in their metrics)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (1024**3 if sys.platform == "darwin" else 1024**2)


def cpu_ids(machine: Machine) -> list[int]:
    """The ids of the machine's cores, to pin seeds to: this process's CPU affinity when it has
    ``machine.cpus`` cores (the machine file was written here), else ``0..cpus-1`` (a described machine)."""
    own = own_cpu_ids()
    return own if len(own) == machine.cpus else list(range(machine.cpus))


def torch_version() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.__version__


def choose_backend(gpus: list[Gpu], prime_rl: dict[str, Any] | None) -> str:
    """prime-rl needs two GPUs (vLLM on GPU 0, trainer on GPU 1); everything else runs embedded."""
    return "prime-rl" if prime_rl is not None and len(gpus) >= 2 else "embedded"


def inspect(prime_rl: dict[str, Any] | None = None) -> Machine:
    gpus = detect_gpus()
    return Machine(
        python=sys.version.split()[0],
        platform=f"{platform.system()} {platform.machine()}",
        torch=torch_version(),
        cpus=len(own_cpu_ids()),
        ram_gb=round(psutil.virtual_memory().total / 2**30, 1),
        gpus=gpus,
        prime_rl=prime_rl,
        backend=choose_backend(gpus, prime_rl),
    )


class MachineFileError(ValueError):
    """.autorl/machine.json exists but cannot be read as a machine file."""


def load_machine(path: Path | None = None) -> Machine | None:
    """The prepared machine; None before prepare. A corrupt file raises MachineFileError (what to do)."""
    path = path or paths.machine_file()
    if not path.exists():
        return None
    try:
        return Machine.from_json_data(inputs.read_json(path))
    except (OSError, inputs.InputError, ValueError) as e:
        raise MachineFileError(
            f"{path}: not a machine file ({e}); delete it and run again (prepare writes it anew)"
        ) from None


def save_machine(machine: Machine, path: Path | None = None) -> Path:
    path = path or paths.machine_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, machine.to_json() + "\n")
    return path
