"""Where things live. Everything generated stays inside the repo, git-ignored: `git reset` loses nothing."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def repo_root() -> Path:
    """The project root; AUTORL_ROOT overrides it (tests run trials in temporary copies)."""
    return Path(os.environ.get("AUTORL_ROOT", REPO_ROOT)).resolve()


def state_dir() -> Path:
    """Machine file, built models, prepared data and caches (git-ignored)."""
    return repo_root() / ".autorl"


def machine_file() -> Path:
    return state_dir() / "machine.json"


def models_dir() -> Path:
    return state_dir() / "models"


def data_dir() -> Path:
    return state_dir() / "data"


def cache_dir() -> Path:
    return state_dir() / "cache"


def runs_dir() -> Path:
    return repo_root() / "runs"


def results_file() -> Path:
    return repo_root() / "results.tsv"


def eval_spec_file() -> Path:
    """The fixed evaluation (harness-owned, part of the harness hash)."""
    return repo_root() / "eval.toml"
