"""Finding prime-rl (a checkout with its own uv environment) and installing our packages into it.

prime-rl is an external install: its own uv environment, torch and vLLM pinned by it. `locate_prime_rl` finds
the checkout for a trial ($PRIME_RL_DIR, else the one prepare.py recorded in the machine file);
`install_environments` puts our tasksets and autorl itself into its environment without touching its pins.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.io import paths

SUPPORTED_COMMIT = "559b447"  # the prime-rl commit whose schema, logs and layout this package follows
SUPPORTED_VERSION = "v0.8.1.dev67"
NOT_FOUND = "prime-rl not found: pass --prime-rl PATH to prepare.py or set PRIME_RL_DIR"
# Pure-Python packages autorl.llm.eval needs that prime-rl's environment may lack. Installed with every
# package prime-rl already has pinned to its installed version, so nothing of prime-rl's changes.
EVAL_DEPS = ["math-verify", "tomlkit"]


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
    from autorl.io.machine import load_machine

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
