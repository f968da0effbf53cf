"""Where things live. Everything generated stays inside the repo, git-ignored: `git reset` loses nothing."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def repo_root() -> Path:
    """The project root; AUTORL_ROOT overrides it (tests run trials in temporary copies)."""
    return Path(os.environ.get("AUTORL_ROOT", REPO_ROOT)).resolve()


RECORDS_VAR = "AUTORL_RECORDS"


def records_root() -> Path:
    """Where the ledger, the run directories and the machine state live: the repo root, or AUTORL_RECORDS.
    `autorl swarm` runs each agent in its own git worktree (its config, its commits) with AUTORL_RECORDS set
    to the checkout it started from: one ledger, one runs/, one prepared machine for every agent."""
    return Path(os.environ.get(RECORDS_VAR) or repo_root()).resolve()


def root_problem() -> str | None:
    """Why the root cannot hold trials (AUTORL_ROOT set to a file or a missing path); None when it can."""
    root = repo_root()
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        named = f"AUTORL_ROOT={os.environ.get('AUTORL_ROOT')}: " if "AUTORL_ROOT" in os.environ else ""
        return f"{named}{root} {what} (it must be the project directory)"
    return None


def writable_dir_problem(path: Path) -> str | None:
    """Why the directory a trial writes into (runs/, .autorl/) cannot be used; None when it can.

    Creates nothing (a refused trial leaves no trace): an existing path must be a writable directory, a
    missing one needs its nearest existing parent to be a writable directory.
    """
    existing = path
    while not existing.exists() and not existing.is_symlink() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{path}: cannot create the directory: {existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "not writable" if existing == path else f"cannot be created ({existing} is not writable)"
        return f"{path}: {what}: a trial could not save its files there"
    return None


def state_dir() -> Path:
    """Machine file, built models, prepared data and caches (git-ignored)."""
    return records_root() / ".autorl"


def machine_file() -> Path:
    return state_dir() / "machine.json"


def models_dir() -> Path:
    return state_dir() / "models"


def cache_dir() -> Path:
    return state_dir() / "cache"


DATA_DIR_VAR = "AUTORL_DATA_DIR"  # a data directory outside the repo that taskset `data_path`s may point into


def data_roots() -> list[Path]:
    """Where taskset data paths may resolve: the repo, and the directory AUTORL_DATA_DIR names (if set)."""
    extra = os.environ.get(DATA_DIR_VAR, "").strip()
    return [repo_root(), *([Path(extra).expanduser().resolve()] if extra else [])]


def resolve_data_path(text: str) -> Path:
    """A taskset `data_path` as the training child reads it: `~` expanded, relative to the repo root."""
    return (repo_root() / Path(text).expanduser()).resolve()


def runs_dir() -> Path:
    return records_root() / "runs"


def run_config_file(run_id: str) -> Path:
    """The config a trial trained (runs/<run_id>/config.toml): what fidelity, confirm and the swarm re-use."""
    return runs_dir() / run_id / "config.toml"


def results_file() -> Path:
    return records_root() / "results.tsv"


def eval_spec_file() -> Path:
    """The fixed evaluation (harness-owned, part of the harness hash)."""
    return repo_root() / "eval.toml"
