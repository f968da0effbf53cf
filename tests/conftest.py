"""Shared test helpers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def write_resolved() -> Callable[[Any, Any, Path, int], Path]:
    """What the runner does before `backend.launch`: write `run_dir/resolved.json` from `backend.resolve`."""

    def write(backend: Any, cfg: Any, run_dir: Path, seed: int) -> Path:
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / "resolved.json"
        path.write_text(json.dumps(backend.resolve(cfg, run_dir, seed), indent=2))
        return path

    return write
